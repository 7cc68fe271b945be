package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.db")
	w, r, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec("CREATE TABLE x (a INTEGER); INSERT INTO x VALUES (1)"); err != nil {
		t.Fatal(err)
	}

	t.Run("reads a database another connection keeps open", func(t *testing.T) {
		ro, err := OpenReadOnly(ctx, path, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		var n int
		if err := ro.QueryRow("SELECT COUNT(*) FROM x").Scan(&n); err != nil || n != 1 {
			t.Fatalf("count = %d, %v", n, err)
		}
		if _, err := ro.Exec("INSERT INTO x VALUES (2)"); err == nil {
			t.Fatal("a read-only connection wrote")
		}
	})

	t.Run("reads a closed database and leaves it unchanged", func(t *testing.T) {
		w.Close()
		r.Close()
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ro, err := OpenReadOnly(ctx, path, 0)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := ro.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatalf("a read-only transaction: %v", err)
		}
		var n int
		if err := tx.QueryRow("SELECT COUNT(*) FROM x").Scan(&n); err != nil || n != 1 {
			t.Fatalf("count = %d, %v", n, err)
		}
		tx.Rollback()
		ro.Close()
		after, _ := os.ReadFile(path)
		if string(before) != string(after) {
			t.Fatal("reading changed the file")
		}
	})

	t.Run("refuses a missing file without creating it", func(t *testing.T) {
		missing := filepath.Join(dir, "missing.db")
		if _, err := OpenReadOnly(ctx, missing, 0); err == nil {
			t.Fatal("opened a missing database")
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatal("created the missing database")
		}
	})
}
