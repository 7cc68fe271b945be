package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/engine"
)

// The write path (see docs/architecture.md, The write path). One goroutine owns the one write connection. Units of Work queue
// for it; whatever queued while a commit was in flight runs as the next batch: one transaction,
// each Unit of Work in its own SAVEPOINT (a failure rolls back alone), the events of each
// numbered right after it succeeds, then one COMMIT for all, and all are answered after it.
// seq is therefore gapless and in commit order, and a batch costs one fsync.

type txState struct {
	conn   querier
	events []kernel.Event
	// threadBumps are the message counts a unit adds to threads, applied once per thread at the
	// batch's commit (applyThreadBumps). A busy thread's row is the hottest row there is: one
	// UPDATE per message would cost a statement each (a round trip on PostgreSQL) and take its
	// row lock in whatever order the units came; one per thread per batch, in id order, does not.
	threadBumps map[kernel.ID]threadBump
	// logged are the unit's events as stored, kept for Options.OnCommit.
	logged []kernel.LoggedEvent
	// afterCommit are the unit's AfterCommit functions, run once the batch has committed.
	afterCommit []func()
	batch       *batchView
	// head is the seq of the last event before the unit's own: the batch's base plus what the
	// units before it in the batch appended. The unit's first event gets head+1.
	head int64
}

// batchView is the kernel.TxView of one unit: the batch's base seq and the event types that
// the batch's earlier units (types) and the unit itself (events) appended.
type batchView struct {
	base  int64
	types map[string]bool
}

type unitView struct {
	b  *batchView
	st *txState
}

func (v unitView) BaseSeq() int64 { return v.b.base }

func (v unitView) Appended(types ...string) bool {
	for _, t := range types {
		if v.b.types[t] {
			return true
		}
		for _, e := range v.st.events {
			if e.Type == t {
				return true
			}
		}
	}
	return false
}

type threadBump struct {
	n    int64
	last string // the latest message time, fixed-width text
}

// bumpThread defers adding n messages posted at last to thread id to the commit of the batch.
// It reports false outside a Unit of Work (the caller then updates at once).
func bumpThread(ctx context.Context, id kernel.ID, n int64, last string) bool {
	st := txFrom(ctx)
	if st == nil {
		return false
	}
	if st.threadBumps == nil {
		st.threadBumps = map[kernel.ID]threadBump{}
	}
	st.threadBumps[id] = mergeBump(st.threadBumps[id], threadBump{n, last})
	return true
}

func mergeBump(a, b threadBump) threadBump {
	if b.last < a.last {
		b.last = a.last
	}
	return threadBump{n: a.n + b.n, last: b.last}
}

type txKey struct{}

func txFrom(ctx context.Context) *txState {
	st, _ := ctx.Value(txKey{}).(*txState)
	return st
}

type job struct {
	ctx  context.Context
	fn   func(ctx context.Context) error
	err  error
	done chan struct{}
}

type writer struct {
	db    *DB
	conn  *sql.Conn
	stmts *stmtCache
	multi multiExecer // PostgreSQL only
	queue pgQueue
	jobs  chan *job
	quit  chan struct{}
	wg    sync.WaitGroup

	pagesSinceCheckpoint int
}

func startWriter(ctx context.Context, db *DB) (*writer, error) {
	conn, err := db.writeDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: writer connection: %w", err)
	}
	w := &writer{db: db, conn: conn, stmts: newStmtCache(conn), jobs: make(chan *job, 4096), quit: make(chan struct{})}
	if db.dialect.Name() == engine.Postgres {
		m, ok := db.dialect.(multiExecer)
		if !ok {
			conn.Close()
			return nil, fmt.Errorf("storage: the postgres dialect %T has no ExecMulti", db.dialect)
		}
		w.multi = m
	}
	w.wg.Add(1)
	go w.run()
	return w, nil
}

func (w *writer) stop() {
	close(w.quit)
	w.wg.Wait()
	w.stmts.close()
	if w.conn != nil {
		w.conn.Close()
	}
}

// Do runs fn in a Unit of Work; see kernel.UnitOfWork.
func (db *DB) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if inTx(ctx) {
		return fn(ctx)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &job{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case db.w.jobs <- j:
	case <-db.w.quit:
		return kernel.Errorf(kernel.CodeUnavailable, "the store is shutting down")
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, the job is answered by the writer even if ctx ends: the caller must learn
	// whether its write committed.
	<-j.done
	return j.err
}

func (w *writer) run() {
	defer w.wg.Done()
	batch := make([]*job, 0, w.db.opts.MaxBatch)
	for {
		select {
		case <-w.quit:
			// Answer what is still queued so no caller waits forever.
			for {
				select {
				case j := <-w.jobs:
					j.err = kernel.Errorf(kernel.CodeUnavailable, "the store is shutting down")
					close(j.done)
				default:
					return
				}
			}
		case j := <-w.jobs:
			batch = append(batch[:0], j)
		fill:
			for len(batch) < w.db.opts.MaxBatch {
				select {
				case j := <-w.jobs:
					batch = append(batch, j)
				default:
					break fill
				}
			}
			batch = w.runBatch(batch)
			for _, j := range batch {
				close(j.done)
			}
		}
	}
}

// exec runs a transaction-control statement (BEGIN, SAVEPOINT, COMMIT …). SQLite prepares
// each once; PostgreSQL runs them unprepared, one simple-protocol round trip either way, which
// lets BeginWrite carry several statements.
func (w *writer) exec(q string, args ...any) error {
	var err error
	switch w.db.dialect.Name() {
	case engine.SQLite:
		_, err = w.stmts.ExecContext(context.Background(), q, args...)
	case engine.Postgres:
		_, err = w.conn.ExecContext(context.Background(), q, args...)
	default:
		panic("storage: unknown dialect " + string(w.db.dialect.Name()))
	}
	return err
}

// errCommitUnknown marks a COMMIT whose answer never came: the batch may have committed, so it
// must not run again.
var errCommitUnknown = errors.New("the connection failed during COMMIT")

// runBatch runs batch until it commits or fails for good, and returns it with the units it took
// in while it ran (every one of them must be answered).
func (w *writer) runBatch(batch []*job) []*job {
	for attempt := 0; ; attempt++ {
		err := w.tryBatch(&batch)
		if err == nil {
			return batch
		}
		lost := w.reconnectIfLost()
		if (lost && !errors.Is(err, errCommitUnknown) || w.db.dialect.IsRetryable(err)) && attempt < w.db.opts.TxRetryMax {
			w.db.log.Debug("retrying a batch", "err", err, "attempt", attempt+1, "batch", len(batch))
			time.Sleep(time.Duration(attempt+1)*10*time.Millisecond + time.Duration(rand.Int64N(int64(5*time.Millisecond))))
			continue
		}
		w.db.log.Error("commit failed", "err", err, "batch", len(batch), "attempts", attempt+1)
		for _, j := range batch {
			if j.err == nil || w.db.dialect.IsRetryable(j.err) {
				j.err = kernel.Errorf(kernel.CodeUnavailable, "the write could not be committed")
			}
		}
		return batch
	}
}

// reconnectIfLost replaces the write connection after a failure that left it unusable
// (PostgreSQL restarted, a network cut). It reports whether it had to; a new connection that
// cannot be had yet is tried again at the next failure.
func (w *writer) reconnectIfLost() bool {
	if w.db.dialect.Name() == engine.SQLite {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if w.conn != nil && w.conn.PingContext(ctx) == nil {
		return false
	}
	w.stmts.close()
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
	conn, err := w.db.writeDB.Conn(ctx)
	if err != nil {
		w.db.log.Warn("the write connection is lost and cannot be replaced yet", "err", err)
		w.stmts = newStmtCache(nil)
		return true
	}
	w.db.log.Warn("replaced the lost write connection")
	w.conn, w.stmts = conn, newStmtCache(conn)
	return true
}

// tryBatch runs one batch in one transaction. It returns an error only when the transaction as a
// whole failed (begin, counter, commit, or a Unit of Work that met a transient conflict, which
// rolls the whole batch back to run it again); the other errors of single Units of Work go to
// their jobs.
//
// The event counter is read, and on PostgreSQL locked, at the start of the batch, inside the
// transaction: another process may have written since (bothy setup bootstrap-owner beside a
// running server; another api node), so a head kept in memory would hand out a seq twice. The
// lock is held to the COMMIT, which makes seq gapless in commit order.
//
// A batch keeps one savepoint, "uow": a failed unit rolls back to it (which keeps it for the
// next unit), a unit that succeeded releases it and sets it again. The events of a unit are
// inserted before the next unit runs, so that a unit sees the log its predecessors left (a
// deletion redacts the events of a creation earlier in the batch).
//
// SQLite runs every statement prepared, one by one (no round trips to save). PostgreSQL sends
// the statements around the units together (writer.multi): BEGIN, the timeouts, the counter
// lock and the first savepoint in one round trip; a unit's events with the release and the
// next savepoint in one; the last unit's events with the counter update, pg_notify and COMMIT in
// one. A batch of n units then costs its units' own statements plus n+1 round trips (it was
// 3n+5; measured +25% events/s for one-event units, +10% for message creates). The last unit's
// events travel with the COMMIT, so a failure of their INSERT (which no unit causes) fails the
// batch rather than that unit.
//
// A batch of several units takes in the units that queue while it runs, up to MaxBatch: with a
// few concurrent writers the batches would otherwise alternate between one unit (whatever came
// while the last commit was in flight) and the rest, and pay a commit each. Measured on
// PostgreSQL with 8 writers: 3,380 -> 4,274 events/s for one-event units.
func (w *writer) tryBatch(bp *[]*job) (err error) {
	batch := *bp
	defer func() { *bp = batch }()
	for _, j := range batch {
		j.err = nil
	}
	if w.conn == nil {
		return errors.New("no write connection")
	}
	// On PostgreSQL even a batch of one keeps a savepoint (it travels with BEGIN: no round trip),
	// so that it can take in what queues while it runs. On SQLite a lone unit runs without one.
	single := len(batch) == 1 && w.db.dialect.Name() == engine.SQLite
	w.queue.reset()
	committed, err := w.begin(!single)
	defer func() {
		if err != nil { // after a COMMIT that went unanswered too: harmless if it committed
			_ = w.exec("ROLLBACK")
		}
	}()
	if err != nil {
		return err
	}
	head := committed
	ok := 0
	var bumps map[kernel.ID]threadBump
	view := &batchView{base: committed, types: map[string]bool{}}
	var logged []kernel.LoggedEvent
	var after []func()
	for i := 0; i < len(batch); i++ {
		j := batch[i]
		if err := j.ctx.Err(); err != nil {
			j.err = err
			continue
		}
		st := &txState{conn: w.stmts, batch: view, head: head}
		ctx := context.WithValue(context.WithoutCancel(j.ctx), txKey{}, st)
		ctx = kernel.WithTxView(ctx, unitView{view, st})
		ferr := callSafely(ctx, j.fn)
		var n int64
		if ferr == nil {
			n, ferr = w.appendEvents(ctx, st, head)
		}
		if ferr == nil && !single && i == len(batch)-1 && len(batch) < w.db.opts.MaxBatch {
			select {
			case nj := <-w.jobs:
				batch = append(batch, nj)
			default:
			}
		}
		if ferr == nil && !single && i < len(batch)-1 {
			ferr = w.nextSavepoint()
		}
		if ferr != nil {
			j.err = ferr
			if w.db.dialect.IsRetryable(ferr) {
				return ferr
			}
			if single {
				return w.exec("ROLLBACK") // an error here is the connection's: the batch runs again
			}
			// The savepoint stays after ROLLBACK TO: the next unit starts from it.
			if err := w.exec("ROLLBACK TO SAVEPOINT uow"); err != nil {
				return err
			}
			continue
		}
		head += n
		ok++
		for _, e := range st.events {
			view.types[e.Type] = true
		}
		logged = append(logged, st.logged...)
		after = append(after, st.afterCommit...)
		for id, b := range st.threadBumps {
			if bumps == nil {
				bumps = map[kernel.ID]threadBump{}
			}
			bumps[id] = mergeBump(bumps[id], b)
		}
	}
	if ok == 0 {
		return w.exec("ROLLBACK")
	}
	if err := w.applyThreadBumps(bumps); err != nil {
		return err
	}
	if d := w.db.opts.BenchCommitDelay; d > 0 {
		time.Sleep(d)
	}
	if err := w.commit(committed, head); err != nil {
		var answered interface{ SQLState() string } // PostgreSQL refused: nothing committed
		if w.db.dialect.Name() == engine.SQLite || errors.As(err, &answered) {
			return err
		}
		return fmt.Errorf("%w: %w", errCommitUnknown, err)
	}
	if head != committed {
		w.db.advanceHead(head)
		if fn := w.db.onCommit.Load(); fn != nil && len(logged) > 0 {
			(*fn)(logged)
		}
	}
	for _, fn := range after {
		fn()
	}
	w.afterCommit(len(batch))
	return nil
}

// bumpThreadSQL adds a batch's net count (never below zero) and moves last_message_at forward
// only (an empty last: the batch removed messages only).
const bumpThreadSQL = `UPDATE threads SET message_count = CASE WHEN message_count + ? < 0 THEN 0 ELSE message_count + ? END,
	last_message_at = CASE WHEN ? <> '' AND (last_message_at IS NULL OR last_message_at < ?) THEN ? ELSE last_message_at END WHERE id = ?`

// applyThreadBumps adds the batch's messages to their threads, in id order: every batch takes
// thread rows in the same order, so two writers on one PostgreSQL database cannot deadlock on
// them. On PostgreSQL the updates travel with the COMMIT (no round trip of their own).
func (w *writer) applyThreadBumps(bumps map[kernel.ID]threadBump) error {
	if len(bumps) == 0 {
		return nil
	}
	ids := make([]kernel.ID, 0, len(bumps))
	for id := range bumps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b := bumps[id]
		switch w.db.dialect.Name() {
		case engine.SQLite:
			if _, err := w.stmts.ExecContext(context.Background(), bumpThreadSQL, b.n, b.n, b.last, b.last, b.last, string(id)); err != nil {
				return fmt.Errorf("bump thread: %w", err)
			}
		case engine.Postgres:
			w.queue.addParams(bumpThreadSQL, b.n, b.n, b.last, b.last, b.last, string(id))
		default:
			panic("storage: unknown dialect " + string(w.db.dialect.Name()))
		}
	}
	return nil
}

const lockCounter = `SELECT value FROM sequence_counters WHERE name = 'event_seq'`

// begin opens the batch's transaction, reads (and on PostgreSQL locks) event_seq and, for a
// batch of several units, sets the savepoint of the first.
func (w *writer) begin(savepoint bool) (int64, error) {
	var committed int64
	switch w.db.dialect.Name() {
	case engine.SQLite:
		if err := w.exec(w.db.dialect.BeginWrite()); err != nil {
			return 0, err
		}
		if err := w.stmts.QueryRowContext(context.Background(), lockCounter).Scan(&committed); err != nil {
			return 0, fmt.Errorf("lock event_seq: %w", err)
		}
		if savepoint {
			return committed, w.exec("SAVEPOINT uow")
		}
		return committed, nil
	case engine.Postgres:
		q := w.db.dialect.BeginWrite() + "; " + lockCounter + w.db.dialect.ForUpdate()
		if savepoint {
			q += "; SAVEPOINT uow"
		}
		v, err := w.multi.ExecMulti(context.Background(), w.conn, q)
		if err != nil {
			return 0, fmt.Errorf("lock event_seq: %w", err)
		}
		if committed, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, fmt.Errorf("lock event_seq: read %q: %w", v, err)
		}
		return committed, nil
	default:
		panic("storage: unknown dialect " + string(w.db.dialect.Name()))
	}
}

// nextSavepoint releases the savepoint of the unit that just succeeded and sets the next one's;
// PostgreSQL sends the unit's events along.
func (w *writer) nextSavepoint() error {
	switch w.db.dialect.Name() {
	case engine.SQLite:
		if err := w.exec("RELEASE SAVEPOINT uow"); err != nil {
			return err
		}
		return w.exec("SAVEPOINT uow")
	case engine.Postgres:
		w.queue.add("RELEASE SAVEPOINT uow; SAVEPOINT uow")
		if err := w.flush(); err != nil {
			return fmt.Errorf("storage: append events: %w", err)
		}
		return nil
	default:
		panic("storage: unknown dialect " + string(w.db.dialect.Name()))
	}
}

// commit advances event_seq from committed to head if the batch appended events, wakes the
// other nodes (notify), and commits. On PostgreSQL the last unit's events go along, and the
// integers the writer computed are written into the statements.
func (w *writer) commit(committed, head int64) error {
	switch w.db.dialect.Name() {
	case engine.SQLite:
		if head != committed {
			if _, err := w.stmts.ExecContext(context.Background(), `UPDATE sequence_counters SET value = ? WHERE name = 'event_seq'`, head); err != nil {
				return err
			}
		}
		return w.exec("COMMIT")
	case engine.Postgres:
		if head != committed {
			w.queue.add(`UPDATE sequence_counters SET value = ` + strconv.FormatInt(head, 10) + ` WHERE name = 'event_seq'`)
			w.queue.add(notifyStatement(head))
		}
		w.queue.add("COMMIT")
		return w.flush()
	default:
		panic("storage: unknown dialect " + string(w.db.dialect.Name()))
	}
}

// flush sends PostgreSQL's queued statements in one round trip.
func (w *writer) flush() error {
	_, err := w.multi.ExecMulti(context.Background(), w.conn, w.queue.sql.String(), w.queue.args...)
	w.queue.reset()
	return err
}

// multiExecer is a dialect whose driver sends a string of several statements, with arguments,
// in one round trip (postgres.Dialect.ExecMulti).
type multiExecer interface {
	ExecMulti(ctx context.Context, conn *sql.Conn, q string, args ...any) (string, error)
}

// pgQueue is the statements PostgreSQL's writer sends with its next round trip, $n numbered.
type pgQueue struct {
	sql  strings.Builder
	args []any
}

func (q *pgQueue) reset() { q.sql.Reset(); q.args = q.args[:0] }

func (q *pgQueue) add(stmt string) {
	if q.sql.Len() > 0 {
		q.sql.WriteString("; ")
	}
	q.sql.WriteString(stmt)
}

// addParams appends a statement written with ? placeholders and its arguments.
func (q *pgQueue) addParams(stmt string, args ...any) {
	if q.sql.Len() > 0 {
		q.sql.WriteString("; ")
	}
	n := len(q.args)
	for i := 0; i < len(stmt); i++ {
		if stmt[i] == '?' {
			n++
			q.sql.WriteByte('$')
			q.sql.WriteString(strconv.Itoa(n))
			continue
		}
		q.sql.WriteByte(stmt[i])
	}
	q.args = append(q.args, args...)
}

// afterCommit checkpoints the WAL between batches, on the writer itself, so that a checkpoint
// never runs inside a commit and the WAL never outgrows journal_size_limit under steady load.
func (w *writer) afterCommit(n int) {
	if w.db.dialect.Name() != engine.SQLite {
		return
	}
	w.pagesSinceCheckpoint += 4 * n // a message-shaped write touches about four pages
	if w.pagesSinceCheckpoint < w.db.opts.CheckpointPages {
		return
	}
	w.pagesSinceCheckpoint = 0
	if err := w.exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		w.db.log.Warn("wal checkpoint", "err", err)
	}
}

func callSafely(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in unit of work: %v\n%s", r, debug.Stack())
		}
	}()
	return fn(ctx)
}

// appendEvents numbers the events of one Unit of Work after head and inserts them (PostgreSQL:
// queues the INSERT for the writer's next round trip). The statement is written with ?
// placeholders: SQLite takes them as they are, pgQueue.addParams numbers them for PostgreSQL.
func (w *writer) appendEvents(ctx context.Context, st *txState, head int64) (int64, error) {
	if len(st.events) == 0 {
		return 0, nil
	}
	now := fmtTime(w.db.clock.Now())
	var sb strings.Builder
	sb.WriteString(`INSERT INTO event_log (seq, type, space_id, channel_id, thread_id, principal_id, subject_id, actor_id, payload, created_at) VALUES `)
	args := make([]any, 0, len(st.events)*10)
	for i, e := range st.events {
		payload, err := json.Marshal(e.Payload)
		if err != nil {
			return 0, fmt.Errorf("storage: encode %s payload: %w", e.Type, err)
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, head+int64(i)+1, e.Type, nullID(e.Scope.SpaceID), nullID(e.Scope.ChannelID),
			nullID(e.Scope.ThreadID), nullID(e.Scope.PrincipalID), nullID(e.SubjectID), nullID(e.ActorID),
			string(payload), now)
		if w.db.onCommit.Load() != nil {
			st.logged = append(st.logged, kernel.LoggedEvent{Seq: head + int64(i) + 1, Type: e.Type, Scope: e.Scope,
				SubjectID: e.SubjectID, ActorID: e.ActorID, Payload: payload, CreatedAt: parseTime(now)})
		}
	}
	switch w.db.dialect.Name() {
	case engine.SQLite:
		if _, err := st.conn.ExecContext(ctx, sb.String(), args...); err != nil {
			return 0, fmt.Errorf("storage: append events: %w", err)
		}
	case engine.Postgres:
		w.queue.addParams(sb.String(), args...) // sent with the next savepoint or the COMMIT
	default:
		panic("storage: unknown dialect " + string(w.db.dialect.Name()))
	}
	return int64(len(st.events)), nil
}

// Append buffers a durable event in the Unit of Work of ctx (kernel.EventLog).
func (db *DB) Append(ctx context.Context, e kernel.Event) {
	st := txFrom(ctx)
	if st == nil {
		panic("storage: event " + e.Type + " appended outside a unit of work")
	}
	st.events = append(st.events, e)
}

// stmtCache prepares each statement once on the write connection.
type stmtCache struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
}

func newStmtCache(conn *sql.Conn) *stmtCache {
	return &stmtCache{conn: conn, stmts: map[string]*sql.Stmt{}}
}

const maxCachedStmts = 512

func (c *stmtCache) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if s, ok := c.stmts[q]; ok {
		return s, nil
	}
	s, err := c.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if len(c.stmts) >= maxCachedStmts { // dynamic statements (multi-row inserts) must not grow it forever
		c.close()
	}
	c.stmts[q] = s
	return s, nil
}

func (c *stmtCache) close() {
	for q, s := range c.stmts {
		s.Close()
		delete(c.stmts, q)
	}
}

func (c *stmtCache) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	s, err := c.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

func (c *stmtCache) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	s, err := c.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// QueryRowContext cannot report a prepare error through *sql.Row, so it falls back to the
// connection, which reports it at Scan.
func (c *stmtCache) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	s, err := c.stmt(ctx, q)
	if err != nil {
		return c.conn.QueryRowContext(ctx, q, args...)
	}
	return s.QueryRowContext(ctx, args...)
}
