package jobs

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/sqlite"
	"bothy.dev/bothy/storage/storetest"
)

// fixture is a store on a fresh database, a queue on it and the runner's pool.
type fixture struct {
	db   *storage.DB
	q    *Queue
	pool *sql.DB
	logs *logBuffer
}

func mustFixture(t *testing.T, e storetest.Engine) *fixture {
	t.Helper()
	where := e.NewDatabase(t)
	db := e.OpenAt(t, where, storage.Options{})
	return &fixture{db: db, q: NewQueue(db, QueueOptions{}), pool: mustPool(t, e, where), logs: &logBuffer{}}
}

// mustPool opens the writable pool a runner receives through, as the appliance does.
func mustPool(t *testing.T, e storetest.Engine, where string) *sql.DB {
	t.Helper()
	ctx := context.Background()
	var w, r *sql.DB
	var err error
	switch e {
	case storetest.SQLite:
		w, r, err = sqlite.Open(ctx, sqlite.Options{Path: where})
	case storetest.Postgres:
		w, r, err = postgres.Open(ctx, postgres.Options{URL: where, MaxOpenConns: 1})
	}
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	t.Cleanup(func() { w.Close() })
	return w
}

// runner starts a runner with short durations (o's zero fields filled here) until the test
// ends, and returns it.
func (f *fixture) runner(t *testing.T, o RunnerOptions) *Runner {
	t.Helper()
	o.Pool = f.pool
	o.Logger = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if o.PollInterval == 0 {
		o.PollInterval = time.Minute // only the wake-up and the due time may start a job
	}
	if o.BackoffMin == 0 {
		o.BackoffMin = 50 * time.Millisecond
	}
	r := NewRunner(f.q, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the runner did not stop within 10 s")
		}
	})
	return r
}

func (f *fixture) enqueue(t *testing.T, j kernel.Job) {
	t.Helper()
	if err := f.q.Enqueue(context.Background(), j); err != nil {
		t.Fatal(err)
	}
}

// rows returns the ids of the queue's rows and their attempts.
func (f *fixture) rows(t *testing.T) map[string]int {
	t.Helper()
	rows, err := f.pool.Query(`SELECT id, received FROM goqite`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	return out
}

// eventually waits up to d for cond, checking it again inside the loop, so that it
// neither hangs nor misses a late change.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

type runArgs struct {
	RunID kernel.ID `json:"run_id"`
}

func nop(context.Context, json.RawMessage) error { return nil }

func TestEnqueue(t *testing.T) {
	storetest.Run(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		f := mustFixture(t, e)
		f.q.Register("runs.queued_expiry", nop)
		f.q.RegisterPeriodic("idempotency.cleanup", time.Hour, nop)
		// goqite's own receiver, as the runner holds it.
		recv := NewRunner(f.q, RunnerOptions{Pool: f.pool})

		t.Run("a job enqueued in a unit that commits is what goqite's receiver hands out", func(t *testing.T) {
			run := kernel.NewID()
			err := f.db.Do(ctx, func(ctx context.Context) error {
				return f.q.Enqueue(ctx, kernel.Job{Name: "runs.queued_expiry", Args: runArgs{RunID: run}})
			})
			if err != nil {
				t.Fatal(err)
			}
			m, err := recv.receive(ctx)
			if err != nil || m == nil {
				t.Fatalf("receive = %v, %v", m, err)
			}
			var env envelope
			if err := json.Unmarshal(m.Body, &env); err != nil {
				t.Fatal(err)
			}
			var got runArgs
			if err := json.Unmarshal(env.Args, &got); err != nil || env.Name != "runs.queued_expiry" || got.RunID != run {
				t.Fatalf("body %s: name %q, args %+v (%v)", m.Body, env.Name, got, err)
			}
			if _, err := kernel.ParseID(string(m.ID)); err != nil {
				t.Fatalf("id %q is not a UUIDv7: %v", m.ID, err)
			}
			if err := recv.gq.Delete(ctx, m.ID); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("a job enqueued in a unit that rolls back is not in the queue", func(t *testing.T) {
			boom := errors.New("boom")
			err := f.db.Do(ctx, func(ctx context.Context) error {
				if err := f.q.Enqueue(ctx, kernel.Job{Name: "runs.queued_expiry", Args: runArgs{RunID: kernel.NewID()}}); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("Do = %v", err)
			}
			if rows := f.rows(t); len(rows) != 0 {
				t.Fatalf("the queue holds %v", rows)
			}
		})
		t.Run("a unit that rolls back alone in a batch takes its job along and leaves the others'", func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = f.db.Do(ctx, func(ctx context.Context) error {
						if err := f.q.Enqueue(ctx, kernel.Job{Name: "runs.queued_expiry", Key: string(rune('a' + i))}); err != nil {
							return err
						}
						if i%2 == 1 {
							return errors.New("odd")
						}
						return nil
					})
				}()
			}
			wg.Wait()
			rows := f.rows(t)
			for i, err := range errs {
				_, in := rows[keyedID("runs.queued_expiry", string(rune('a'+i)))]
				if (err == nil) != in {
					t.Errorf("unit %d: err %v, job in the queue %v", i, err, in)
				}
			}
			if len(rows) != 4 {
				t.Fatalf("the queue holds %v", rows)
			}
			if _, err := f.pool.Exec(`DELETE FROM goqite`); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("enqueues in a unit of its own outside one", func(t *testing.T) {
			f.enqueue(t, kernel.Job{Name: "runs.queued_expiry"})
			if rows := f.rows(t); len(rows) != 1 {
				t.Fatalf("the queue holds %v", rows)
			}
			if _, err := f.pool.Exec(`DELETE FROM goqite`); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("a key holds one job of its name in the queue until it is done", func(t *testing.T) {
			f.enqueue(t, kernel.Job{Name: "runs.queued_expiry", Key: "r1", Args: runArgs{RunID: "first"}})
			f.enqueue(t, kernel.Job{Name: "runs.queued_expiry", Key: "r1", Args: runArgs{RunID: "second"}})
			f.enqueue(t, kernel.Job{Name: "runs.queued_expiry", Key: "r2"})
			if rows := f.rows(t); len(rows) != 2 {
				t.Fatalf("the queue holds %v", rows)
			}
			m, err := recv.receive(ctx)
			if err != nil || m == nil {
				t.Fatalf("receive = %v, %v", m, err)
			}
			if !strings.Contains(string(m.Body), "first") {
				t.Fatalf("the first job's args were replaced: %s", m.Body)
			}
			f.enqueue(t, kernel.Job{Name: "runs.queued_expiry", Key: "r1"}) // while it runs
			if len(f.rows(t)) != 2 {
				t.Fatal("a job with the key of a running job was added")
			}
			if err := recv.gq.Delete(ctx, m.ID); err != nil {
				t.Fatal(err)
			}
			f.enqueue(t, kernel.Job{Name: "runs.queued_expiry", Key: "r1"})
			if rows := f.rows(t); len(rows) != 2 {
				t.Fatalf("the key is not free once the job is done: %v", rows)
			}
			if _, err := f.pool.Exec(`DELETE FROM goqite`); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("a job due later is not handed out before its time", func(t *testing.T) {
			f.enqueue(t, kernel.Job{Name: "runs.queued_expiry", At: time.Now().Add(time.Hour)})
			if m, err := recv.receive(ctx); m != nil || err != nil {
				t.Fatalf("receive = %v, %v", m, err)
			}
			due, ok, err := recv.nextDue(ctx)
			if err != nil || !ok || time.Until(due) < 59*time.Minute || time.Until(due) > time.Hour {
				t.Fatalf("next due %s %v %v", due, ok, err)
			}
			if _, err := f.pool.Exec(`DELETE FROM goqite`); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("refuses what is a programming error, and writes nothing", func(t *testing.T) {
			for _, tt := range []struct {
				name string
				job  kernel.Job
				want string
			}{
				{"a name without a handler", kernel.Job{Name: "runs.nothing"}, "no handler"},
				{"a periodic job", kernel.Job{Name: "idempotency.cleanup"}, "periodic"},
				{"arguments over 4 KiB", kernel.Job{Name: "runs.queued_expiry", Args: strings.Repeat("x", 5000)}, "ids, never content"},
				{"arguments that do not encode", kernel.Job{Name: "runs.queued_expiry", Args: func() {}}, "encode"},
				{"a key over 200 bytes", kernel.Job{Name: "runs.queued_expiry", Key: strings.Repeat("k", 201)}, "key"},
			} {
				err := f.q.Enqueue(ctx, tt.job)
				if err == nil || !strings.Contains(err.Error(), tt.want) || kernel.CodeOf(err) != kernel.CodeInternal {
					t.Errorf("%s: Enqueue = %v, want an internal error naming %q", tt.name, err, tt.want)
				}
			}
			if rows := f.rows(t); len(rows) != 0 {
				t.Fatalf("the queue holds %v", rows)
			}
		})
	})
}

func TestRegister(t *testing.T) {
	q := NewQueue(nil, QueueOptions{})
	q.Register("runs.stall_check", nop)
	for _, tt := range []struct {
		name string
		fn   func()
	}{
		{"a name taken", func() { q.Register("runs.stall_check", nop) }},
		{"a name with upper case", func() { q.Register("Runs.x", nop) }},
		{"a name with a colon", func() { q.Register("runs:x", nop) }},
		{"a nil handler", func() { q.Register("runs.x", nil) }},
		{"a periodic job without interval", func() { q.RegisterPeriodic("runs.y", 0, nop) }},
		{"after the runner started", func() { q.seal(); q.Register("runs.z", nop) }},
	} {
		t.Run("panics on "+tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tt.fn()
		})
	}
}

func TestRunner(t *testing.T) {
	storetest.Run(t, func(t *testing.T, e storetest.Engine) {
		t.Run("runs a job due now within milliseconds of the commit, not a poll interval", func(t *testing.T) {
			f := mustFixture(t, e)
			ran := make(chan runArgs, 1)
			f.q.Register("runs.queued_expiry", func(ctx context.Context, args json.RawMessage) error {
				var a runArgs
				if err := json.Unmarshal(args, &a); err != nil {
					return err
				}
				ran <- a
				return nil
			})
			f.runner(t, RunnerOptions{})
			time.Sleep(50 * time.Millisecond) // the runner waits for its poll interval (a minute)
			run := kernel.NewID()
			start := time.Now()
			f.enqueue(t, kernel.Job{Name: "runs.queued_expiry", Args: runArgs{RunID: run}})
			select {
			case got := <-ran:
				took := time.Since(start)
				if took > time.Second { // the poll interval is a minute: only the wake-up is this fast
					t.Errorf("the job ran %s after the commit", took)
				}
				t.Logf("the job ran %s after Enqueue began", took)
				if got.RunID != run {
					t.Fatalf("args %+v", got)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the job did not run within 5 s")
			}
			eventually(t, 5*time.Second, "the done job is deleted", func() bool { return len(f.rows(t)) == 0 })
		})

		t.Run("runs a job due later at its time", func(t *testing.T) {
			f := mustFixture(t, e)
			ran := make(chan time.Time, 1)
			f.q.Register("runs.stall_check", func(context.Context, json.RawMessage) error { ran <- time.Now(); return nil })
			f.runner(t, RunnerOptions{})
			due := time.Now().Add(300 * time.Millisecond)
			f.enqueue(t, kernel.Job{Name: "runs.stall_check", At: due})
			select {
			case at := <-ran:
				if at.Before(due) || at.After(due.Add(2*time.Second)) {
					t.Fatalf("ran %s after its due time", at.Sub(due))
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the job did not run within 5 s")
			}
		})

		t.Run("tries a failing job again with a doubling backoff and deletes it once it succeeds", func(t *testing.T) {
			f := mustFixture(t, e)
			var mu sync.Mutex
			var at []time.Time
			f.q.Register("webhooks.deliver", func(context.Context, json.RawMessage) error {
				mu.Lock()
				defer mu.Unlock()
				at = append(at, time.Now())
				if len(at) < 3 {
					return errors.New("the endpoint answered 503")
				}
				return nil
			})
			f.runner(t, RunnerOptions{BackoffMin: 100 * time.Millisecond})
			f.enqueue(t, kernel.Job{Name: "webhooks.deliver", Args: runArgs{RunID: "SECRET-LOOKING-ARG"}})
			eventually(t, 10*time.Second, "the third attempt", func() bool { mu.Lock(); defer mu.Unlock(); return len(at) == 3 })
			eventually(t, 5*time.Second, "the done job is deleted", func() bool { return len(f.rows(t)) == 0 })
			mu.Lock()
			defer mu.Unlock()
			if d := at[1].Sub(at[0]); d < 100*time.Millisecond {
				t.Errorf("second attempt %s after the first, want at least 100ms", d)
			}
			if d := at[2].Sub(at[1]); d < 200*time.Millisecond {
				t.Errorf("third attempt %s after the second, want at least 200ms", d)
			}
			logs := f.logs.String()
			if strings.Count(logs, "job failed; it runs again") != 2 || !strings.Contains(logs, "retry_in=200ms") {
				t.Errorf("logs:\n%s", logs)
			}
			if strings.Contains(logs, "SECRET-LOOKING-ARG") {
				t.Errorf("the logs show a job's arguments:\n%s", logs)
			}
		})

		t.Run("drops a job after its last attempt, a panic counting as a failure", func(t *testing.T) {
			f := mustFixture(t, e)
			var calls atomic.Int32
			f.q.Register("webhooks.deliver", func(context.Context, json.RawMessage) error {
				if calls.Add(1) == 2 {
					panic("a bug")
				}
				return errors.New("the endpoint answered 503")
			})
			f.runner(t, RunnerOptions{MaxAttempts: 3, BackoffMin: 10 * time.Millisecond})
			f.enqueue(t, kernel.Job{Name: "webhooks.deliver"})
			eventually(t, 10*time.Second, "the job is dropped", func() bool {
				return strings.Contains(f.logs.String(), "job dropped after its last attempt")
			})
			// The runner logs the drop before it deletes the row: the row goes right after.
			eventually(t, 5*time.Second, "the dropped job is deleted", func() bool { return len(f.rows(t)) == 0 })
			time.Sleep(100 * time.Millisecond)
			if n := calls.Load(); n != 3 {
				t.Fatalf("%d attempts, want 3", n)
			}
			if !strings.Contains(f.logs.String(), "panic: a bug") {
				t.Errorf("the panic is not logged:\n%s", f.logs)
			}
		})

		t.Run("leaves a job it has no handler for to another process, logging the name once", func(t *testing.T) {
			f := mustFixture(t, e)
			newer := NewQueue(f.db, QueueOptions{}) // a process of a newer version enqueues a job this one lacks
			newer.Register("files.scan", nop)
			f.q.Register("runs.stall_check", nop)
			for range 2 {
				if err := newer.Enqueue(context.Background(), kernel.Job{Name: "files.scan"}); err != nil {
					t.Fatal(err)
				}
			}
			f.runner(t, RunnerOptions{PollInterval: 20 * time.Millisecond})
			eventually(t, 5*time.Second, "both jobs were put back", func() bool {
				var n int
				err := f.pool.QueryRow(f.db.Dialect().Rebind(`SELECT COUNT(*) FROM goqite WHERE received = 0 AND timeout > ?`),
					timeArg(f.db.Dialect().Name(), time.Now().Add(30*time.Second))).Scan(&n)
				return err == nil && n == 2
			})
			if n := strings.Count(f.logs.String(), "no handler for this job"); n != 1 {
				t.Fatalf("logged %d times:\n%s", n, f.logs)
			}
		})

		t.Run("runs a periodic job at the start and every interval, on one row", func(t *testing.T) {
			f := mustFixture(t, e)
			var runs atomic.Int32
			f.q.RegisterPeriodic("idempotency.cleanup", 200*time.Millisecond, func(context.Context, json.RawMessage) error {
				runs.Add(1)
				return nil
			})
			start := time.Now()
			f.runner(t, RunnerOptions{})
			eventually(t, 5*time.Second, "the first run", func() bool { return runs.Load() >= 1 })
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("the first run came %s after the start", took)
			}
			eventually(t, 5*time.Second, "the third run", func() bool { return runs.Load() >= 3 })
			if took := time.Since(start); took < 400*time.Millisecond {
				t.Errorf("three runs within %s, want one every 200ms", took)
			}
			rows := f.rows(t)
			if _, ok := rows[periodicID("idempotency.cleanup")]; !ok || len(rows) != 1 {
				t.Fatalf("the queue holds %v", rows)
			}
		})

		t.Run("a periodic job that fails its last attempt runs again after its interval", func(t *testing.T) {
			f := mustFixture(t, e)
			var calls atomic.Int32
			f.q.RegisterPeriodic("idempotency.cleanup", 300*time.Millisecond, func(context.Context, json.RawMessage) error {
				calls.Add(1)
				return errors.New("the database is away")
			})
			f.runner(t, RunnerOptions{MaxAttempts: 2, BackoffMin: 10 * time.Millisecond})
			eventually(t, 10*time.Second, "the first attempt of the next run", func() bool { return calls.Load() >= 3 })
			if !strings.Contains(f.logs.String(), "periodic job failed its last attempt") {
				t.Errorf("logs:\n%s", f.logs)
			}
			if rows := f.rows(t); len(rows) != 1 {
				t.Fatalf("the queue holds %v", rows)
			}
		})

		t.Run("a second runner keeps the same schedule of a periodic job", func(t *testing.T) {
			f := mustFixture(t, e)
			f.q.RegisterPeriodic("idempotency.cleanup", time.Hour, nop)
			f.runner(t, RunnerOptions{})
			f.runner(t, RunnerOptions{})
			eventually(t, 5*time.Second, "the first run", func() bool {
				var n int
				err := f.pool.QueryRow(f.db.Dialect().Rebind(`SELECT COUNT(*) FROM goqite WHERE timeout > ?`),
					timeArg(f.db.Dialect().Name(), time.Now().Add(30*time.Minute))).Scan(&n)
				return err == nil && n == 1
			})
			if rows := f.rows(t); len(rows) != 1 {
				t.Fatalf("the queue holds %v", rows)
			}
		})

		t.Run("the sweep clears a job whose last attempt never finished and revives a periodic one", func(t *testing.T) {
			f := mustFixture(t, e)
			f.q.Register("runs.stall_check", nop)
			f.q.RegisterPeriodic("idempotency.cleanup", time.Hour, nop)
			f.enqueue(t, kernel.Job{Name: "runs.stall_check", Key: "dead"})
			past := timeArg(f.db.Dialect().Name(), time.Now().Add(-time.Minute))
			body, _ := json.Marshal(envelope{Name: "idempotency.cleanup", Args: json.RawMessage("null")})
			if _, err := f.pool.Exec(f.db.Dialect().Rebind(insertSQL), periodicID("idempotency.cleanup"), queueName, body, past); err != nil {
				t.Fatal(err)
			}
			if _, err := f.pool.Exec(f.db.Dialect().Rebind(`UPDATE goqite SET received = 5, timeout = ?`), past); err != nil {
				t.Fatal(err)
			}
			r := NewRunner(f.q, RunnerOptions{Pool: f.pool, MaxAttempts: 5, Logger: slog.New(slog.NewTextHandler(f.logs, nil))})
			r.sweep(context.Background())
			rows := f.rows(t)
			if n, ok := rows[periodicID("idempotency.cleanup")]; !ok || n != 0 || len(rows) != 1 {
				t.Fatalf("the queue holds %v", rows)
			}
			if !strings.Contains(f.logs.String(), "jobs=1") {
				t.Errorf("logs:\n%s", f.logs)
			}
		})

		t.Run("stops after the job in hand is done", func(t *testing.T) {
			f := mustFixture(t, e)
			started, release := make(chan struct{}), make(chan struct{})
			f.q.Register("runs.cancel_timeout", func(ctx context.Context, _ json.RawMessage) error {
				close(started)
				<-release
				return ctx.Err()
			})
			r := f.runner(t, RunnerOptions{})
			f.enqueue(t, kernel.Job{Name: "runs.cancel_timeout"})
			<-started
			stopped := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				stopped <- r.Stop(ctx)
			}()
			select {
			case err := <-stopped:
				t.Fatalf("Stop returned %v with a job in hand", err)
			case <-time.After(100 * time.Millisecond):
			}
			close(release)
			if err := <-stopped; err != nil {
				t.Fatalf("Stop = %v", err)
			}
			if rows := f.rows(t); len(rows) != 0 {
				t.Fatalf("the finished job is still in the queue: %v", rows)
			}
			f.enqueue(t, kernel.Job{Name: "runs.cancel_timeout"})
			time.Sleep(100 * time.Millisecond)
			if rows := f.rows(t); len(rows) != 1 {
				t.Fatalf("a stopped runner took a job: %v", rows)
			}
		})

		t.Run("ends the handler's context when the shutdown budget runs out", func(t *testing.T) {
			f := mustFixture(t, e)
			started, ended := make(chan struct{}), make(chan struct{})
			f.q.Register("runs.cancel_timeout", func(ctx context.Context, _ json.RawMessage) error {
				close(started)
				<-ctx.Done()
				close(ended)
				return ctx.Err()
			})
			r := f.runner(t, RunnerOptions{})
			f.enqueue(t, kernel.Job{Name: "runs.cancel_timeout"})
			<-started
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if err := r.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Stop = %v", err)
			}
			select {
			case <-ended:
			case <-time.After(5 * time.Second):
				t.Fatal("the handler's context did not end")
			}
		})
	})
}

func TestWakeOtherProcesses(t *testing.T) {
	ctx := context.Background()
	where := storetest.Postgres.NewDatabase(t) // skips without a PostgreSQL cluster
	api := storetest.Postgres.OpenAt(t, where, storage.Options{})
	worker := storetest.Postgres.OpenAt(t, where, storage.Options{})
	enqueuer := NewQueue(api, QueueOptions{NotifyOthers: true})
	enqueuer.Register("runs.queued_expiry", nop)
	f := &fixture{db: worker, q: NewQueue(worker, QueueOptions{}), pool: mustPool(t, storetest.Postgres, where), logs: &logBuffer{}}
	ran := make(chan struct{}, 1)
	f.q.Register("runs.queued_expiry", func(context.Context, json.RawMessage) error { ran <- struct{}{}; return nil })
	r := f.runner(t, RunnerOptions{}) // polls once a minute
	lctx, cancel := context.WithCancel(ctx)
	listening := make(chan error, 1)
	go func() { listening <- postgres.ListenWake(lctx, where, "bothy-jobs-test", NotifyChannel, r.Wake, nil) }()
	t.Cleanup(func() { cancel(); <-listening })
	time.Sleep(200 * time.Millisecond) // the listener connects; a notification before that is made up by its wake at connect

	t.Run("a job due now that another process enqueues runs within a second, not a poll interval", func(t *testing.T) {
		start := time.Now()
		if err := enqueuer.Enqueue(ctx, kernel.Job{Name: "runs.queued_expiry"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ran:
			t.Logf("the job ran %s after Enqueue began, in the other process", time.Since(start))
		case <-time.After(5 * time.Second):
			t.Fatal("the job did not run within 5 s")
		}
	})
	t.Run("a job enqueued in a unit that rolls back never reaches the other process", func(t *testing.T) {
		err := api.Do(ctx, func(ctx context.Context) error {
			if err := enqueuer.Enqueue(ctx, kernel.Job{Name: "runs.queued_expiry"}); err != nil {
				return err
			}
			return errors.New("rolled back")
		})
		if err == nil {
			t.Fatal("the unit committed")
		}
		select {
		case <-ran:
			t.Fatal("a rolled back job ran")
		case <-time.After(300 * time.Millisecond):
		}
	})
}

func TestBackoff(t *testing.T) {
	r := &Runner{o: RunnerOptions{BackoffMin: time.Second, BackoffMax: 5 * time.Second}}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 40: 5 * time.Second} {
		if got := r.backoff(attempt); got != want {
			t.Errorf("backoff(%d) = %s, want %s", attempt, got, want)
		}
	}
}
