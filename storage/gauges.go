package storage

import (
	"context"
	"fmt"

	"bothy.dev/bothy/storage/engine"
)

// The numbers telemetry reads at each scrape of /metrics. Each is one cheap query on the read
// pool: the size from the engine's own bookkeeping, the consumers' cursors from their table of
// one row per agent, and the live runs from the index runs_agent_status; none counts messages
// or events.

// DatabaseBytes is the size of the database: SQLite's pages (the file less its WAL), or
// PostgreSQL's pg_database_size.
func (db *DB) DatabaseBytes(ctx context.Context) (int64, error) {
	q := `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`
	if db.dialect.Name() == engine.Postgres {
		q = `SELECT pg_database_size(current_database())`
	}
	var n int64
	if err := db.readDB.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("storage: database size: %w", err)
	}
	return n, nil
}

// ConsumerLag is how far the agents' durable consumers are behind head: the largest lag among
// them (head less the lowest acknowledged seq), and how many there are.
func (db *DB) ConsumerLag(ctx context.Context, head int64) (lag int64, consumers int, err error) {
	var low *int64
	if err := db.readDB.QueryRowContext(ctx, `SELECT MIN(acked_seq), COUNT(*) FROM agent_consumers`).Scan(&low, &consumers); err != nil {
		return 0, 0, fmt.Errorf("storage: consumer lag: %w", err)
	}
	if low == nil {
		return 0, 0, nil
	}
	return max(0, head-*low), consumers, nil
}

// LiveRuns counts the runs that have not ended, by status (queued, running, waiting_input); an
// ended run's status never changes, so its count is what the run events say, not a gauge.
func (db *DB) LiveRuns(ctx context.Context) (map[string]int64, error) {
	rows, err := db.readDB.QueryContext(ctx, `SELECT status, COUNT(*) FROM runs WHERE status IN ('queued', 'running', 'waiting_input') GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("storage: live runs: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{"queued": 0, "running": 0, "waiting_input": 0}
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			return nil, fmt.Errorf("storage: live runs: %w", err)
		}
		out[status] = n
	}
	return out, rows.Err()
}
