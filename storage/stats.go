package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"bothy.dev/bothy/app/stats"
	"bothy.dev/bothy/storage/engine"
)

// StatsStore implements stats.Store: reads only, on the read pool.
type StatsStore struct{ db *DB }

var _ stats.Store = (*StatsStore)(nil)

// NewStatsStore returns the statistics repository on db.
func NewStatsStore(db *DB) *StatsStore { return &StatsStore{db: db} }

// countsQuery is one round trip. messages and runs are the tables that grow: their COUNT(*) is
// answered from an index (SQLite picks the smallest one); principals, spaces and channels stay
// small.
const countsQuery = `SELECT
	(SELECT COUNT(*) FROM principals WHERE kind = 'person'),
	(SELECT COUNT(*) FROM principals WHERE kind = 'agent'),
	(SELECT COUNT(*) FROM spaces),
	(SELECT COUNT(*) FROM channels WHERE kind = 'channel'),
	(SELECT COUNT(*) FROM messages),
	(SELECT COUNT(*) FROM runs)`

// Counts implements stats.Store.
func (s *StatsStore) Counts(ctx context.Context) (stats.Counts, error) {
	var c stats.Counts
	err := s.db.q(ctx).QueryRowContext(ctx, countsQuery).Scan(&c.People, &c.Agents, &c.Spaces, &c.Channels, &c.Messages, &c.Runs)
	return c, s.db.mapErr(err, "stats")
}

// hourlyQuery is one round trip of n pairs of range counts, [?, ?) on created_at for messages
// and for runs, each answered from the created_at index of migration 0009 without touching the
// table: a GROUP BY over the hour (substr of the fixed-width time) would sort every row of the
// day in a temporary b-tree instead, ten times slower at 10,000 messages.
func hourlyQuery(n int) string {
	if q, ok := hourlyQueries.Load(n); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n\t")
		}
		b.WriteString("(SELECT COUNT(*) FROM messages WHERE created_at >= ? AND created_at < ?), ")
		b.WriteString("(SELECT COUNT(*) FROM runs WHERE created_at >= ? AND created_at < ?)")
	}
	q, _ := hourlyQueries.LoadOrStore(n, b.String())
	return q.(string)
}

var hourlyQueries sync.Map // n → query

// Hourly implements stats.Store.
func (s *StatsStore) Hourly(ctx context.Context, first time.Time, n int) ([]stats.HourCount, error) {
	if n <= 0 {
		return nil, nil
	}
	args := make([]any, 0, 4*n)
	for i := range n {
		from, to := fmtTime(first.Add(time.Duration(i)*time.Hour)), fmtTime(first.Add(time.Duration(i+1)*time.Hour))
		args = append(args, from, to, from, to)
	}
	out := make([]stats.HourCount, n)
	dest := make([]any, 0, 2*n)
	for i := range out {
		dest = append(dest, &out[i].Messages, &out[i].Runs)
	}
	err := s.db.q(ctx).QueryRowContext(ctx, hourlyQuery(n), args...).Scan(dest...)
	if err != nil {
		return nil, s.db.mapErr(err, "stats")
	}
	return out, nil
}

// DatabaseSize implements stats.Store. SQLite: the sizes of the main database file and of its
// write-ahead log, found by PRAGMA database_list (an in-memory database has no file: 0).
// PostgreSQL: pg_database_size of the current database, which includes its indexes.
func (s *StatsStore) DatabaseSize(ctx context.Context) (stats.Database, error) {
	eng := s.db.dialect.Name()
	d := stats.Database{Engine: string(eng)}
	switch eng {
	case engine.SQLite:
		rows, err := s.db.readDB.QueryContext(ctx, `PRAGMA database_list`)
		if err != nil {
			return d, s.db.mapErr(err, "stats")
		}
		defer rows.Close()
		var file string
		for rows.Next() {
			var seq int
			var name, path string
			if err := rows.Scan(&seq, &name, &path); err != nil {
				return d, s.db.mapErr(err, "stats")
			}
			if name == "main" {
				file = path
			}
		}
		if err := rows.Err(); err != nil {
			return d, s.db.mapErr(err, "stats")
		}
		if file == "" {
			return d, nil
		}
		if d.Bytes, err = fileSize(file); err != nil {
			return d, err
		}
		if d.WAL, err = fileSize(file + "-wal"); err != nil {
			return d, err
		}
		return d, nil
	case engine.Postgres:
		err := s.db.q(ctx).QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&d.Bytes)
		return d, s.db.mapErr(err, "stats")
	default:
		panic("storage: unknown dialect " + d.Engine)
	}
}

// fileSize is the size of the file at path, 0 when there is none (a WAL after a checkpoint that
// truncated it, or before the first write).
func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
