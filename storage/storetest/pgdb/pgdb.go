// Package pgdb gives a test its own PostgreSQL database on the cluster that
// BOTHY_TEST_POSTGRES_URL names: created (empty, or as a copy of a template) and dropped in
// t.Cleanup. It knows nothing of bothy's schema, so that package migrate's own tests can use it;
// storetest builds the migrated template on top of it.
//
// It is for tests only and never runs in the server.
package pgdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/storage/postgres"
)

// EnvURL names the variable that points the tests at a PostgreSQL cluster (a superuser's URL;
// CI always sets it, see .ci/pg).
const EnvURL = "BOTHY_TEST_POSTGRES_URL"

// URL returns the cluster's URL, or skips the test when the variable is unset.
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		tb.Skip(EnvURL + " is not set: the PostgreSQL half of this test does not run")
	}
	return u
}

var (
	adminOnce sync.Once
	admin     *sql.DB
	adminErr  error
)

// Admin returns a connection pool of the test binary to the cluster's own database, for
// CREATE and DROP DATABASE. It is shared and never closed.
func Admin(tb testing.TB) *sql.DB {
	tb.Helper()
	u := URL(tb)
	adminOnce.Do(func() {
		w, r, err := postgres.Open(context.Background(), postgres.Options{URL: u, MaxOpenConns: 1})
		if err != nil {
			adminErr = err
			return
		}
		r.Close()
		w.SetMaxOpenConns(4)
		w.SetMaxIdleConns(4)
		admin = w
	})
	if adminErr != nil {
		tb.Fatalf("pgdb: %v", adminErr)
	}
	return admin
}

// NewName returns a database name that no other test uses: prefix and random hex.
func NewName(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// WithDatabase returns url pointed at database name instead of its own.
func WithDatabase(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("pgdb: %s must be a postgres:// URL", EnvURL)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// Create makes a new database, a copy of template if it is not empty, drops it (and ends its
// sessions) in tb.Cleanup, and returns its URL.
func Create(tb testing.TB, template string) string {
	tb.Helper()
	return CreateNamed(tb, "bothy_t_", template)
}

// CreateNamed is Create with a database name that starts with prefix, so that a suite's
// databases can be told from another's on a shared cluster.
func CreateNamed(tb testing.TB, prefix, template string) string {
	tb.Helper()
	name := NewName(prefix)
	if err := CreateDatabase(context.Background(), Admin(tb), name, template); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := Drop(context.Background(), Admin(tb), name); err != nil {
			tb.Errorf("pgdb: drop %s: %v", name, err)
		}
	})
	u, err := WithDatabase(URL(tb), name)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// CreateDatabase runs CREATE DATABASE name [TEMPLATE template]. A template still being left by
// a session that just closed makes PostgreSQL refuse for a moment: it tries again for 10 s.
func CreateDatabase(ctx context.Context, admin *sql.DB, name, template string) error {
	q := "CREATE DATABASE " + ident(name)
	if template != "" {
		q += " TEMPLATE " + ident(template)
	}
	return retryBusy(ctx, func() error { _, err := admin.ExecContext(ctx, q); return err })
}

// Rename runs ALTER DATABASE from RENAME TO to, with the same patience as CreateDatabase.
func Rename(ctx context.Context, admin *sql.DB, from, to string) error {
	q := "ALTER DATABASE " + ident(from) + " RENAME TO " + ident(to)
	return retryBusy(ctx, func() error { _, err := admin.ExecContext(ctx, q); return err })
}

// Drop drops database name if it exists, ending its sessions first.
func Drop(ctx context.Context, admin *sql.DB, name string) error {
	_, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)")
	return err
}

// Exists reports whether database name exists.
func Exists(ctx context.Context, admin *sql.DB, name string) (bool, error) {
	var n int
	err := admin.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_database WHERE datname = $1`, name).Scan(&n)
	return n > 0, err
}

func retryBusy(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil || !strings.Contains(err.Error(), "is being accessed by other users") || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
