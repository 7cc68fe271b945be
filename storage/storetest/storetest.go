// Package storetest opens a migrated store for tests: a fresh SQLite file in t.TempDir().
// (PostgreSQL joins here when its adapter lands: the same tests then run on both engines.)
package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/sqlite"
)

// Open returns a migrated store on a temp SQLite file, closed at the end of the test.
func Open(tb testing.TB, o storage.Options) *storage.DB {
	tb.Helper()
	ctx := context.Background()
	w, r, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(tb.TempDir(), "bothy.db")})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := migrate.Up(ctx, w, "sqlite", nil); err != nil {
		tb.Fatal(err)
	}
	db, err := storage.Open(ctx, sqlite.Dialect{}, w, r, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
