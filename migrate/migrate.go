// Package migrate holds the embedded schema migrations, one folder per engine with the same
// version numbers, and the runner that applies them. Migrations only move forward; each file
// runs in one transaction and is recorded in schema_migrations. It never reads migrations from
// the working directory.
package migrate

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"bothy.dev/bothy/storage/engine"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// Migration is one embedded migration file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Status is a migration with the time it was applied, if it was.
type Status struct {
	Migration
	AppliedAt *time.Time
}

// List returns the migrations of engine ("sqlite" or "postgres") in version order.
func List(eng engine.Name) ([]Migration, error) { return list(files, eng) }

func list(fsys fs.FS, eng engine.Name) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, string(eng))
	if err != nil {
		return nil, fmt.Errorf("migrate: no migrations for engine %q", eng)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migrate: bad file name %s", name)
		}
		b, err := fs.ReadFile(fsys, path.Join(string(eng), name))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: rest, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := range out {
		if out[i].Version != i+1 {
			return nil, fmt.Errorf("migrate: versions of %s are not 1..n: %d at position %d", eng, out[i].Version, i+1)
		}
	}
	return out, nil
}

const createTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	applied_at TEXT NOT NULL
)`

// lockKey is the PostgreSQL advisory lock that Up holds for its whole run, so that two
// `bothy migrate up` (or two nodes) never apply the same migration twice. It is the ASCII of
// "bothyboo" and must never change: a new value would let two versions migrate at once.
const lockKey int64 = 0x626f746879626f6f

// querier is what the runner reads through: a pool (StatusOf, Pending) or its one connection.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// StatusOf lists every migration of engine and when it was applied. It only reads.
func StatusOf(ctx context.Context, db *sql.DB, eng engine.Name) ([]Status, error) {
	ms, err := list(files, eng)
	if err != nil {
		return nil, err
	}
	applied, err := appliedVersions(ctx, db, eng)
	if err != nil {
		return nil, err
	}
	out := make([]Status, len(ms))
	for i, m := range ms {
		out[i].Migration = m
		if t, ok := applied[m.Version]; ok {
			t := t
			out[i].AppliedAt = &t
		}
	}
	return out, nil
}

// Pending returns the migrations of engine that the database has not applied, in order. It
// only reads (a read-only pool will do): serve on PostgreSQL refuses to start while it is not
// empty and points to `bothy migrate up`. A database with migrations newer than this binary
// has nothing pending; Up refuses it.
func Pending(ctx context.Context, db *sql.DB, eng engine.Name) ([]Migration, error) {
	ms, err := list(files, eng)
	if err != nil {
		return nil, err
	}
	applied, err := appliedVersions(ctx, db, eng)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, m := range ms {
		if _, ok := applied[m.Version]; !ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// The SQL that differs between the engines; one switch each, panicking on an unknown engine
// (list has refused it before: it has no folder).
func tableExistsQuery(eng engine.Name) string {
	switch eng {
	case engine.SQLite:
		return `SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`
	case engine.Postgres:
		return `SELECT to_regclass('schema_migrations') IS NOT NULL`
	default:
		panic("migrate: unknown engine " + string(eng))
	}
}

func beginStatement(eng engine.Name) string {
	switch eng {
	case engine.SQLite:
		return "BEGIN IMMEDIATE"
	case engine.Postgres:
		return "BEGIN"
	default:
		panic("migrate: unknown engine " + string(eng))
	}
}

func recordStatement(eng engine.Name) string {
	switch eng {
	case engine.SQLite:
		return `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`
	case engine.Postgres:
		return `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`
	default:
		panic("migrate: unknown engine " + string(eng))
	}
}

func appliedVersions(ctx context.Context, db querier, eng engine.Name) (map[int]time.Time, error) {
	var exists bool
	if err := db.QueryRowContext(ctx, tableExistsQuery(eng)).Scan(&exists); err != nil {
		return nil, fmt.Errorf("migrate: read schema: %w", err)
	}
	out := map[int]time.Time{}
	if !exists {
		return out, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT version, applied_at FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		var at string
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		t, _ := time.Parse(time.RFC3339Nano, at)
		out[v] = t
	}
	return out, rows.Err()
}

// Up applies the pending migrations of engine in order, each in its own transaction, and calls
// applied after each one. It returns the migrations it applied. It runs on one connection of
// db; on PostgreSQL it holds an advisory lock on it for the whole run, so a second Up waits and
// then finds nothing left to do.
func Up(ctx context.Context, db *sql.DB, eng engine.Name, applied func(Migration)) ([]Migration, error) {
	return up(ctx, db, files, eng, applied)
}

func up(ctx context.Context, db *sql.DB, fsys fs.FS, eng engine.Name, applied func(Migration)) ([]Migration, error) {
	ms, err := list(fsys, eng)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close()
	if eng == engine.Postgres {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
			return nil, fmt.Errorf("migrate: take the migration lock: %w", err)
		}
		defer func() {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lockKey)
		}()
	}
	if _, err := conn.ExecContext(ctx, createTable); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	done, err := appliedVersions(ctx, conn, eng)
	if err != nil {
		return nil, err
	}
	for v := range done {
		if v > len(ms) {
			return nil, fmt.Errorf("migrate: the database has migration %d, newer than this binary knows (%d): run a newer bothy", v, len(ms))
		}
	}
	var out []Migration
	for _, m := range ms {
		if _, ok := done[m.Version]; ok {
			continue
		}
		if err := apply(ctx, conn, eng, m); err != nil {
			return out, err
		}
		out = append(out, m)
		if applied != nil {
			applied(m)
		}
	}
	return out, nil
}

// apply runs one migration file and records it, in one transaction. On PostgreSQL the file goes
// as one simple query (pgx sends a query without arguments that way), which may hold several
// statements.
func apply(ctx context.Context, conn *sql.Conn, eng engine.Name, m Migration) error {
	if _, err := conn.ExecContext(ctx, beginStatement(eng)); err != nil {
		return fmt.Errorf("migrate: %04d_%s: begin: %w", m.Version, m.Name, err)
	}
	fail := func(err error) error {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return fmt.Errorf("migrate: %04d_%s: %w", m.Version, m.Name, err)
	}
	if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
		return fail(err)
	}
	if _, err := conn.ExecContext(ctx, recordStatement(eng), m.Version, m.Name, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return fail(err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	return nil
}
