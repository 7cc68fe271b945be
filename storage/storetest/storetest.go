// Package storetest runs storage's tests on both engines: each test body once on
// SQLite, on a fresh file in t.TempDir(), and once on PostgreSQL, in a database of its own made
// from a migrated template and dropped in t.Cleanup. The PostgreSQL half is skipped only when
// BOTHY_TEST_POSTGRES_URL is unset; CI always sets it (.ci/pg).
//
// It is for tests only.
package storetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/sqlite"
	"bothy.dev/bothy/storage/storetest/pgdb"
)

// Engine is one SQL engine the store runs on.
type Engine struct {
	Name string // "sqlite" or "postgres"
}

var (
	SQLite   = Engine{Name: "sqlite"}
	Postgres = Engine{Name: "postgres"}
)

// Engines lists both engines. Postgres's methods skip the test when the cluster URL is unset.
func Engines() []Engine { return []Engine{SQLite, Postgres} }

// Run runs body as the subtests "sqlite" and "postgres".
func Run(t *testing.T, body func(t *testing.T, e Engine)) {
	t.Helper()
	for _, e := range Engines() {
		t.Run(e.Name, func(t *testing.T) {
			if e == Postgres {
				pgdb.URL(t)
			}
			body(t, e)
		})
	}
}

// Bench runs body as the sub-benchmarks "sqlite" and "postgres".
func Bench(b *testing.B, body func(b *testing.B, e Engine)) {
	b.Helper()
	for _, e := range Engines() {
		b.Run(e.Name, func(b *testing.B) {
			if e == Postgres {
				pgdb.URL(b)
			}
			body(b, e)
		})
	}
}

// Each runs body with a fresh store (default options) on each engine.
func Each(t *testing.T, body func(t *testing.T, db *storage.DB)) {
	t.Helper()
	Run(t, func(t *testing.T, e Engine) { body(t, e.Open(t, storage.Options{})) })
}

// Open returns a fresh migrated store on e, closed at the end of the test.
func (e Engine) Open(tb testing.TB, o storage.Options) *storage.DB {
	tb.Helper()
	return e.OpenAt(tb, e.NewDatabase(tb), o)
}

// NewDatabase makes a fresh migrated database on e and returns where it is: a file path for
// SQLite, a URL for PostgreSQL. Several stores opened on it with OpenAt are several processes
// (SQLite) or nodes (PostgreSQL) sharing one database.
func (e Engine) NewDatabase(tb testing.TB) string {
	tb.Helper()
	switch e {
	case SQLite:
		return filepath.Join(tb.TempDir(), "bothy.db")
	case Postgres:
		return pgdb.Create(tb, template(tb))
	default:
		panic("storetest: unknown engine " + e.Name)
	}
}

// OpenAt opens a store on a database made by NewDatabase, closed at the end of the test.
// SQLite's file is migrated here (the migrations are idempotent); PostgreSQL's came migrated.
func (e Engine) OpenAt(tb testing.TB, where string, o storage.Options) *storage.DB {
	tb.Helper()
	ctx := context.Background()
	var db *storage.DB
	switch e {
	case SQLite:
		w, r, err := sqlite.Open(ctx, sqlite.Options{Path: where})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := migrate.Up(ctx, w, "sqlite", nil); err != nil {
			tb.Fatal(err)
		}
		if db, err = storage.Open(ctx, sqlite.Dialect{}, w, r, o); err != nil {
			tb.Fatal(err)
		}
	case Postgres:
		return OpenPostgresAt(tb, where, PostgresTimeouts, o)
	default:
		panic("storetest: unknown engine " + e.Name)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// PostgresTimeouts is the dialect the PostgreSQL stores of the tests run with: the configuration's
// defaults (database.statement_timeout 5 s, database.lock_timeout 2 s).
var PostgresTimeouts = postgres.Dialect{StatementTimeout: 5 * time.Second, LockTimeout: 2 * time.Second}

// OpenPostgresAt opens a store on the PostgreSQL database at url with dialect d (a test of the
// timeouts sets its own), closed at the end of the test.
func OpenPostgresAt(tb testing.TB, url string, d postgres.Dialect, o storage.Options) *storage.DB {
	tb.Helper()
	ctx := context.Background()
	w, r, err := postgres.Open(ctx, postgres.Options{URL: url, MaxOpenConns: 4, IdleInTxTimeout: 10 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	db, err := storage.Open(ctx, d, w, r, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// Open returns a migrated store on a temp SQLite file, closed at the end of the test (for the
// tests outside storage that need a store and do not test it).
func Open(tb testing.TB, o storage.Options) *storage.DB {
	tb.Helper()
	return SQLite.OpenAt(tb, migratedSQLite(tb), o)
}

var (
	tplOnce sync.Once
	tplName string
	tplErr  error
)

// template returns the migrated template database of this binary's migrations. Its name holds
// a hash of the migrations, so every test binary of a run (and of later runs on the same
// cluster) shares it, and a changed migration makes a new one. It is built under an advisory
// lock as a side database and renamed when complete, so that no test copies a half one.
func template(tb testing.TB) string {
	tb.Helper()
	tplOnce.Do(func() { tplName, tplErr = buildTemplate(pgdb.Admin(tb), pgdb.URL(tb)) })
	if tplErr != nil {
		tb.Fatalf("storetest: template database: %v", tplErr)
	}
	return tplName
}

// templateLock is the advisory lock key under which test binaries build the template.
const templateLock = 0x626f746879747374 // "bothytst"

func buildTemplate(admin *sql.DB, url string) (string, error) {
	ctx := context.Background()
	ms, err := migrate.List("postgres")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%d %s\n%s\n", m.Version, m.Name, m.SQL)
	}
	name := "bothy_tpl_" + hex.EncodeToString(h.Sum(nil))[:16]
	conn, err := admin.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(templateLock)); err != nil {
		return "", err
	}
	defer conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, int64(templateLock))
	if ok, err := pgdb.Exists(ctx, admin, name); err != nil || ok {
		return name, err
	}
	side := name + "_new"
	if err := pgdb.Drop(ctx, admin, side); err != nil { // a run that died half way
		return "", err
	}
	if err := pgdb.CreateDatabase(ctx, admin, side, ""); err != nil {
		return "", err
	}
	sideURL, err := pgdb.WithDatabase(url, side)
	if err != nil {
		return "", err
	}
	w, r, err := postgres.Open(ctx, postgres.Options{URL: sideURL, MaxOpenConns: 1})
	if err != nil {
		return "", err
	}
	_, err = migrate.Up(ctx, w, "postgres", nil)
	w.Close()
	r.Close()
	if err != nil {
		return "", err
	}
	return name, pgdb.Rename(ctx, admin, side, name)
}
