// Package sqlite opens the embedded SQLite database: the pure-Go driver (modernc.org/sqlite,
// chosen by bench/driver), the pragmas, the single write connection and the read pool, and the
// mapping of SQLite's error codes. It holds nothing that PostgreSQL shares: the repositories are
// in package storage.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"bothy.dev/bothy/storage/engine"
)

// Options configure the database.
type Options struct {
	Path string
	// Synchronous is FULL (default: an acknowledged write survives power loss) or NORMAL.
	Synchronous string
	BusyTimeout time.Duration
	Readers     int
}

// Open opens the database at o.Path: one write connection and a pool of read connections,
// both in WAL mode with foreign keys on.
func Open(ctx context.Context, o Options) (writer, reader *sql.DB, err error) {
	if o.Synchronous == "" {
		o.Synchronous = "FULL"
	}
	switch strings.ToUpper(o.Synchronous) {
	case "FULL", "NORMAL", "EXTRA":
	default:
		return nil, nil, fmt.Errorf("sqlite: synchronous must be FULL, NORMAL or EXTRA, not %q", o.Synchronous)
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	common := []string{
		fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()),
		"foreign_keys(1)",
		"synchronous(" + strings.ToUpper(o.Synchronous) + ")",
		"temp_store(MEMORY)",
	}
	dsn := func(extra ...string) string {
		q := url.Values{}
		for _, p := range append(append([]string{}, common...), extra...) {
			q.Add("_pragma", p)
		}
		return fileURI(o.Path) + "?" + q.Encode()
	}
	writer, err = sql.Open("sqlite", dsn("journal_mode(WAL)", "wal_autocheckpoint(0)", "journal_size_limit(67108864)"))
	if err != nil {
		return nil, nil, err
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, nil, fmt.Errorf("sqlite: open %s: %w", o.Path, err)
	}
	reader, err = sql.Open("sqlite", dsn("query_only(1)"))
	if err != nil {
		writer.Close()
		return nil, nil, err
	}
	reader.SetMaxOpenConns(o.Readers)
	reader.SetMaxIdleConns(o.Readers)
	reader.SetConnMaxIdleTime(0)
	return writer, reader, nil
}

// Dialect is SQLite's side of storage.Dialect.
type Dialect struct{}

func (Dialect) Name() engine.Name      { return engine.SQLite }
func (Dialect) Rebind(q string) string { return q }
func (Dialect) BeginWrite() string     { return "BEGIN IMMEDIATE" }
func (Dialect) ForUpdate() string      { return "" }
func (Dialect) IsUniqueViolation(err error) bool {
	var e *sqlite.Error
	if errors.As(err, &e) {
		c := e.Code()
		return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// IsRetryable reports SQLITE_BUSY and SQLITE_LOCKED: another process holds the database.
func (Dialect) IsRetryable(err error) bool {
	var e *sqlite.Error
	if errors.As(err, &e) {
		c := e.Code() & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return false
}

// fileURI is the file: URI of path. SQLite reads ? as the start of the query and # as that of a
// fragment, and decodes %HH, so a path holding one of them (a directory named "run#2") must have
// them escaped, or the driver opens another file.
func fileURI(path string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}
