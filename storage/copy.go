package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"bothy.dev/bothy/storage/engine"
)

// CopyTables is every table of the schema that an instance's data lives in, in an order in
// which each table comes after the tables its foreign keys point to (runs after messages, for
// its trigger message; messages.run_id has no foreign key, so the two make no cycle).
// schema_migrations is not in it: each database keeps its own. A migration that adds a table
// adds it here too; Copy refuses a source with a table it does not know, so a forgotten one
// cannot be left behind.
var CopyTables = []string{
	"instance", "sequence_counters", "principals", "local_credentials", "auth_sessions", "api_tokens", "agents",
	"agent_commands", "agent_budgets", "agent_usage",
	"spaces", "channels", "dms", "threads", "grants", "messages", "runs", "run_output", "message_revisions", "mentions", "reactions",
	"message_pins", "interactions", "read_states", "thread_subscriptions", "notification_levels", "log_cursors",
	"event_log", "idempotency_keys", "gateway_presence", "agent_consumers", "signing_keys",
	"push_subscriptions", "push_outbox", "vapid_keys",
	"approvals", "approval_approvers",
	"files", "uploads", "upload_parts",
	"stat_totals", "stat_hours",
	// The job queue (storage/jobs): pending jobs move with the instance. Its times are text on
	// SQLite and timestamptz on PostgreSQL; PostgreSQL reads goqite's fixed-width UTC text.
	"goqite",
}

// seededTables hold rows that the migrations insert (the instance row, the counters, the totals).
// On the target they are replaced by the source's rows; every other table must be empty.
var seededTables = map[string]bool{"instance": true, "sequence_counters": true, "stat_totals": true}

// Copy refusals and failures. The command line names the table from the wrapping message.
var (
	// ErrTargetNotEmpty: the target holds an instance already; Copy changed nothing.
	ErrTargetNotEmpty = errors.New("the target database is not empty")
	// ErrSchemaMismatch: the two databases do not have the same tables and columns (one of them
	// is not migrated to this binary's version); Copy changed nothing.
	ErrSchemaMismatch = errors.New("the source and target schemas differ")
	// ErrSourceChanged: something committed to the source while Copy read it (a server still
	// running on it); Copy rolled the target back.
	ErrSourceChanged = errors.New("the source database was written during the copy")
	// ErrCopyMismatch: a table's row count or the head seq differs between the two sides
	// after the copy.
	ErrCopyMismatch = errors.New("the copy does not match the source")
)

// CopyOptions tune Copy.
type CopyOptions struct {
	// BatchRows is the number of rows per multi-row INSERT; 0 means 500.
	BatchRows int
	// Progress, if set, is called after each table (done true) and every 100 batches of a
	// large one (done false).
	Progress func(p CopyProgress)
}

// CopyProgress is where Copy is.
type CopyProgress struct {
	Table        string
	Copied, Rows int64 // rows copied so far, rows the table holds in the source
	Done         bool
	Elapsed      time.Duration // since the table's copy began
}

// CopyReport is what Copy copied and verified.
type CopyReport struct {
	// Rows is the row count of every table, the same on both sides.
	Rows map[string]int64
	// Head is the highest seq of the event log (max(seq) and the event_seq counter), the same
	// on both sides.
	Head int64
}

// Copy copies every table of CopyTables from src to dst, keeping every value (ids, seq, times),
// and verifies that both sides then hold the same row counts and the same head seq.
//
// src is read in one transaction on one connection, so the copy is a consistent snapshot; on
// SQLite, a commit to src by another connection during the copy (a server still running on the
// file) is detected and the copy rolled back (ErrSourceChanged). dst must be migrated and hold no
// instance yet: every table other than the seeded instance and counters rows must be empty
// (ErrTargetNotEmpty). All writes to dst happen in one transaction, in multi-row INSERTs of
// BatchRows rows, and are verified before it commits: on any error dst is left as it was. The
// counts and the head are read again after the commit.
//
// src and dst are plain database/sql handles with their dialects; queries use ? placeholders
// rebound for dst. dst's connection should allow statements that insert BatchRows rows.
func Copy(ctx context.Context, src *sql.DB, srcDialect Dialect, dst *sql.DB, dstDialect Dialect, o CopyOptions) (*CopyReport, error) {
	if o.BatchRows <= 0 {
		o.BatchRows = 500
	}
	if o.Progress == nil {
		o.Progress = func(CopyProgress) {}
	}
	sconn, err := src.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy: source: %w", err)
	}
	defer sconn.Close()
	before, err := sourceVersion(ctx, sconn, srcDialect)
	if err != nil {
		return nil, err
	}
	stx, err := sconn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("copy: source: begin: %w", err)
	}
	defer stx.Rollback()

	srcTables, err := listTables(ctx, stx, srcDialect)
	if err != nil {
		return nil, fmt.Errorf("copy: source: %w", err)
	}
	for _, t := range srcTables {
		if !slices.Contains(CopyTables, t) {
			return nil, fmt.Errorf("%w: the source has table %s, which this copy does not know", ErrSchemaMismatch, t)
		}
	}
	srcCounts := map[string]int64{}
	for _, t := range CopyTables {
		if !slices.Contains(srcTables, t) {
			return nil, fmt.Errorf("%w: the source has no table %s (is it migrated to this version?)", ErrSchemaMismatch, t)
		}
		if srcCounts[t], err = count(ctx, stx, srcDialect, t); err != nil {
			return nil, fmt.Errorf("copy: source: %w", err)
		}
	}
	srcHead, err := heads(ctx, stx, srcDialect)
	if err != nil {
		return nil, fmt.Errorf("copy: source: %w", err)
	}
	if srcHead.max != srcHead.counter {
		return nil, fmt.Errorf("%w: in the source, event_log's max(seq) is %d but the event_seq counter is %d", ErrCopyMismatch, srcHead.max, srcHead.counter)
	}

	dtx, err := dst.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("copy: target: begin: %w", err)
	}
	defer dtx.Rollback()
	if err := checkEmpty(ctx, dtx, dstDialect); err != nil {
		return nil, err
	}
	for _, t := range CopyTables {
		if err := copyTable(ctx, stx, srcDialect, dtx, dstDialect, t, srcCounts[t], o); err != nil {
			return nil, err
		}
	}
	// The search index is each engine's own (storage/search_copy.go): its rows are read in the
	// terms both share and written as the target keeps them.
	if err := copySearchIndex(ctx, stx, srcDialect, dtx, dstDialect, o); err != nil {
		return nil, err
	}
	if err := verify(ctx, dtx, dstDialect, srcCounts, srcHead.max); err != nil {
		return nil, err
	}
	if err := stx.Rollback(); err != nil {
		return nil, fmt.Errorf("copy: source: end the read: %w", err)
	}
	after, err := sourceVersion(ctx, sconn, srcDialect)
	if err != nil {
		return nil, err
	}
	if after != before {
		return nil, fmt.Errorf("%w: stop the server that uses it, then copy again (the target was left as it was)", ErrSourceChanged)
	}
	if err := dtx.Commit(); err != nil {
		return nil, fmt.Errorf("copy: target: commit: %w", err)
	}
	if err := verify(ctx, dst, dstDialect, srcCounts, srcHead.max); err != nil {
		return nil, err
	}
	return &CopyReport{Rows: srcCounts, Head: srcHead.max}, nil
}

// sourceVersion is a value that changes when another connection commits to the source. On
// SQLite it is PRAGMA data_version of conn; engines without such a thing return 0 (the copy still
// reads one snapshot, but cannot tell whether the source moved on).
func sourceVersion(ctx context.Context, conn *sql.Conn, d Dialect) (int64, error) {
	switch d.Name() {
	case engine.SQLite:
		var v int64
		if err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
			return 0, fmt.Errorf("copy: source: data_version: %w", err)
		}
		return v, nil
	case engine.Postgres:
		return 0, nil
	default:
		panic("storage: unknown dialect " + string(d.Name()))
	}
}

type readQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// listTables lists the tables of the schema other than schema_migrations.
func listTables(ctx context.Context, q readQuerier, d Dialect) ([]string, error) {
	var query string
	switch d.Name() {
	case engine.SQLite:
		query = `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`
	case engine.Postgres:
		query = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	default:
		panic("storage: unknown dialect " + string(d.Name()))
	}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		if name != "schema_migrations" && !isSearchTable(name) {
			out = append(out, name)
		}
	}
	return out, rows.Err()
}

// columns returns the column names of table in the order SELECT * gives them.
func columns(ctx context.Context, q readQuerier, table string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT * FROM "+table+" WHERE 1 = 0")
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	return rows.Columns()
}

func count(ctx context.Context, q readQuerier, d Dialect, table string) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, d.Rebind("SELECT COUNT(*) FROM "+table)).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", table, err)
	}
	return n, nil
}

type head struct{ max, counter int64 }

func heads(ctx context.Context, q readQuerier, d Dialect) (head, error) {
	var h head
	if err := q.QueryRowContext(ctx, d.Rebind(`SELECT COALESCE(MAX(seq), 0) FROM event_log`)).Scan(&h.max); err != nil {
		return h, fmt.Errorf("max(seq) of event_log: %w", err)
	}
	if err := q.QueryRowContext(ctx, d.Rebind(`SELECT value FROM sequence_counters WHERE name = ?`), "event_seq").Scan(&h.counter); err != nil {
		return h, fmt.Errorf("event_seq counter: %w", err)
	}
	return h, nil
}

// checkEmpty refuses a target that holds anything but the rows the migrations seed, or whose
// event_seq counter has moved.
func checkEmpty(ctx context.Context, q readQuerier, d Dialect) error {
	tables, err := listTables(ctx, q, d)
	if err != nil {
		return fmt.Errorf("copy: target: %w", err)
	}
	for _, t := range CopyTables {
		if !slices.Contains(tables, t) {
			return fmt.Errorf("%w: the target has no table %s (is it migrated?)", ErrSchemaMismatch, t)
		}
		if seededTables[t] {
			continue
		}
		var one int
		err := q.QueryRowContext(ctx, "SELECT 1 FROM "+t+" LIMIT 1").Scan(&one)
		switch {
		case err == nil:
			return fmt.Errorf("%w: table %s holds rows", ErrTargetNotEmpty, t)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("copy: target: %s: %w", t, err)
		}
	}
	h, err := heads(ctx, q, d)
	if err != nil {
		return fmt.Errorf("copy: target: %w", err)
	}
	if h.counter != 0 {
		return fmt.Errorf("%w: its event_seq counter is at %d", ErrTargetNotEmpty, h.counter)
	}
	return nil
}

type execQuerier interface {
	readQuerier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// copyTable streams table from the source snapshot into the target transaction.
func copyTable(ctx context.Context, stx *sql.Tx, sd Dialect, dtx execQuerier, dd Dialect, table string, rows int64, o CopyOptions) error {
	start := time.Now()
	cols, err := columns(ctx, stx, table)
	if err != nil {
		return fmt.Errorf("copy: source: %w", err)
	}
	dcols, err := columns(ctx, dtx, table)
	if err != nil {
		return fmt.Errorf("copy: target: %w", err)
	}
	if !sameSet(cols, dcols) {
		return fmt.Errorf("%w: table %s has columns (%s) in the source and (%s) in the target",
			ErrSchemaMismatch, table, strings.Join(cols, ", "), strings.Join(dcols, ", "))
	}
	if seededTables[table] {
		if _, err := dtx.ExecContext(ctx, "DELETE FROM "+table); err != nil {
			return fmt.Errorf("copy: target: clear %s: %w", table, err)
		}
	}

	src, err := stx.QueryContext(ctx, sd.Rebind("SELECT "+strings.Join(cols, ", ")+" FROM "+table))
	if err != nil {
		return fmt.Errorf("copy: source: read %s: %w", table, err)
	}
	defer src.Close()

	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	insertPrefix := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES "
	fullBatch := dd.Rebind(insertPrefix + strings.TrimSuffix(strings.Repeat(row+", ", o.BatchRows), ", "))
	args := make([]any, 0, o.BatchRows*len(cols))
	var copied int64
	batches := 0
	flush := func() error {
		n := len(args) / len(cols)
		if n == 0 {
			return nil
		}
		q := fullBatch
		if n < o.BatchRows {
			q = dd.Rebind(insertPrefix + strings.TrimSuffix(strings.Repeat(row+", ", n), ", "))
		}
		if _, err := dtx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("copy: target: insert into %s (rows %d to %d): %w", table, copied+1, copied+int64(n), err)
		}
		copied += int64(n)
		args = args[:0]
		batches++
		if batches%100 == 0 {
			o.Progress(CopyProgress{Table: table, Copied: copied, Rows: rows, Elapsed: time.Since(start)})
		}
		return nil
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for src.Next() {
		if err := src.Scan(ptrs...); err != nil {
			return fmt.Errorf("copy: source: read %s: %w", table, err)
		}
		for _, v := range vals {
			// A driver may hand out a byte slice it reuses on the next row.
			if b, ok := v.([]byte); ok {
				v = slices.Clone(b)
			}
			args = append(args, v)
		}
		if len(args) == cap(args) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := src.Err(); err != nil {
		return fmt.Errorf("copy: source: read %s: %w", table, err)
	}
	if err := flush(); err != nil {
		return err
	}
	o.Progress(CopyProgress{Table: table, Copied: copied, Rows: rows, Done: true, Elapsed: time.Since(start)})
	return nil
}

// verify compares the target's row counts and head with the source's.
func verify(ctx context.Context, q readQuerier, d Dialect, want map[string]int64, head int64) error {
	for _, t := range CopyTables {
		n, err := count(ctx, q, d, t)
		if err != nil {
			return fmt.Errorf("copy: verify: %w", err)
		}
		if n != want[t] {
			return fmt.Errorf("%w: table %s has %d rows in the source and %d in the target", ErrCopyMismatch, t, want[t], n)
		}
	}
	h, err := heads(ctx, q, d)
	if err != nil {
		return fmt.Errorf("copy: verify: %w", err)
	}
	if h.max != head || h.counter != head {
		return fmt.Errorf("%w: table event_log: the head seq is %d in the source, and max(seq) %d and the event_seq counter %d in the target",
			ErrCopyMismatch, head, h.max, h.counter)
	}
	return nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}
