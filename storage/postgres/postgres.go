// Package postgres opens PostgreSQL for the store through pgx's database/sql driver: one write
// connection and a read pool, the Dialect (placeholders, row locks, per-transaction timeouts,
// error codes) and the LISTEN side of the wake-up (Listen). The repositories stay in package
// storage on database/sql; pgx is imported here and nowhere else in bothy.
//
// It holds nothing that SQLite shares, and it never migrates: see package migrate.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
)

// Options configure the two pools.
type Options struct {
	// URL is a libpq connection string (postgres://… or key=value). It may hold a password:
	// it never appears in an error or a log line of this package.
	URL string
	// MaxOpenConns bounds the read pool (default 8). The writer always has exactly one.
	MaxOpenConns int
	// StatementTimeout bounds every statement: per transaction (SET LOCAL, through Dialect) in
	// the writer, per session in the read pool. 0 leaves the server's setting.
	StatementTimeout time.Duration
	// LockTimeout bounds the wait for a lock in a write transaction (SET LOCAL, through
	// Dialect). 0 leaves the server's setting.
	LockTimeout time.Duration
	// IdleInTxTimeout ends a session that keeps a transaction open without work
	// (idle_in_transaction_session_timeout), so a stuck writer cannot hold the event_seq row.
	IdleInTxTimeout time.Duration
}

// DefaultReaders is the read pool's size when Options.MaxOpenConns is 0.
const DefaultReaders = 8

// Open connects the writer (exactly one connection, for storage's write path and the
// migrations) and the read pool (read only: default_transaction_read_only, like SQLite's
// query_only, so that a write outside a Unit of Work fails on both engines alike). It checks
// that both answer.
func Open(ctx context.Context, o Options) (writer, reader *sql.DB, err error) {
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = DefaultReaders
	}
	cfg, err := pgx.ParseConfig(o.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: the database URL: %w", err)
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "bothy"
	}
	// The writer's multi-statement round trips (ExecMulti) have pgx quote values into the SQL,
	// which is only sound, and which pgx only does, with standard strings.
	cfg.RuntimeParams["standard_conforming_strings"] = "on"
	if o.IdleInTxTimeout > 0 {
		cfg.RuntimeParams["idle_in_transaction_session_timeout"] = ms(o.IdleInTxTimeout)
	}
	wcfg := cfg.Copy()
	writer = stdlib.OpenDB(*wcfg)
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, nil, fmt.Errorf("postgres: connect: %w", err)
	}
	rcfg := cfg.Copy()
	rcfg.RuntimeParams["default_transaction_read_only"] = "on"
	if o.StatementTimeout > 0 {
		rcfg.RuntimeParams["statement_timeout"] = ms(o.StatementTimeout)
	}
	reader = stdlib.OpenDB(*rcfg)
	reader.SetMaxOpenConns(o.MaxOpenConns)
	reader.SetMaxIdleConns(o.MaxOpenConns)
	reader.SetConnMaxIdleTime(5 * time.Minute)
	if err := reader.PingContext(ctx); err != nil {
		writer.Close()
		reader.Close()
		return nil, nil, fmt.Errorf("postgres: connect the read pool: %w", err)
	}
	return writer, reader, nil
}

// ms renders d as a PostgreSQL duration in whole milliseconds (at least 1: 0 means "off").
func ms(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) }

// Dialect is PostgreSQL's side of storage.Dialect.
type Dialect struct {
	// StatementTimeout and LockTimeout are set with SET LOCAL in every write transaction.
	StatementTimeout, LockTimeout time.Duration
}

var _ storage.Dialect = Dialect{}

func (Dialect) Name() engine.Name { return engine.Postgres }

// BeginWrite opens a READ COMMITTED transaction and sets its timeouts in the same simple
// query: one round trip (the writer runs it unprepared; pgx sends a query without arguments
// over the simple protocol, which takes several statements).
func (d Dialect) BeginWrite() string {
	var sb strings.Builder
	sb.WriteString("BEGIN ISOLATION LEVEL READ COMMITTED")
	if d.StatementTimeout > 0 {
		sb.WriteString("; SET LOCAL statement_timeout = " + ms(d.StatementTimeout))
	}
	if d.LockTimeout > 0 {
		sb.WriteString("; SET LOCAL lock_timeout = " + ms(d.LockTimeout))
	}
	return sb.String()
}

func (Dialect) ForUpdate() string { return " FOR UPDATE" }

// IsUniqueViolation reports SQLSTATE 23505.
func (Dialect) IsUniqueViolation(err error) bool { return code(err) == "23505" }

// IsRetryable reports a deadlock (40P01), a lock timeout (55P03) and a serialization failure
// (40001): the transaction was rolled back and may run again whole.
func (Dialect) IsRetryable(err error) bool {
	switch code(err) {
	case "40P01", "55P03", "40001":
		return true
	}
	return false
}

func code(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// Rebind turns ? placeholders into $1, $2, … outside quoted strings, quoted identifiers and
// comments.
func (Dialect) Rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var sb strings.Builder
	sb.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) {
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c { // '' or "" inside the quotes
						j += 2
						continue
					}
					break
				}
				j++
			}
			end := min(j+1, len(q))
			sb.WriteString(q[i:end])
			i = end - 1
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				end = len(q) - i
			}
			sb.WriteString(q[i : i+end])
			i += end - 1
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				end = len(q) - i
			} else {
				end += 4
			}
			sb.WriteString(q[i : i+end])
			i += end - 1
		case c == '?':
			n++
			sb.WriteByte('$')
			sb.WriteString(strconv.Itoa(n))
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// ExecMulti runs q, which may hold several statements separated by semicolons, on conn in one
// round trip (the simple protocol; pgx quotes args into q on the client, and refuses to unless
// standard_conforming_strings is on). It returns the first column of the first row of the last
// statement that returned rows, as text, or "" if none did. The first failing statement ends
// the string; inside a transaction, the transaction is then aborted. storage's writer sends the
// statements around its Units of Work through it (pgx's native API, through conn.Raw).
func (Dialect) ExecMulti(ctx context.Context, conn *sql.Conn, q string, args ...any) (string, error) {
	var last string
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres: %T is not a pgx connection", dc)
		}
		if len(args) > 0 {
			_, err := c.Conn().Exec(ctx, q, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
			return err
		}
		results, err := c.Conn().PgConn().Exec(ctx, q).ReadAll()
		if err != nil {
			return err
		}
		for _, r := range results {
			if r.Err != nil {
				return r.Err
			}
			if len(r.Rows) > 0 && len(r.Rows[0]) > 0 {
				last = string(r.Rows[0][0])
			}
		}
		return nil
	})
	return last, err
}
