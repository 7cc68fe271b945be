package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/storetest"
	"bothy.dev/bothy/storage/storetest/pgdb"
)

func TestUnitOfWork(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("numbers events gaplessly in commit order under concurrent writers", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			ctx := context.Background()
			var wg sync.WaitGroup
			for w := 0; w < 16; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < 50; i++ {
						fail := i%7 == 3
						err := db.Do(ctx, func(ctx context.Context) error {
							db.Append(ctx, kernel.Event{Type: "test.one", Payload: map[string]int{"w": w, "i": i}})
							db.Append(ctx, kernel.Event{Type: "test.two", Payload: map[string]int{"w": w, "i": i}})
							if fail {
								return kernel.Errorf(kernel.CodeConflict, "vetoed")
							}
							return nil
						})
						if fail != (err != nil) {
							t.Errorf("w%d i%d: err = %v", w, i, err)
						}
					}
				}(w)
			}
			wg.Wait()
			evs, err := db.EventsAfter(ctx, 0, 10000)
			if err != nil {
				t.Fatal(err)
			}
			want := 16 * (50 - 7) * 2 // i%7==3 fails for i in {3,10,17,24,31,38,45}
			if len(evs) != want {
				t.Fatalf("got %d events, want %d", len(evs), want)
			}
			for i, e := range evs {
				if e.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d", i, e.Seq)
				}
			}
			// The two events of one unit are adjacent: a unit's events are numbered together.
			for i := 0; i < len(evs); i += 2 {
				if evs[i].Type != "test.one" || evs[i+1].Type != "test.two" || string(evs[i].Payload) != string(evs[i+1].Payload) {
					t.Fatalf("events %d and %d are not one unit: %s %s", i, i+1, evs[i].Payload, evs[i+1].Payload)
				}
			}
			if db.Head() != int64(want) {
				t.Fatalf("head = %d, want %d", db.Head(), want)
			}
		})

		t.Run("rolls back a failed unit alone and keeps its neighbours", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			ctx := context.Background()
			errBoom := errors.New("boom")
			err := db.Do(ctx, func(ctx context.Context) error {
				db.Append(ctx, kernel.Event{Type: "test.lost"})
				return errBoom
			})
			if !errors.Is(err, errBoom) {
				t.Fatalf("err = %v", err)
			}
			if err := db.Do(ctx, func(ctx context.Context) error {
				db.Append(ctx, kernel.Event{Type: "test.kept"})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			evs, _ := db.EventsAfter(ctx, 0, 10)
			if len(evs) != 1 || evs[0].Type != "test.kept" || evs[0].Seq != 1 {
				t.Fatalf("events = %+v", evs)
			}
		})

		t.Run("keeps a batch going after a unit whose statement failed", func(t *testing.T) {
			// On PostgreSQL a failed statement aborts the transaction: only the unit's savepoint
			// (or, alone, its rollback) lets the others commit.
			db := eng.Open(t, storage.Options{})
			ctx := context.Background()
			var wg sync.WaitGroup
			var failed, ok atomic.Int32
			for i := 0; i < 32; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					err := db.Do(ctx, func(ctx context.Context) error {
						if i%2 == 0 {
							db.Append(ctx, kernel.Event{Type: "test.bad"})
							_, err := storage.ExecIn(ctx, db, `INSERT INTO nowhere VALUES (1)`)
							return err
						}
						db.Append(ctx, kernel.Event{Type: "test.good", Payload: i})
						return nil
					})
					if (err != nil) != (i%2 == 0) {
						t.Errorf("unit %d: %v", i, err)
					}
					if err != nil {
						failed.Add(1)
					} else {
						ok.Add(1)
					}
				}(i)
			}
			wg.Wait()
			evs, err := db.EventsAfter(ctx, 0, 100)
			if err != nil || len(evs) != 16 || failed.Load() != 16 {
				t.Fatalf("%d events (%v), %d failed", len(evs), err, failed.Load())
			}
			for i, e := range evs {
				if e.Seq != int64(i+1) || e.Type != "test.good" {
					t.Fatalf("event %d: %+v", i, e)
				}
			}
		})

		t.Run("commits nothing of a unit whose events cannot be inserted", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			ctx := context.Background()
			// A row at seq 1 that the counter does not know of: the next event collides.
			storage.ExecInTest(t, db, `INSERT INTO event_log (seq, type, payload, created_at) VALUES (1, 'planted', '{}', '2026-01-01T00:00:00.000000Z')`)
			err := db.Do(ctx, func(ctx context.Context) error {
				storage.ExecIn(ctx, db, `UPDATE instance SET setup_code_hash = 'touched' WHERE id = 1`)
				db.Append(ctx, kernel.Event{Type: "test.collides"})
				return nil
			})
			if err == nil {
				t.Fatal("a colliding event committed")
			}
			var hash *string
			if err := storage.ScanIn(ctx, db, `SELECT setup_code_hash FROM instance WHERE id = 1`, &hash); err != nil || hash != nil {
				t.Fatalf("the unit's other write committed: %v %v", hash, err)
			}
			if db.Head() != 0 {
				t.Fatalf("head %d", db.Head())
			}
		})

		t.Run("fails alone a unit of a batch whose events cannot be inserted", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			ctx := context.Background()
			storage.ExecInTest(t, db, `INSERT INTO event_log (seq, type, payload, created_at) VALUES (3, 'planted', '{}', '2026-01-01T00:00:00.000000Z')`)
			release, held := blockCounter(t, db) // seq 1; the units below queue behind it as one batch
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for i, events := range []int{1, 1, 0} { // seq 2; seq 3 collides; none
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = db.Do(ctx, func(ctx context.Context) error {
						_, err := storage.ExecIn(ctx, db, `UPDATE sequence_counters SET value = value + 1 WHERE name = 'permission_version'`)
						for range events {
							db.Append(ctx, kernel.Event{Type: "test.unit", Payload: i})
						}
						return err
					})
				}()
				time.Sleep(30 * time.Millisecond) // queued in this order
			}
			release()
			wg.Wait()
			if err := <-held; err != nil {
				t.Fatal(err)
			}
			if errs[0] != nil || errs[1] == nil || errs[2] != nil {
				t.Fatalf("errors %v: want only the second unit's", errs)
			}
			var version int64
			if err := storage.ScanIn(ctx, db, `SELECT value FROM sequence_counters WHERE name = 'permission_version'`, &version); err != nil || version != 2 {
				t.Fatalf("permission_version %d (%v): the failed unit's write committed or another's did not", version, err)
			}
			if db.Head() != 2 {
				t.Fatalf("head %d", db.Head())
			}
		})

		t.Run("turns a panic in a unit into an error", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			err := db.Do(context.Background(), func(ctx context.Context) error { panic("no") })
			if err == nil {
				t.Fatal("want error")
			}
		})

		t.Run("nested units join the outer one", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			ctx := context.Background()
			err := db.Do(ctx, func(ctx context.Context) error {
				db.Append(ctx, kernel.Event{Type: "outer"})
				return db.Do(ctx, func(ctx context.Context) error {
					db.Append(ctx, kernel.Event{Type: "inner"})
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			evs, _ := db.EventsAfter(ctx, 0, 10)
			if len(evs) != 2 {
				t.Fatalf("events = %+v", evs)
			}
		})

		t.Run("refuses a write outside a unit of work", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			if _, err := storage.ExecIn(context.Background(), db, `UPDATE sequence_counters SET value = 7 WHERE name = 'event_seq'`); err == nil {
				t.Fatal("the read pool wrote")
			}
		})
	})
}

func TestSeveralWritersOnOneDatabase(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()

		t.Run("continues the sequence of the other writer", func(t *testing.T) {
			// SQLite: bothy setup bootstrap-owner may write while a server runs on the same data
			// dir. PostgreSQL: several api nodes. Either way the second writer's events must
			// continue the sequence, not repeat it.
			where := eng.NewDatabase(t)
			a, b := eng.OpenAt(t, where, storage.Options{}), eng.OpenAt(t, where, storage.Options{})
			for i, db := range []*storage.DB{a, b, a, b, a} {
				if err := db.Do(ctx, func(ctx context.Context) error {
					db.Append(ctx, kernel.Event{Type: "test", Payload: i})
					return nil
				}); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			evs, err := a.EventsAfter(ctx, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 5 {
				t.Fatalf("%d events", len(evs))
			}
			for i, e := range evs {
				if e.Seq != int64(i+1) || string(e.Payload) != fmt.Sprint(i) {
					t.Fatalf("event %d: seq %d payload %s", i, e.Seq, e.Payload)
				}
			}
		})

		t.Run("keeps the log gapless with eight concurrent writers on two stores", func(t *testing.T) {
			where := eng.NewDatabase(t)
			nodes := []*storage.DB{eng.OpenAt(t, where, storage.Options{}), eng.OpenAt(t, where, storage.Options{})}
			const writers, each = 8, 40
			var wg sync.WaitGroup
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					db := nodes[w%2]
					for i := 0; i < each; i++ {
						if err := db.Do(ctx, func(ctx context.Context) error {
							db.Append(ctx, kernel.Event{Type: "test.a", Payload: [2]int{w, i}})
							db.Append(ctx, kernel.Event{Type: "test.b", Payload: [2]int{w, i}})
							return nil
						}); err != nil {
							t.Errorf("writer %d: %v", w, err)
							return
						}
					}
				}(w)
			}
			wg.Wait()
			evs, err := nodes[0].EventsAfter(ctx, 0, 10000)
			if err != nil || len(evs) != writers*each*2 {
				t.Fatalf("%d events, %v", len(evs), err)
			}
			for i, e := range evs {
				if e.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d", i, e.Seq)
				}
				if i%2 == 1 && (e.Type != "test.b" || string(e.Payload) != string(evs[i-1].Payload)) {
					t.Fatalf("events %d and %d are not one unit", i-1, i)
				}
			}
			for _, db := range nodes {
				if err := db.RefreshHead(ctx); err != nil || db.Head() != int64(len(evs)) {
					t.Fatalf("head %d after refresh (%v), want %d", db.Head(), err, len(evs))
				}
			}
		})
	})
}

// blockCounter starts a unit of work on db that holds the event_seq lock (taken at the start of
// its batch) until release is closed.
func blockCounter(t *testing.T, db *storage.DB) (release func(), done <-chan error) {
	t.Helper()
	started, hold, errc := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		errc <- db.Do(context.Background(), func(ctx context.Context) error {
			db.Append(ctx, kernel.Event{Type: "test.holder"})
			close(started)
			<-hold
			return nil
		})
	}()
	<-started
	return func() { close(hold) }, errc
}

func TestPostgresCommitPhase(t *testing.T) {
	pgdb.URL(t)
	ctx := context.Background()
	eng := storetest.Postgres
	short := postgres.Dialect{StatementTimeout: 5 * time.Second, LockTimeout: 50 * time.Millisecond}

	t.Run("runs a batch again after a lock timeout on the counter", func(t *testing.T) {
		where := eng.NewDatabase(t)
		holder := eng.OpenAt(t, where, storage.Options{})
		waiter := storetest.OpenPostgresAt(t, where, short, storage.Options{TxRetryMax: 50})
		release, held := blockCounter(t, holder)
		time.AfterFunc(150*time.Millisecond, release)
		if err := waiter.Do(ctx, func(ctx context.Context) error {
			waiter.Append(ctx, kernel.Event{Type: "test.waiter"})
			return nil
		}); err != nil {
			t.Fatalf("the waiting write failed: %v", err)
		}
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		evs, _ := waiter.EventsAfter(ctx, 0, 10)
		if len(evs) != 2 || evs[0].Type != "test.holder" || evs[1].Type != "test.waiter" || evs[1].Seq != 2 {
			t.Fatalf("events %+v", evs)
		}
	})

	t.Run("answers unavailable when the retries run out", func(t *testing.T) {
		where := eng.NewDatabase(t)
		holder := eng.OpenAt(t, where, storage.Options{})
		waiter := storetest.OpenPostgresAt(t, where, short, storage.Options{TxRetryMax: -1})
		release, held := blockCounter(t, holder)
		err := waiter.Do(ctx, func(ctx context.Context) error {
			waiter.Append(ctx, kernel.Event{Type: "test.waiter"})
			return nil
		})
		release()
		if !kernel.IsCode(err, kernel.CodeUnavailable) {
			t.Fatalf("err = %v, want unavailable", err)
		}
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		if evs, _ := waiter.EventsAfter(ctx, 0, 10); len(evs) != 1 {
			t.Fatalf("events %+v", evs)
		}
	})

	t.Run("sets the transaction's timeouts", func(t *testing.T) {
		db := storetest.OpenPostgresAt(t, eng.NewDatabase(t), postgres.Dialect{StatementTimeout: 1234 * time.Millisecond, LockTimeout: 567 * time.Millisecond}, storage.Options{})
		var st, lt string
		if err := db.Do(ctx, func(ctx context.Context) error {
			if err := storage.ScanIn(ctx, db, `SHOW statement_timeout`, &st); err != nil {
				return err
			}
			return storage.ScanIn(ctx, db, `SHOW lock_timeout`, &lt)
		}); err != nil {
			t.Fatal(err)
		}
		if st != "1234ms" || lt != "567ms" {
			t.Fatalf("statement_timeout %s, lock_timeout %s", st, lt)
		}
	})

	t.Run("ends a statement that outlives statement_timeout and commits the others", func(t *testing.T) {
		db := storetest.OpenPostgresAt(t, eng.NewDatabase(t), postgres.Dialect{StatementTimeout: 100 * time.Millisecond}, storage.Options{})
		err := db.Do(ctx, func(ctx context.Context) error {
			_, err := storage.ExecIn(ctx, db, `SELECT pg_sleep(1)`)
			return err
		})
		if err == nil {
			t.Fatal("pg_sleep(1) outlived a 100 ms statement_timeout")
		}
		if err := db.Do(ctx, func(ctx context.Context) error { db.Append(ctx, kernel.Event{Type: "test.after"}); return nil }); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("replaces a write connection that was killed", func(t *testing.T) {
		db := eng.Open(t, storage.Options{})
		var pid int
		if err := db.Do(ctx, func(ctx context.Context) error {
			return storage.ScanIn(ctx, db, `SELECT pg_backend_pid()`, &pid)
		}); err != nil {
			t.Fatal(err)
		}
		other := eng.Open(t, storage.Options{}) // any session of the cluster may end another
		var killed bool
		if err := other.Do(ctx, func(ctx context.Context) error {
			return storage.ScanIn(ctx, other, `SELECT pg_terminate_backend(?)`, &killed, pid)
		}); err != nil || !killed {
			t.Fatalf("terminate: %v %v", killed, err)
		}
		if err := db.Do(ctx, func(ctx context.Context) error { db.Append(ctx, kernel.Event{Type: "test.after"}); return nil }); err != nil {
			t.Fatalf("the write after the kill: %v", err)
		}
		if db.Head() != 1 {
			t.Fatalf("head %d", db.Head())
		}
	})
}

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPostgresHeadOnSeveralNodes(t *testing.T) {
	pgdb.URL(t)
	ctx := context.Background()
	eng := storetest.Postgres
	write := func(t *testing.T, db *storage.DB, n int) {
		t.Helper()
		if err := db.Do(ctx, func(ctx context.Context) error {
			for range n {
				db.Append(ctx, kernel.Event{Type: "test"})
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("RefreshHead learns another node's commits and wakes the tails", func(t *testing.T) {
		where := eng.NewDatabase(t)
		a, b := eng.OpenAt(t, where, storage.Options{}), eng.OpenAt(t, where, storage.Options{})
		write(t, a, 3)
		changed := b.Changed()
		if b.Head() != 0 {
			t.Fatalf("b knew of a's commit without being told: %d", b.Head())
		}
		if err := b.RefreshHead(ctx); err != nil || b.Head() != 3 {
			t.Fatalf("head %d, %v", b.Head(), err)
		}
		select {
		case <-changed:
		default:
			t.Fatal("the tails were not woken")
		}
		changed = b.Changed()
		if err := b.RefreshHead(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
			t.Fatal("a refresh that learned nothing woke the tails")
		default:
		}
	})

	t.Run("Listen wakes a node at another node's commit, also after its connection was killed", func(t *testing.T) {
		where := eng.NewDatabase(t)
		a, b := eng.OpenAt(t, where, storage.Options{}), eng.OpenAt(t, where, storage.Options{})
		lctx, stop := context.WithCancel(ctx)
		var heads atomic.Int32 // calls of onHead, the first after LISTEN
		done := make(chan error, 1)
		go func() {
			done <- postgres.Listen(lctx, where, func(h int64) { heads.Add(1); b.AdvanceHead(h) }, nil)
		}()
		defer func() {
			stop()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Listen returned %v", err)
			}
		}()
		waitFor(t, "the listener listens", func() bool { return heads.Load() > 0 })
		changed := b.Changed()
		write(t, a, 2)
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatal("b was not woken by a's commit")
		}
		waitFor(t, "b's head is a's", func() bool { return b.Head() == 2 })

		var n int
		if err := a.Do(ctx, func(ctx context.Context) error {
			return storage.ScanIn(ctx, a, `SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = 'bothy-log-tail' AND datname = current_database()`, &n)
		}); err != nil || n != 1 {
			t.Fatalf("terminated %d listeners, %v", n, err)
		}
		before := heads.Load()
		write(t, a, 1) // while the listener is away: its reconnect reads the head
		waitFor(t, "the listener is back", func() bool { return heads.Load() > before })
		write(t, a, 1)
		waitFor(t, "b's head follows a's after the reconnect", func() bool { return b.Head() == 4 })
	})

	t.Run("catch-up on one node accepts a cursor that another node handed out", func(t *testing.T) {
		where := eng.NewDatabase(t)
		a, b := eng.OpenAt(t, where, storage.Options{}), eng.OpenAt(t, where, storage.Options{})
		write(t, a, 5)
		az := &chatAllow{deny: map[kernel.ID]bool{}}
		actor := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
		p, err := catchup.New(catchup.Deps{Log: b, Scoper: az}).CatchUp(ctx, actor, a.Head(), 0)
		if err != nil || p.HeadSeq != 5 || len(p.Events) != 0 || p.NextAfter != 5 {
			t.Fatalf("page %+v, %v", p, err)
		}
		write(t, a, 1)
		p, err = catchup.New(catchup.Deps{Log: b, Scoper: az}).CatchUp(ctx, actor, 3, 0)
		if err != nil || p.HeadSeq != 6 || len(p.Events) != 3 {
			t.Fatalf("page %+v, %v", p, err)
		}
	})
}

// BenchmarkCommitPhase measures durable events committed per second with 8 concurrent writers:
// "message", each Unit of Work a message create through messaging (thread read, message insert,
// thread bump, one event); "event", each Unit of Work one event alone (the commit phase: lock,
// number, insert, advance, notify, commit). It reports events/s; run with -benchtime=10000x or
// more for a steady figure.
func BenchmarkCommitPhase(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, eng storetest.Engine) {
		const writers = 8
		run := func(b *testing.B, db *storage.DB, write func(i int64) error) {
			var n atomic.Int64
			h0 := db.Head()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := n.Add(1)
						if i > int64(b.N) {
							return
						}
						if err := write(i); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(db.Head()-h0)/b.Elapsed().Seconds(), "events/s")
		}
		ctx := context.Background()
		b.Run("message", func(b *testing.B) {
			e := newMsgEnv(b, eng)
			run(b, e.db, func(i int64) error {
				_, _, err := e.svc.CreateMessage(ctx, e.alice, e.mainID, messaging.NewMessage{Content: "hello", ClientMsgID: fmt.Sprintf("c-%d", i)})
				return err
			})
		})
		b.Run("event", func(b *testing.B) {
			db := eng.Open(b, storage.Options{})
			run(b, db, func(i int64) error {
				return db.Do(ctx, func(ctx context.Context) error {
					db.Append(ctx, kernel.Event{Type: "test.bench", Payload: map[string]int64{"i": i}})
					return nil
				})
			})
		})
	})
}
