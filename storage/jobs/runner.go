package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"maragu.dev/goqite"

	"bothy.dev/bothy/storage/engine"
)

// RunnerOptions tune a Runner. The zero value of each field means its default.
type RunnerOptions struct {
	// Pool is a writable pool on the store's database for goqite's receiver, which runs its own
	// transactions: neither the store's write connection (the writer holds it) nor its read pool
	// (read only on both engines). On SQLite it is a second write connection to the file,
	// which takes the write lock only to receive, extend, reschedule or delete a job (reading
	// the next due time takes none) and waits for the writer with busy_timeout. Required.
	Pool *sql.DB
	// Workers is how many jobs run at once. Default 4.
	Workers int
	// MaxAttempts is goqite's MaxReceive: how often a job is handed out before it is dropped,
	// its first run included. Default 5.
	MaxAttempts int
	// Timeout is goqite's Timeout: a received job is hidden from every receiver this long, and
	// extended by as much while its handler runs, so that it comes back this long after the
	// process running it died. Default 30 s.
	Timeout time.Duration
	// BackoffMin and BackoffMax bound the wait before a failed job runs again: BackoffMin after
	// the first failure, doubled after each next one, never more than BackoffMax. Defaults
	// 1 s and 10 min (with 5 attempts: 1 s, 2 s, 4 s, 8 s).
	BackoffMin, BackoffMax time.Duration
	// PollInterval is the longest the runner waits before it looks at the queue again when no
	// job is due: a job enqueued in this process wakes it after the commit, and it sleeps no
	// longer than until the next due job; the poll finds the jobs of other processes and
	// those whose process died. Default 1 s.
	PollInterval time.Duration
	// UnknownDelay is how long a job this process has no handler for waits before it is handed
	// out again (uncounted). Default 1 min.
	UnknownDelay time.Duration
	// SweepInterval is how often the runner schedules the periodic jobs that have no schedule
	// and clears the jobs whose last attempt never finished. Default 1 min.
	SweepInterval time.Duration
	Logger        *slog.Logger
	// Observe is told of each run of a job, for traces and metrics: the context it returns is
	// the handler's, and done is called with the handler's outcome. nil: none.
	Observe func(ctx context.Context, name string) (context.Context, func(err error))
}

func (o *RunnerOptions) defaults() {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.BackoffMin <= 0 {
		o.BackoffMin = time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 10 * time.Minute
	}
	o.BackoffMax = max(o.BackoffMax, o.BackoffMin)
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.UnknownDelay <= 0 {
		o.UnknownDelay = time.Minute
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// minWait is the pause of the loop when a job was due but another receiver took it first, or
// the receive met a conflict, so that a race never turns into a busy loop.
const minWait = 20 * time.Millisecond

// Runner receives due jobs from the queue and runs their handlers (roles all and worker).
type Runner struct {
	q      *Queue
	gq     *goqite.Queue
	pool   *sql.DB
	flavor engine.Name
	o      RunnerOptions
	log    *slog.Logger

	mu       sync.Mutex
	running  bool          // Run has begun
	stopping chan struct{} // closed by Stop: receive no more
	drained  chan struct{} // closed by Run once it receives no more and the jobs in hand are done
	inflight sync.WaitGroup

	// handlerCtx is the context of every handler: it does not end with Run's context, so that
	// a job in hand finishes; abort ends it when Stop's budget runs out.
	handlerCtx context.Context
	abort      context.CancelFunc

	unknownMu sync.Mutex
	unknown   map[string]bool // names logged as unknown, once each
}

// NewRunner returns a runner on q's database that receives through o.Pool.
func NewRunner(q *Queue, o RunnerOptions) *Runner {
	if o.Pool == nil {
		panic("jobs: NewRunner without a pool")
	}
	o.defaults()
	flavor := q.flavor()
	handlerCtx, abort := context.WithCancel(context.Background())
	return &Runner{
		q: q,
		gq: goqite.New(goqite.NewOpts{DB: o.Pool, Name: queueName, SQLFlavor: goqiteFlavor(flavor),
			MaxReceive: o.MaxAttempts, Timeout: o.Timeout}),
		pool:       o.Pool,
		flavor:     flavor,
		o:          o,
		log:        o.Logger,
		stopping:   make(chan struct{}),
		drained:    make(chan struct{}),
		handlerCtx: handlerCtx,
		abort:      abort,
		unknown:    map[string]bool{},
	}
}

// Wake makes the runner look at the queue now: for a wake-up from another process (a
// notification). Jobs enqueued through this process's Queue wake it by themselves.
func (r *Runner) Wake() { r.q.signal() }

// Run seals the registry of handlers, schedules the periodic jobs, then receives and runs
// jobs until ctx ends or Stop is called, and then receives no more. It returns once ctx has
// ended and the jobs in hand are done: their handlers' contexts do not end with ctx (Stop
// bounds the wait). It returns nil; a failing database is logged and tried again, never fatal.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		panic("jobs: a runner runs once")
	}
	r.running = true
	r.mu.Unlock()
	r.q.seal()
	defer r.abort()
	r.log.Info("job runner started", "workers", r.o.Workers, "max_attempts", r.o.MaxAttempts, "poll_interval", r.o.PollInterval)
	r.sweep(ctx)
	nextSweep := time.Now().Add(r.o.SweepInterval)
	slots := make(chan struct{}, r.o.Workers)
	failing := false
loop:
	for {
		if time.Now().After(nextSweep) {
			r.sweep(ctx)
			nextSweep = time.Now().Add(r.o.SweepInterval)
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break loop
		case <-r.stopping:
			break loop
		}
		if r.ended(ctx) {
			<-slots
			break
		}
		// Look before taking: reading the next due time is a plain read, where goqite's
		// receive is a write (on SQLite it takes the file's write lock even when it finds
		// nothing), so an idle runner writes nothing and leaves the store's writer alone.
		if wait, due := r.untilNextDue(ctx); !due {
			<-slots
			r.wait(ctx, wait)
			continue
		}
		m, err := r.receive(ctx)
		if err == nil && failing {
			failing = false
			r.log.Info("job runner: receiving again")
		}
		switch {
		case err != nil && r.q.db.Dialect().IsRetryable(err):
			// Another receiver or the store's writer held the queue (SQLite busy, a PostgreSQL
			// serialization failure of goqite's serializable receive): not a failure.
			<-slots
			r.log.Debug("job runner: the receive met a conflict; trying again", "err", err)
			r.wait(ctx, minWait)
		case err != nil:
			<-slots
			if !failing {
				r.log.Warn("job runner: cannot receive; trying again every poll interval", "err", err)
			}
			failing = true
			r.wait(ctx, r.o.PollInterval)
		case m == nil: // another receiver took the due job first
			<-slots
			r.wait(ctx, minWait)
		default:
			r.inflight.Add(1)
			go func() {
				defer r.inflight.Done()
				defer func() { <-slots }()
				r.handle(m)
			}()
		}
	}
	r.inflight.Wait()
	close(r.drained)
	r.log.Info("job runner stopped")
	<-ctx.Done() // after Stop, a background task of the appliance returns at its turn
	return nil
}

// Stop ends the receiving and waits for the jobs in hand until ctx ends (the shutdown budget):
// then it ends their handlers' contexts and returns ctx's error without waiting further. A job
// cut short that way comes back after Timeout, with the attempt counted.
func (r *Runner) Stop(ctx context.Context) error {
	r.mu.Lock()
	select {
	case <-r.stopping:
	default:
		close(r.stopping)
	}
	running := r.running
	r.mu.Unlock()
	if !running { // a Run that begins now receives nothing
		return nil
	}
	select {
	case <-r.drained:
		return nil
	case <-ctx.Done():
		r.abort()
		return fmt.Errorf("jobs: jobs still running at the end of the shutdown budget: %w", ctx.Err())
	}
}

func (r *Runner) ended(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	case <-r.stopping:
		return true
	default:
		return false
	}
}

// receive takes the next due job with goqite's receiver. The receive is not cut by ctx: a job
// received is run, whatever happens to ctx meanwhile.
func (r *Runner) receive(ctx context.Context) (*goqite.Message, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.Timeout)
	defer cancel()
	return r.gq.Receive(ctx)
}

// wait sleeps d, or until a job is enqueued in this process, ctx ends or Stop is called.
func (r *Runner) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.q.wake:
	case <-ctx.Done():
	case <-r.stopping:
	}
}

// untilNextDue reports whether a job is due now (or the queue cannot be read, which the
// receive then reports), and otherwise how long to wait for the next one: no longer than
// PollInterval, which finds the jobs of other processes.
func (r *Runner) untilNextDue(ctx context.Context) (wait time.Duration, due bool) {
	rctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	at, ok, err := r.nextDue(rctx)
	switch {
	case err != nil && ctx.Err() != nil: // the runner is stopping: take nothing more
		return 0, false
	case err != nil:
		return 0, true
	case !ok:
		return r.o.PollInterval, false
	}
	d := time.Until(at)
	if d <= 0 {
		return 0, true
	}
	return min(d, r.o.PollInterval), false
}

// handle runs one received job and settles it: deleted (or a periodic one rescheduled) when it
// succeeded, due again after a backoff when it failed, dropped after its last attempt.
func (r *Runner) handle(m *goqite.Message) {
	var env envelope
	if err := json.Unmarshal(m.Body, &env); err != nil || env.Name == "" {
		r.log.Error("job dropped: its body does not decode", "id", m.ID)
		r.settle(func(ctx context.Context) error { return r.gq.Delete(ctx, m.ID) }, "delete", m.ID)
		return
	}
	reg, ok := r.q.lookup(env.Name)
	if !ok {
		r.unknownMu.Lock()
		first := !r.unknown[env.Name]
		r.unknown[env.Name] = true
		r.unknownMu.Unlock()
		if first {
			r.log.Error("job runner: no handler for this job; its jobs wait for a process that has one",
				"name", env.Name, "id", m.ID, "retry_every", r.o.UnknownDelay)
		}
		r.settle(func(ctx context.Context) error {
			_, err := r.exec(ctx, putBackSQL, timeArg(r.flavor, time.Now().Add(r.o.UnknownDelay)), string(m.ID))
			return err
		}, "put back", m.ID)
		r.q.signal()
		return
	}

	start := time.Now()
	err := r.run(env.Name, reg.h, m.ID, env.Args)
	took := time.Since(start)
	if err == nil {
		r.log.Debug("job done", "name", env.Name, "id", m.ID, "took", took)
		r.done(reg, m.ID)
		return
	}
	var attempt int
	if !r.settle(func(ctx context.Context) (err error) { attempt, err = r.received(ctx, m.ID); return err }, "read the attempts of", m.ID) {
		r.log.Warn("job failed", "name", env.Name, "id", m.ID, "err", err)
		return // it comes back after its timeout, the attempt counted
	}
	if attempt >= r.o.MaxAttempts {
		if reg.every > 0 {
			r.log.Error("periodic job failed its last attempt; it runs again after its interval", "name", env.Name,
				"attempts", attempt, "interval", reg.every, "err", err)
		} else {
			r.log.Error("job dropped after its last attempt", "name", env.Name, "id", m.ID, "attempts", attempt, "err", err)
		}
		r.done(reg, m.ID)
		return
	}
	delay := r.backoff(attempt)
	r.log.Warn("job failed; it runs again", "name", env.Name, "id", m.ID, "attempt", attempt, "of", r.o.MaxAttempts,
		"retry_in", delay, "err", err)
	r.settle(func(ctx context.Context) error { return r.gq.Extend(ctx, m.ID, delay) }, "delay", m.ID)
	r.q.signal() // the loop may sleep until a due time this job had while it ran
}

// done removes a finished job, or moves a periodic one to its next run.
func (r *Runner) done(reg registration, id goqite.ID) {
	if reg.every > 0 {
		r.settle(func(ctx context.Context) error {
			_, err := r.exec(ctx, rescheduleSQL, timeArg(r.flavor, time.Now().Add(reg.every)), string(id))
			return err
		}, "reschedule", id)
		r.q.signal()
		return
	}
	r.settle(func(ctx context.Context) error { return r.gq.Delete(ctx, id) }, "delete", id)
}

// backoff is the wait after the attempt-th failure.
func (r *Runner) backoff(attempt int) time.Duration {
	d := r.o.BackoffMin
	for i := 1; i < attempt && d < r.o.BackoffMax; i++ {
		d *= 2
	}
	return min(d, r.o.BackoffMax)
}

// run calls h with the job's context, extending the job's timeout while it runs, and turns a
// panic into an error.
func (r *Runner) run(name string, h Handler, id goqite.ID, args json.RawMessage) (err error) {
	ctx, cancel := context.WithCancel(r.handlerCtx)
	if r.o.Observe != nil {
		var done func(error)
		ctx, done = r.o.Observe(ctx, name)
		defer func() { done(err) }() // runs last: after the panic became err
	}
	extended := make(chan struct{})
	go func() {
		defer close(extended)
		every := r.o.Timeout * 3 / 4
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				ectx, ecancel := context.WithTimeout(context.WithoutCancel(ctx), every)
				if err := r.gq.Extend(ectx, id, r.o.Timeout); err != nil {
					r.log.Warn("job runner: cannot extend a running job's timeout", "id", id, "err", err)
				}
				ecancel()
			}
		}
	}()
	defer func() {
		cancel()
		<-extended // no extension may overwrite the settlement that follows
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	return h(ctx, args)
}

// settle runs one bookkeeping statement of a job after its handler, with a bound of its own (it
// must not be lost to the end of ctx), and reports whether it succeeded. A failure is logged:
// the job then comes back after its timeout, and a second run is what at-least-once allows.
func (r *Runner) settle(fn func(ctx context.Context) error, what string, id goqite.ID) bool {
	ctx, cancel := context.WithTimeout(context.Background(), r.o.Timeout)
	defer cancel()
	if err := fn(ctx); err != nil {
		r.log.Warn("job runner: cannot "+what+" a job; it comes back after its timeout", "id", id, "err", err)
		return false
	}
	return true
}

// sweep schedules the periodic jobs that have no schedule (or whose last attempt never
// finished) and deletes the other jobs whose last attempt never finished.
func (r *Runner) sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.Timeout)
	defer cancel()
	now := time.Now()
	var errs []error
	for name := range r.q.periodic() {
		body, err := json.Marshal(envelope{Name: name, Args: json.RawMessage("null")})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		id := periodicID(name)
		n, err := r.exec(ctx, insertSQL, id, queueName, body, timeArg(r.flavor, now))
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", name, err))
			continue
		}
		if n > 0 {
			r.log.Info("periodic job scheduled", "name", name)
			r.q.signal()
		}
		if n, err = r.exec(ctx, reviveSQL, timeArg(r.flavor, now), id, r.o.MaxAttempts, timeArg(r.flavor, now)); err != nil {
			errs = append(errs, fmt.Errorf("revive %s: %w", name, err))
		} else if n > 0 {
			r.log.Error("periodic job's last attempt never finished; scheduled again", "name", name)
			r.q.signal()
		}
	}
	n, err := r.exec(ctx, sweepSQL, queueName, r.o.MaxAttempts, timeArg(r.flavor, now))
	if err != nil {
		errs = append(errs, fmt.Errorf("sweep: %w", err))
	} else if n > 0 {
		r.log.Error("jobs dropped: their last attempt never finished", "jobs", n)
	}
	if len(errs) > 0 {
		r.log.Warn("job runner: the sweep failed; it runs again later", "err", errors.Join(errs...))
	}
}
