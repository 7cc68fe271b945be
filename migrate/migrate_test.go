package migrate

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"bothy.dev/bothy/storage/sqlite"
)

func openDB(t *testing.T) (dbPath string) {
	t.Helper()
	return filepath.Join(t.TempDir(), "bothy.db")
}

func TestUp(t *testing.T) {
	ctx := context.Background()

	t.Run("applies every embedded migration once and then nothing", func(t *testing.T) {
		w, r, err := sqlite.Open(ctx, sqlite.Options{Path: openDB(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		defer r.Close()
		before, err := StatusOf(ctx, r, "sqlite")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range before {
			if s.AppliedAt != nil {
				t.Fatalf("%d applied before Up", s.Version)
			}
		}
		var logged []int
		applied, err := Up(ctx, w, "sqlite", func(m Migration) { logged = append(logged, m.Version) })
		if err != nil {
			t.Fatal(err)
		}
		all, _ := List("sqlite")
		if len(applied) != len(all) || len(logged) != len(all) {
			t.Fatalf("applied %d, logged %d, want %d", len(applied), len(logged), len(all))
		}
		again, err := Up(ctx, w, "sqlite", nil)
		if err != nil || len(again) != 0 {
			t.Fatalf("second Up applied %d (%v)", len(again), err)
		}
		after, _ := StatusOf(ctx, r, "sqlite")
		for _, s := range after {
			if s.AppliedAt == nil {
				t.Fatalf("%d still pending", s.Version)
			}
		}
	})

	t.Run("rolls a failing migration back whole and keeps the ones before it", func(t *testing.T) {
		w, r, err := sqlite.Open(ctx, sqlite.Options{Path: openDB(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		defer r.Close()
		fsys := fstest.MapFS{
			"sqlite/0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")},
			"sqlite/0002_b.sql": {Data: []byte("CREATE TABLE b (x INTEGER); INSERT INTO nowhere VALUES (1);")},
		}
		applied, err := up(ctx, w, fsys, "sqlite", nil)
		if err == nil || !strings.Contains(err.Error(), "0002_b") {
			t.Fatalf("err = %v", err)
		}
		if len(applied) != 1 {
			t.Fatalf("applied %d", len(applied))
		}
		var n int
		if err := r.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'b'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("table b exists after the failed migration (n=%d, err=%v)", n, err)
		}
		if err := r.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("schema_migrations has %d rows", n)
		}
	})

	t.Run("refuses a database that is newer than the binary", func(t *testing.T) {
		w, r, err := sqlite.Open(ctx, sqlite.Options{Path: openDB(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		defer r.Close()
		one := fstest.MapFS{"sqlite/0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")}}
		two := fstest.MapFS{"sqlite/0001_a.sql": one["sqlite/0001_a.sql"], "sqlite/0002_b.sql": {Data: []byte("CREATE TABLE b (x INTEGER);")}}
		if _, err := up(ctx, w, two, "sqlite", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := up(ctx, w, one, "sqlite", nil); err == nil || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("refuses gaps in the version numbers", func(t *testing.T) {
		fsys := fstest.MapFS{"sqlite/0001_a.sql": {Data: []byte("SELECT 1;")}, "sqlite/0003_c.sql": {Data: []byte("SELECT 1;")}}
		if _, err := list(fsys, "sqlite"); err == nil {
			t.Fatal("want an error")
		}
	})
}
