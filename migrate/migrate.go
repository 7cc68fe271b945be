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
)

//go:embed sqlite/*.sql
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

// List returns the migrations of engine ("sqlite") in version order.
func List(engine string) ([]Migration, error) { return list(files, engine) }

func list(fsys fs.FS, engine string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, engine)
	if err != nil {
		return nil, fmt.Errorf("migrate: no migrations for engine %q", engine)
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
		b, err := fs.ReadFile(fsys, path.Join(engine, name))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: rest, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := range out {
		if out[i].Version != i+1 {
			return nil, fmt.Errorf("migrate: versions of %s are not 1..n: %d at position %d", engine, out[i].Version, i+1)
		}
	}
	return out, nil
}

const createTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	applied_at TEXT NOT NULL
)`

// StatusOf lists every migration of engine and when it was applied. It only reads.
func StatusOf(ctx context.Context, db *sql.DB, engine string) ([]Status, error) {
	ms, err := list(files, engine)
	if err != nil {
		return nil, err
	}
	applied, err := appliedVersions(ctx, db)
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

func appliedVersions(ctx context.Context, db *sql.DB) (map[int]time.Time, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	if err != nil {
		return nil, fmt.Errorf("migrate: read schema: %w", err)
	}
	out := map[int]time.Time{}
	if n == 0 {
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
// applied after each one. It returns the migrations it applied.
func Up(ctx context.Context, db *sql.DB, engine string, applied func(Migration)) ([]Migration, error) {
	return up(ctx, db, files, engine, applied)
}

func up(ctx context.Context, db *sql.DB, fsys fs.FS, engine string, applied func(Migration)) ([]Migration, error) {
	ms, err := list(fsys, engine)
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, createTable); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	done, err := appliedVersions(ctx, db)
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
		if err := apply(ctx, db, m); err != nil {
			return out, err
		}
		out = append(out, m)
		if applied != nil {
			applied(m)
		}
	}
	return out, nil
}

func apply(ctx context.Context, db *sql.DB, m Migration) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migrate: %04d_%s: begin: %w", m.Version, m.Name, err)
	}
	fail := func(err error) error {
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		return fmt.Errorf("migrate: %04d_%s: %w", m.Version, m.Name, err)
	}
	if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
		return fail(err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return fail(err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	return nil
}
