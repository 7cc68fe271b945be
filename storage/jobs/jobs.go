// Package jobs is the job queue (see docs/architecture.md, Jobs) on maragu.dev/goqite (v0.4.0, both of its SQL
// flavours): Queue enqueues a job in the Unit of Work that causes it (kernel.Jobs) and holds the
// handlers by name; Runner receives due jobs with goqite's receiver, runs their handlers, tries
// a failed job again with exponential backoff and drops it after its last attempt, and keeps the
// periodic jobs scheduled. The queue is goqite's table in the store's own database
// (migrate 0006_jobs), one goqite queue named "bothy" for every job.
//
// A runner reads the next due time (a plain read) and sleeps until then, at most a poll
// interval; the commit of a unit that enqueued a job wakes the runner of its process at once
// (storage.DB.AfterCommit), and on PostgreSQL an api process wakes the others' runners with a
// NOTIFY in the unit (QueueOptions.NotifyOthers, postgres.ListenWake).
//
// goqite is imported here and nowhere else in bothy (arch_test.go). The SQL this package writes
// itself (the insert, and what goqite's API has no call for: the next due time, the attempt
// count, a periodic job's next run) sits in sql.go, in goqite's schema, with one switch on the
// flavour at each spot where the engines differ.
//
// Why the insert is not goqite's SendTx: the store runs each Unit of Work inside a SAVEPOINT of
// a transaction shared by a batch (storage's writer) and has no *sql.Tx to hand out, so Enqueue
// writes goqite's row with goqite's own statement through storage.DB.Exec, which commits or
// rolls back with the unit. The tests hold that goqite's receiver reads what Enqueue writes.
//
// Times in the queue are the wall clock's (time.Now), not the store's kernel.Clock: goqite's
// receiver compares them with time.Now.
//
// It must not hold a domain rule: handlers are the modules' use cases, registered by the
// appliance. A job's arguments are ids only, never content; this package logs a job's name, id
// and attempt, never its arguments.
package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
)

// Handler runs one job. args is the JSON that Enqueue encoded from kernel.Job.Args ("null"
// when there were none). It returns nil when the job is done, an error to have it tried again
// after a backoff. It runs at least once per job and may run again (a crash, a lost answer), so
// it reads the current state and does nothing when nothing is left to do. It must end when ctx
// ends (the shutdown budget ran out).
type Handler func(ctx context.Context, args json.RawMessage) error

// queueName is the one goqite queue of bothy: every job shares it, the name is in the body.
const queueName = "bothy"

// Limits of a job, held by Enqueue: arguments are a few ids.
const (
	maxArgsBytes = 4096
	maxKeyBytes  = 200
)

// envelope is the body of a goqite message: the job's name and its arguments.
type envelope struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type registration struct {
	h     Handler
	every time.Duration // > 0: a periodic job
}

// Queue is the enqueue side (kernel.Jobs) and the registry of handlers. Every role builds one:
// api processes enqueue, all and worker also run a Runner on it.
type Queue struct {
	db *storage.DB
	o  QueueOptions

	mu       sync.RWMutex
	handlers map[string]registration
	sealed   bool

	// wake is signalled after each commit of a unit that enqueued a job (storage.AfterCommit),
	// so that a runner in this process looks at the queue at once.
	wake chan struct{}
}

var _ kernel.Jobs = (*Queue)(nil)

// QueueOptions tune a Queue.
type QueueOptions struct {
	// NotifyOthers makes Enqueue wake the runners of other processes when it adds a job due
	// within a second (their poll finds the later ones in time): on PostgreSQL a
	// pg_notify(NotifyChannel) in the Unit of Work, delivered at its commit, which the runners
	// receive through postgres.ListenWake. For processes that run no jobs themselves (role
	// api); every NOTIFY takes a database-wide lock at commit, so the others leave it off.
	// SQLite has one process per file and ignores it.
	NotifyOthers bool
}

// NotifyChannel is the PostgreSQL channel of QueueOptions.NotifyOthers; its payload is empty.
const NotifyChannel = "bothy_jobs"

// notifyWithin is how soon a job must be due for NotifyOthers to wake the other processes: the
// runners' default poll interval.
const notifyWithin = time.Second

// NewQueue returns the queue on db's database, with no handler yet.
func NewQueue(db *storage.DB, o QueueOptions) *Queue {
	return &Queue{db: db, o: o, handlers: map[string]registration{}, wake: make(chan struct{}, 1)}
}

// Register makes h the handler of the jobs named name. Names are module.verb in lower case
// letters, digits, '.' and '_'. It panics on a bad or taken name and after a Runner started:
// registration is wiring, done once before the process serves.
func (q *Queue) Register(name string, h Handler) { q.register(name, registration{h: h}) }

// RegisterPeriodic makes h the handler of the periodic job name, which runs every interval:
// first when a runner starts and finds no schedule for it (a new instance, or a job new in this
// version), then every interval after each run, whether it succeeded or failed after its last
// attempt; a failed run is tried again with backoff like any job. The schedule is one row of
// the queue, keyed by the name, so several worker processes keep one schedule and one of them
// runs each occurrence. A changed interval applies from the next run on.
func (q *Queue) RegisterPeriodic(name string, every time.Duration, h Handler) {
	if every <= 0 {
		panic("jobs: periodic job " + name + " needs a positive interval")
	}
	q.register(name, registration{h: h, every: every})
}

func (q *Queue) register(name string, r registration) {
	if !validName(name) {
		panic(fmt.Sprintf("jobs: bad job name %q: want lower case letters, digits, '.' and '_'", name))
	}
	if r.h == nil {
		panic("jobs: nil handler for " + name)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.sealed {
		panic("jobs: register after the runner started: " + name)
	}
	if _, ok := q.handlers[name]; ok {
		panic("jobs: job registered twice: " + name)
	}
	q.handlers[name] = r
}

func validName(name string) bool {
	if name == "" || len(name) > 100 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

func (q *Queue) seal() { q.mu.Lock(); q.sealed = true; q.mu.Unlock() }

func (q *Queue) lookup(name string) (registration, bool) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	r, ok := q.handlers[name]
	return r, ok
}

// periodic returns the periodic jobs by name.
func (q *Queue) periodic() map[string]registration {
	q.mu.RLock()
	defer q.mu.RUnlock()
	out := map[string]registration{}
	for n, r := range q.handlers {
		if r.every > 0 {
			out[n] = r
		}
	}
	return out
}

// Enqueue implements kernel.Jobs: it writes goqite's row for j through the Unit of Work of ctx
// (storage.DB.Exec), and wakes this process's runner after the commit.
func (q *Queue) Enqueue(ctx context.Context, j kernel.Job) error {
	reg, ok := q.lookup(j.Name)
	switch {
	case !ok:
		return fmt.Errorf("jobs: no handler is registered for job %q", j.Name)
	case reg.every > 0:
		return fmt.Errorf("jobs: %s is periodic: its runner schedules it", j.Name)
	case len(j.Key) > maxKeyBytes:
		return fmt.Errorf("jobs: the key of a %s job is %d bytes, more than %d", j.Name, len(j.Key), maxKeyBytes)
	}
	args, err := json.Marshal(j.Args)
	if err != nil {
		return fmt.Errorf("jobs: encode the arguments of a %s job: %w", j.Name, err)
	}
	if len(args) > maxArgsBytes {
		return fmt.Errorf("jobs: the arguments of a %s job are %d bytes, more than %d: a job carries ids, never content", j.Name, len(args), maxArgsBytes)
	}
	body, err := json.Marshal(envelope{Name: j.Name, Args: args})
	if err != nil {
		return fmt.Errorf("jobs: encode a %s job: %w", j.Name, err)
	}
	id := string(kernel.NewID())
	if j.Key != "" {
		id = keyedID(j.Name, j.Key)
	}
	at := time.Now()
	if j.At.After(at) {
		at = j.At
	}
	return q.db.Do(ctx, func(ctx context.Context) error {
		if _, err := q.db.Exec(ctx, insertSQL, id, queueName, body, timeArg(q.flavor(), at)); err != nil {
			return fmt.Errorf("jobs: enqueue a %s job: %w", j.Name, err)
		}
		if q.o.NotifyOthers && time.Until(at) < notifyWithin {
			if err := q.notify(ctx); err != nil {
				return fmt.Errorf("jobs: enqueue a %s job: wake the runners: %w", j.Name, err)
			}
		}
		q.db.AfterCommit(ctx, q.signal)
		return nil
	})
}

// keyedID is the goqite id of a job with a key: the same name and key make the same id, so the
// primary key dedupes them (insertSQL does nothing on a conflict). Names hold no ':'.
func keyedID(name, key string) string { return "k:" + name + ":" + key }

// periodicID is the goqite id of a periodic job's one row.
func periodicID(name string) string { return "p:" + name }

// signal wakes the runner without blocking (it runs on the store's writer goroutine).
func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *Queue) flavor() engine.Name { return q.db.Dialect().Name() }

// notify wakes the runners of other processes at the commit of the unit of ctx. PostgreSQL
// sends one notification per transaction however many units of a batch ask for it.
func (q *Queue) notify(ctx context.Context) error {
	switch q.flavor() {
	case engine.SQLite:
		return nil
	case engine.Postgres:
		_, err := q.db.Exec(ctx, notifySQL)
		return err
	default:
		panic("jobs: unknown dialect " + string(q.flavor()))
	}
}
