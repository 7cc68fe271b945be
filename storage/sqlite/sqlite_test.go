package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	w, r, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()

	t.Run("sets WAL, FULL sync and foreign keys on the write connection", func(t *testing.T) {
		var mode string
		var sync, fk int
		if err := w.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Fatalf("journal_mode %q %v", mode, err)
		}
		if err := w.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
			t.Fatalf("synchronous %d %v", sync, err)
		}
		if err := w.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
			t.Fatalf("foreign_keys %d %v", fk, err)
		}
	})

	t.Run("keeps the read pool read-only", func(t *testing.T) {
		if _, err := r.Exec("CREATE TABLE x (a INTEGER)"); err == nil {
			t.Fatal("the read pool wrote")
		}
	})

	t.Run("maps a unique violation", func(t *testing.T) {
		if _, err := w.Exec("CREATE TABLE u (a INTEGER PRIMARY KEY, b TEXT UNIQUE)"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Exec("INSERT INTO u (a, b) VALUES (1, 'x')"); err != nil {
			t.Fatal(err)
		}
		_, err := w.Exec("INSERT INTO u (a, b) VALUES (2, 'x')")
		if !(Dialect{}).IsUniqueViolation(err) {
			t.Fatalf("not a unique violation: %v", err)
		}
		_, err = w.Exec("INSERT INTO u (a, b) VALUES (1, 'y')")
		if !(Dialect{}).IsUniqueViolation(err) {
			t.Fatalf("primary key not a unique violation: %v", err)
		}
		if (Dialect{}).IsRetryable(err) {
			t.Fatal("a unique violation is not retryable")
		}
	})

	t.Run("reports a busy database as retryable", func(t *testing.T) {
		other, _, err := Open(ctx, Options{Path: path, BusyTimeout: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		conn, err := w.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		defer conn.ExecContext(ctx, "ROLLBACK")
		_, err = other.Exec("INSERT INTO u (a, b) VALUES (3, 'z')")
		if !(Dialect{}).IsRetryable(err) {
			t.Fatalf("not retryable: %v", err)
		}
	})

	t.Run("refuses an unknown synchronous mode", func(t *testing.T) {
		if _, _, err := Open(ctx, Options{Path: path, Synchronous: "OFF"}); err == nil {
			t.Fatal("want an error")
		}
	})
}

// A path is a path: one whose names hold ?, # or % opens that file, not one cut short at the ?
// or the # (which the driver's file: URI would take for a query or a fragment).
func TestOpenPathWithURICharacters(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "run#2?x=1%41")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t.db")
	w, r, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec("CREATE TABLE x (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	r.Close()
	w.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at its path: %v", err)
	}
	ro, err := OpenReadOnly(ctx, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var n int
	if err := ro.QueryRow("SELECT count(*) FROM x").Scan(&n); err != nil {
		t.Fatalf("the read-only open reads another file: %v", err)
	}
}
