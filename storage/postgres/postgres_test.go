package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/storetest/pgdb"
)

func TestRebind(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"numbers placeholders in order", `SELECT a FROM t WHERE b = ? AND c IN (?, ?) LIMIT ?`, `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3) LIMIT $4`},
		{"leaves a query without placeholders alone", `SELECT 1`, `SELECT 1`},
		{"skips a question mark in a string", `SELECT '?', 'it''s ?' , ? FROM t`, `SELECT '?', 'it''s ?' , $1 FROM t`},
		{"skips a question mark in a quoted identifier", `SELECT "a?""b" FROM t WHERE x = ?`, `SELECT "a?""b" FROM t WHERE x = $1`},
		{"skips comments", "SELECT ? -- what?\n, /* and? */ ?", "SELECT $1 -- what?\n, /* and? */ $2"},
		{"survives an unterminated string", `SELECT ? 'abc?`, `SELECT $1 'abc?`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := (postgres.Dialect{}).Rebind(c.in); got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestBeginWrite(t *testing.T) {
	if got := (postgres.Dialect{}).BeginWrite(); got != "BEGIN ISOLATION LEVEL READ COMMITTED" {
		t.Fatalf("no timeouts: %q", got)
	}
	got := postgres.Dialect{StatementTimeout: 5 * time.Second, LockTimeout: 1500 * time.Microsecond}.BeginWrite()
	want := "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = 5000; SET LOCAL lock_timeout = 1"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	url := pgdb.Create(t, "")
	w, r, err := postgres.Open(ctx, postgres.Options{URL: url, MaxOpenConns: 3, StatementTimeout: 250 * time.Millisecond, IdleInTxTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	d := postgres.Dialect{LockTimeout: 100 * time.Millisecond}

	t.Run("gives the writer exactly one connection and the read pool its size", func(t *testing.T) {
		if n := w.Stats().MaxOpenConnections; n != 1 {
			t.Fatalf("writer %d", n)
		}
		if n := r.Stats().MaxOpenConnections; n != 3 {
			t.Fatalf("reader %d", n)
		}
	})

	t.Run("keeps the read pool read-only and bounded by statement_timeout", func(t *testing.T) {
		if _, err := r.Exec(`CREATE TABLE x (a INTEGER)`); err == nil {
			t.Fatal("the read pool wrote")
		}
		if _, err := r.Exec(`SELECT pg_sleep(1)`); err == nil || !strings.Contains(err.Error(), "57014") {
			t.Fatalf("a 1 s read under a 250 ms statement_timeout: %v", err)
		}
	})

	t.Run("names its sessions and ends an idle transaction", func(t *testing.T) {
		var app, idle string
		if err := w.QueryRow(`SELECT current_setting('application_name'), current_setting('idle_in_transaction_session_timeout')`).Scan(&app, &idle); err != nil {
			t.Fatal(err)
		}
		if app != "bothy" || idle != "1min" {
			t.Fatalf("application_name %q, idle_in_transaction_session_timeout %q", app, idle)
		}
	})

	t.Run("maps a unique violation and a lock timeout", func(t *testing.T) {
		if _, err := w.Exec(`CREATE TABLE u (a INTEGER PRIMARY KEY, b TEXT UNIQUE)`); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Exec(`INSERT INTO u (a, b) VALUES (1, 'x')`); err != nil {
			t.Fatal(err)
		}
		_, err := w.Exec(`INSERT INTO u (a, b) VALUES (2, 'x')`)
		if !d.IsUniqueViolation(err) || d.IsRetryable(err) {
			t.Fatalf("unique: %v", err)
		}
		_, err = w.Exec(`INSERT INTO u (a, b) VALUES (1, 'y')`)
		if !d.IsUniqueViolation(err) {
			t.Fatalf("primary key: %v", err)
		}

		// A second writer (another node) waits for the row the first holds.
		w2, r2, err := postgres.Open(ctx, postgres.Options{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Close()
		defer r2.Close()
		holder, err := w.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if _, err := holder.ExecContext(ctx, d.BeginWrite()); err != nil {
			t.Fatal(err)
		}
		defer holder.ExecContext(ctx, "ROLLBACK")
		if _, err := holder.ExecContext(ctx, `SELECT a FROM u WHERE a = 1 FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
		waiter, err := w2.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer waiter.Close()
		if _, err := waiter.ExecContext(ctx, d.BeginWrite()); err != nil {
			t.Fatal(err)
		}
		defer waiter.ExecContext(ctx, "ROLLBACK")
		start := time.Now()
		_, err = waiter.ExecContext(ctx, `SELECT a FROM u WHERE a = $1 FOR UPDATE`, 1)
		if !d.IsRetryable(err) || d.IsUniqueViolation(err) {
			t.Fatalf("lock timeout not retryable: %v", err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("waited %v for a 100 ms lock_timeout", el)
		}
	})

	t.Run("never shows the password of a URL it cannot use", func(t *testing.T) {
		_, _, err := postgres.Open(ctx, postgres.Options{URL: "postgres://bothy:s3cret-pw@127.0.0.1:1/x?sslmode=disable&connect_timeout=1"})
		if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
			t.Fatalf("err = %v", err)
		}
		_, _, err = postgres.Open(ctx, postgres.Options{URL: "postgres://bothy:s3cret-pw@127.0.0.1:1/x?sslmode=bogus"})
		if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestListen(t *testing.T) {
	t.Run("refuses a URL it cannot parse at once", func(t *testing.T) {
		err := postgres.Listen(context.Background(), "postgres://a:b@h/x?sslmode=bogus", func(int64) {}, nil)
		if err == nil || errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("keeps trying an unreachable server until its context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		defer cancel()
		err := postgres.Listen(ctx, "postgres://u@127.0.0.1:1/x?sslmode=disable&connect_timeout=1", func(int64) { t.Error("a head from nowhere") }, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestSignals(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := pgdb.Create(t, "")
	_, r, err := postgres.Open(ctx, postgres.Options{URL: url, MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, b := postgres.NewSignals(url, r, nil), postgres.NewSignals(url, r, nil)
	for _, s := range []*postgres.Signals{a, b} {
		go s.Listen(ctx)
	}
	receive := func(t *testing.T, s *postgres.Signals, want string) {
		t.Helper()
		select {
		case got := <-s.Received():
			if string(got) != want {
				t.Fatalf("received %s, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("nothing received within 5s, want %s", want)
		}
	}

	t.Run("delivers a payload to every node, the sender included, from the read-only pool", func(t *testing.T) {
		// The listeners may not be listening yet: publish until the first arrives.
		deadline := time.Now().Add(5 * time.Second)
		for {
			if err := a.Publish(ctx, []byte(`{"kind":"test.ping"}`)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-a.Received():
			case <-time.After(50 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatal("the sender never received its own signal")
				}
				continue
			}
			break
		}
		for len(b.Received()) < 1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		for len(a.Received()) > 0 {
			<-a.Received()
		}
		for len(b.Received()) > 0 {
			<-b.Received()
		}
		if err := b.Publish(ctx, []byte(`{"kind":"test.pong"}`)); err != nil {
			t.Fatal(err)
		}
		receive(t, a, `{"kind":"test.pong"}`)
		receive(t, b, `{"kind":"test.pong"}`)
	})
	t.Run("refuses a URL it cannot parse at once", func(t *testing.T) {
		s := postgres.NewSignals("postgres://a:b@h/x?sslmode=bogus", r, nil)
		if err := s.Listen(context.Background()); err == nil || errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
}
