package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/commit"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/sqlite"
	"bothy.dev/bothy/storage/storetest"
)

// errAgain is a transient conflict the test makes up: the dialects of openRetrying take it for
// one, so a unit can make its batch run again.
var errAgain = errors.New("a made-up transient conflict")

type againSQLite struct{ sqlite.Dialect }

func (d againSQLite) IsRetryable(err error) bool {
	return errors.Is(err, errAgain) || d.Dialect.IsRetryable(err)
}

type againPostgres struct{ postgres.Dialect }

func (d againPostgres) IsRetryable(err error) bool {
	return errors.Is(err, errAgain) || d.Dialect.IsRetryable(err)
}

// openRetrying opens a fresh store on eng whose dialect takes errAgain for a transient conflict.
func openRetrying(t *testing.T, eng storetest.Engine) *storage.DB {
	t.Helper()
	ctx := context.Background()
	where := eng.NewDatabase(t)
	var db *storage.DB
	switch engine.Name(eng.Name) {
	case engine.SQLite:
		w, r, err := sqlite.Open(ctx, sqlite.Options{Path: where})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := migrate.Up(ctx, w, engine.SQLite, nil); err != nil {
			t.Fatal(err)
		}
		if db, err = storage.Open(ctx, againSQLite{}, w, r, storage.Options{}); err != nil {
			t.Fatal(err)
		}
	case engine.Postgres:
		w, r, err := postgres.Open(ctx, postgres.Options{URL: where, MaxOpenConns: 4, IdleInTxTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if db, err = storage.Open(ctx, againPostgres{storetest.PostgresTimeouts}, w, r, storage.Options{}); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown engine %s", eng.Name)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// errHeld ends the unit of holdWriter.
var errHeld = errors.New("held the writer")

// holdWriter starts a unit that keeps the writer busy until release is called, and then fails
// (errHeld): a unit that fails takes no queued unit into its batch, so the units queued meanwhile
// run as one batch of their own after it.
func holdWriter(t *testing.T, db *storage.DB) (release func(), done <-chan error) {
	t.Helper()
	started, hold, errc := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		errc <- db.Do(context.Background(), func(ctx context.Context) error {
			close(started)
			<-hold
			return errHeld
		})
	}()
	<-started
	return func() { close(hold) }, errc
}

// waitQueued waits until n units wait for the writer.
func waitQueued(t *testing.T, db *storage.DB, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d units queue", n), func() bool { return storage.QueuedUnits(db) >= n })
}

func TestWritesAtCommit(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		db := openRetrying(t, eng)
		var mu sync.Mutex
		var writes []string // "key=value", one per write the writer made
		// The write keeps a running total per key in a row, so the rows show what committed.
		record := commit.NewAtCommit(func(a, b int64) int64 { return a + b },
			func(exec func(q string, args ...any) error, key string, v int64) error {
				mu.Lock()
				writes = append(writes, fmt.Sprintf("%s=%d", key, v))
				mu.Unlock()
				return exec(`INSERT INTO idempotency_keys (principal_id, idem_key, fingerprint, status_code, response_body, created_at)
					VALUES (?, 'total', '', ?, '', '') ON CONFLICT (principal_id, idem_key) DO UPDATE SET status_code = idempotency_keys.status_code + excluded.status_code`,
					key, v)
			}).Record
		takeWrites := func() []string {
			mu.Lock()
			defer mu.Unlock()
			w := writes
			writes = nil
			return w
		}
		total := func(t *testing.T, key string) int64 {
			t.Helper()
			var n int64
			err := storage.ScanIn(ctx, db, `SELECT status_code FROM idempotency_keys WHERE principal_id = ? AND idem_key = 'total'`, &n, key)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				t.Fatal(err)
			}
			return n
		}
		// queue starts fn as a unit and waits until it has queued behind the held writer.
		var queued int
		var wg sync.WaitGroup
		errs := map[string]error{}
		queue := func(t *testing.T, name string, fn func(ctx context.Context) error) {
			t.Helper()
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := db.Do(ctx, fn)
				mu.Lock()
				errs[name] = err
				mu.Unlock()
			}()
			queued++
			waitQueued(t, db, queued)
		}
		runQueued := func(t *testing.T, release func(), held <-chan error) {
			t.Helper()
			release()
			wg.Wait()
			if err := <-held; !errors.Is(err, errHeld) {
				t.Fatalf("the holding unit: %v", err)
			}
			queued = 0
		}

		t.Run("writes each key once per batch, with what the batch's units recorded under it merged", func(t *testing.T) {
			release, held := holdWriter(t, db)
			queue(t, "one", func(ctx context.Context) error {
				record(ctx, "a", 1)
				record(ctx, "b", 10)
				record(ctx, "a", 1)
				return nil
			})
			queue(t, "two", func(ctx context.Context) error {
				record(ctx, "c", 7)
				record(ctx, "b", 5)
				return nil
			})
			runQueued(t, release, held)
			if errs["one"] != nil || errs["two"] != nil {
				t.Fatalf("units: %v", errs)
			}
			if got, want := takeWrites(), []string{"a=2", "b=15", "c=7"}; !slices.Equal(got, want) {
				t.Fatalf("writes %v, want %v (one per key, in key order)", got, want)
			}
			if a, b, c := total(t, "a"), total(t, "b"), total(t, "c"); a != 2 || b != 15 || c != 7 {
				t.Fatalf("committed a=%d b=%d c=%d", a, b, c)
			}
		})

		t.Run("leaves out what a unit that failed recorded, and keeps its neighbours'", func(t *testing.T) {
			release, held := holdWriter(t, db)
			queue(t, "kept", func(ctx context.Context) error {
				record(ctx, "d", 1)
				return nil
			})
			queue(t, "failed", func(ctx context.Context) error {
				record(ctx, "d", 100)
				record(ctx, "e", 100)
				return kernel.Errorf(kernel.CodeConflict, "vetoed")
			})
			queue(t, "also kept", func(ctx context.Context) error {
				record(ctx, "d", 2)
				return nil
			})
			runQueued(t, release, held)
			if errs["kept"] != nil || errs["also kept"] != nil || !kernel.IsCode(errs["failed"], kernel.CodeConflict) {
				t.Fatalf("units: %v", errs)
			}
			if got, want := takeWrites(), []string{"d=3"}; !slices.Equal(got, want) {
				t.Fatalf("writes %v, want %v", got, want)
			}
			if d, e := total(t, "d"), total(t, "e"); d != 3 || e != 0 {
				t.Fatalf("committed d=%d e=%d", d, e)
			}
		})

		t.Run("writes nothing for a unit that fails alone", func(t *testing.T) {
			err := db.Do(ctx, func(ctx context.Context) error {
				record(ctx, "f", 1)
				return errors.New("boom")
			})
			if err == nil {
				t.Fatal("the unit did not fail")
			}
			if got := takeWrites(); len(got) != 0 || total(t, "f") != 0 {
				t.Fatalf("writes %v, committed f=%d", got, total(t, "f"))
			}
		})

		t.Run("starts from nothing when its batch runs again", func(t *testing.T) {
			var runs atomic.Int32
			release, held := holdWriter(t, db)
			queue(t, "first", func(ctx context.Context) error {
				record(ctx, "r", 3)
				return nil
			})
			queue(t, "conflicting", func(ctx context.Context) error {
				record(ctx, "r", 4)
				if runs.Add(1) == 1 {
					return errAgain // after the first unit recorded: the batch runs again whole
				}
				return nil
			})
			runQueued(t, release, held)
			if errs["first"] != nil || errs["conflicting"] != nil || runs.Load() != 2 {
				t.Fatalf("units: %v, the conflicting one ran %d times", errs, runs.Load())
			}
			if got, want := takeWrites(), []string{"r=7"}; !slices.Equal(got, want) {
				t.Fatalf("writes %v, want %v", got, want)
			}
			if r := total(t, "r"); r != 7 {
				t.Fatalf("committed r=%d, want 7", r)
			}
		})

		t.Run("reports false outside a unit, where the caller writes at once", func(t *testing.T) {
			if record(ctx, "g", 1) {
				t.Fatal("recorded outside a unit")
			}
			if got := takeWrites(); len(got) != 0 {
				t.Fatalf("writes %v", got)
			}
		})
	})
}
