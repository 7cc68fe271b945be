// Package storage implements the ports of the domain modules once, in SQL that SQLite and
// PostgreSQL both accept, on top of a Dialect that holds the few real differences. It owns the
// event log and the repositories, and starts the write path (storage/commit: the Unit of Work,
// one writer with group commit) on its write connection.
//
// It must not hold engine-specific code outside a switch on the dialect, and it never calls the
// network inside a transaction.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/commit"
	"bothy.dev/bothy/storage/engine"
)

// Dialect is what differs between the engines.
type Dialect interface {
	Name() engine.Name
	// Rebind turns ? placeholders into the engine's own.
	Rebind(q string) string
	// BeginWrite is the statement that opens a write transaction. It may hold several
	// statements separated by semicolons (PostgreSQL's sets the transaction's timeouts in the
	// same round trip); the writer runs it unprepared there.
	BeginWrite() string
	// ForUpdate is the clause that locks a selected row until commit ("" where the write
	// transaction already excludes every other writer, as SQLite's does).
	ForUpdate() string
	IsUniqueViolation(err error) bool
	// IsRetryable reports a transient conflict after which the whole Unit of Work may run again.
	IsRetryable(err error) bool
}

// Options tune the write path.
type Options struct {
	// MaxBatch bounds how many Units of Work share one commit. 1 turns group commit off.
	MaxBatch int
	// CheckpointPages: after a commit, the writer checkpoints the WAL when it holds at least
	// this many pages (SQLite only). 0 means 2000.
	CheckpointPages int
	// TxRetryMax is how many times the writer runs a batch again after a transient conflict
	// (SQLite busy; PostgreSQL deadlock, lock timeout, serialization failure, or a connection
	// lost before COMMIT): database.tx_retry_max. 0 means 3; below 0 means never.
	TxRetryMax int
	// BenchCommitDelay is a benchmark-only hook: the writer sleeps this long before each
	// COMMIT, to simulate a slow disk's fsync. Never set it in production.
	BenchCommitDelay time.Duration
	Logger           *slog.Logger
	Clock            kernel.Clock
	// Observer watches the write path's units and batches (telemetry); nil for none.
	Observer commit.Observer
}

// DB is the store: one write path, a read pool, the event log head.
type DB struct {
	dialect Dialect
	writeDB *sql.DB
	readDB  *sql.DB
	opts    Options
	log     *slog.Logger
	clock   kernel.Clock

	rebindMu sync.RWMutex
	rebinds  map[string]string

	w *commit.Writer

	// readStmts holds statements prepared on the read pool, by query text: preparing costs as
	// much as running a small query, and the same few queries run on every request.
	readStmts sync.Map // string → *sql.Stmt
	readStmtN atomic.Int32

	head     atomic.Int64 // highest committed seq
	notifyMu sync.Mutex
	notifyCh chan struct{} // closed and replaced at each commit that appended events
}

// Open starts the write path on writeDB (which must allow exactly one connection) and reads
// through readDB. The schema must be migrated.
func Open(ctx context.Context, d Dialect, writeDB, readDB *sql.DB, o Options) (*DB, error) {
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.CheckpointPages <= 0 {
		o.CheckpointPages = 2000
	}
	switch {
	case o.TxRetryMax == 0:
		o.TxRetryMax = 3
	case o.TxRetryMax < 0:
		o.TxRetryMax = 0
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = kernel.SystemClock{}
	}
	db := &DB{dialect: d, writeDB: writeDB, readDB: readDB, opts: o, log: o.Logger, clock: o.Clock,
		rebinds: map[string]string{}, notifyCh: make(chan struct{})}
	head, err := db.readCounter(ctx)
	if err != nil {
		return nil, err
	}
	db.head.Store(head)
	w, err := commit.Start(ctx, d, writeDB, commit.Options{MaxBatch: o.MaxBatch, CheckpointPages: o.CheckpointPages,
		TxRetryMax: o.TxRetryMax, BenchCommitDelay: o.BenchCommitDelay, Logger: o.Logger, Clock: o.Clock, Committed: db.advanceHead, Observer: o.Observer,
		ByReference: byReference})
	if err != nil {
		return nil, err
	}
	db.w = w
	return db, nil
}

// Close stops the write path after the batch in flight and closes both pools.
func (db *DB) Close() error {
	db.w.Stop()
	db.readStmts.Range(func(k, v any) bool { v.(*sql.Stmt).Close(); return true })
	return errors.Join(db.writeDB.Close(), db.readDB.Close())
}

// Dialect returns the engine's dialect.
func (db *DB) Dialect() Dialect { return db.dialect }

// Head returns the highest committed seq this process knows of: its own commits, and on
// PostgreSQL the other nodes' as AdvanceHead and RefreshHead learn them.
func (db *DB) Head() int64 { return db.head.Load() }

// ReadHead returns the highest committed seq (app/catchup's Log). On PostgreSQL another node may
// have committed since this process last heard, so it reads event_seq (and advances Head);
// on SQLite every commit of the file's one server passes through this process.
func (db *DB) ReadHead(ctx context.Context) (int64, error) {
	switch db.dialect.Name() {
	case engine.SQLite:
		return db.Head(), nil
	case engine.Postgres:
		if err := db.RefreshHead(ctx); err != nil {
			return 0, err
		}
		return db.Head(), nil
	default:
		panic("storage: unknown dialect " + string(db.dialect.Name()))
	}
}

// AdvanceHead records a head committed elsewhere (another node, told by LISTEN/NOTIFY: the
// onHead of postgres.Listen) and wakes the log tails if it is new. An old head does nothing.
func (db *DB) AdvanceHead(head int64) { db.advanceHead(head) }

// RefreshHead reads the committed head from the database and advances Head to it: the poll
// that bridges a lost notification or a LISTEN connection being re-established.
func (db *DB) RefreshHead(ctx context.Context) error {
	head, err := db.readCounter(ctx)
	if err != nil {
		return err
	}
	db.advanceHead(head)
	return nil
}

func (db *DB) readCounter(ctx context.Context) (int64, error) {
	var head int64
	if err := db.readDB.QueryRowContext(ctx, `SELECT value FROM sequence_counters WHERE name = 'event_seq'`).Scan(&head); err != nil {
		return 0, fmt.Errorf("storage: read event_seq: %w", err)
	}
	return head, nil
}

// Changed returns a channel that is closed at the next commit that appends events. Log tails
// wait on it: the in-process wake-up after a commit (see docs/architecture.md, The write
// path).
func (db *DB) Changed() <-chan struct{} {
	db.notifyMu.Lock()
	defer db.notifyMu.Unlock()
	return db.notifyCh
}

// advanceHead records a committed head and wakes the log tails if it moved. Heads only move
// forward.
func (db *DB) advanceHead(head int64) {
	for {
		cur := db.head.Load()
		if head <= cur {
			return
		}
		if db.head.CompareAndSwap(cur, head) {
			break
		}
	}
	db.wake()
}

func (db *DB) wake() {
	db.notifyMu.Lock()
	close(db.notifyCh)
	db.notifyCh = make(chan struct{})
	db.notifyMu.Unlock()
}

// Ping checks that the database answers a read.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return db.readDB.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// querier is what repositories run SQL on: the transaction of the Unit of Work, or the read pool.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// q returns the querier for ctx: the ambient Unit of Work if there is one, else the read pool.
// Queries are written with ? placeholders and rebound here.
func (db *DB) q(ctx context.Context) querier {
	if c := commit.Conn(ctx); c != nil {
		return rebinding{db, c}
	}
	return rebinding{db, readPool{db}}
}

var errCacheFull = errors.New("statement cache full")

// maxReadStmts bounds the statements prepared on the read pool.
const maxReadStmts = 512

// readPool runs queries on the read pool with statements prepared once.
type readPool struct{ db *DB }

func (p readPool) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if s, ok := p.db.readStmts.Load(q); ok {
		return s.(*sql.Stmt), nil
	}
	if p.db.readStmtN.Load() >= maxReadStmts {
		return nil, errCacheFull // a dynamic query (an IN list of varying length): run it unprepared
	}
	s, err := p.db.readDB.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	p.db.readStmtN.Add(1)
	if prev, loaded := p.db.readStmts.LoadOrStore(q, s); loaded {
		s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

func (p readPool) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return p.db.readDB.ExecContext(ctx, q, args...)
}

func (p readPool) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	s, err := p.stmt(ctx, q)
	if err != nil {
		return p.db.readDB.QueryContext(ctx, q, args...)
	}
	return s.QueryContext(ctx, args...)
}

func (p readPool) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	s, err := p.stmt(ctx, q)
	if err != nil {
		return p.db.readDB.QueryRowContext(ctx, q, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// inTx reports whether ctx carries a Unit of Work.
func inTx(ctx context.Context) bool { return commit.InUnit(ctx) }

func (db *DB) rebind(q string) string {
	if db.dialect.Name() == engine.SQLite {
		return q
	}
	db.rebindMu.RLock()
	r, ok := db.rebinds[q]
	db.rebindMu.RUnlock()
	if ok {
		return r
	}
	r = db.dialect.Rebind(q)
	db.rebindMu.Lock()
	db.rebinds[q] = r
	db.rebindMu.Unlock()
	return r
}

type rebinding struct {
	db *DB
	q  querier
}

func (r rebinding) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return r.q.ExecContext(ctx, r.db.rebind(q), args...)
}
func (r rebinding) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return r.q.QueryContext(ctx, r.db.rebind(q), args...)
}
func (r rebinding) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return r.q.QueryRowContext(ctx, r.db.rebind(q), args...)
}

// mapErr turns driver errors into domain errors at the adapter edge, so that the domain sees
// only its own codes: no rows → not_found, unique violation → conflict. Others pass through
// wrapped.
func (db *DB) mapErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return kernel.ErrNotFound
	case db.dialect.IsUniqueViolation(err):
		return &kernel.Error{Code: kernel.CodeConflict, Message: what + " already exists"}
	}
	var ke *kernel.Error
	if errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("storage: %s: %w", what, err)
}

// Time is stored as fixed-width UTC text so that it sorts as text on both engines, in
// the same order as the times.
const timeLayout = commit.TimeLayout

func fmtTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func fmtTimePtr(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return fmtTime(*t)
}

func parseTime(s string) time.Time {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func parseNullTime(s sql.NullString) *time.Time {
	if !s.Valid {
		return nil
	}
	t := parseTime(s.String)
	return &t
}

// nullID maps the zero id to SQL NULL.
func nullID(id kernel.ID) any {
	if id.IsZero() {
		return nil
	}
	return string(id)
}

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// OnCommit registers fn, handed the events of each batch right after its COMMIT, on the writer's
// goroutine, before the next batch begins, after the functions registered before it: the
// permission cache observes this process's own commits without waiting for the log tail, so the
// next batch finds it current, and the notifier takes them without reading them back. fn must be
// quick and never block or write.
func (db *DB) OnCommit(fn func(events []kernel.LoggedEvent)) { db.w.OnCommit(fn) }
