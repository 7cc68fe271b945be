package commit

import (
	"context"
	"database/sql"
	"fmt"

	"bothy.dev/bothy/storage/engine"
)

// Dialect is what the writer needs of the engine's dialect (storage.Dialect has it).
type Dialect interface {
	Name() engine.Name
	// BeginWrite is the statement that opens a write transaction; it may hold several
	// statements separated by semicolons.
	BeginWrite() string
	// ForUpdate is the clause that locks a selected row until commit.
	ForUpdate() string
	// IsRetryable reports a transient conflict after which the whole batch may run again.
	IsRetryable(err error) bool
}

// writeConn is the writer's one connection as an engine drives a batch's transaction on it. The
// writer runs the same algorithm on both engines (Writer.tryBatch); what differs is how the
// statements around the units reach the database: SQLite runs each prepared, one by one, on its
// connection (no round trips to save, sqliteWriteConn); PostgreSQL queues them and sends them
// together with the next transaction-control statement, one round trip for several
// (postgresWriteConn).
//
// Every statement is written with ? placeholders.
type writeConn interface {
	// units is what the batch's Units of Work run their own statements on, prepared once.
	units() Querier
	// savepointAlone reports whether a batch of one unit still sets a savepoint. Where it costs
	// nothing (it travels with BEGIN) it does, so that the batch can take in what queues while
	// its unit runs; elsewhere a lone unit runs without one and rolls back whole.
	savepointAlone() bool
	// begin opens the batch's transaction, reads event_seq and locks it to the COMMIT, and, if
	// savepoint, sets the savepoint "uow" of the first unit. It returns event_seq.
	begin(savepoint bool) (int64, error)
	// exec runs a transaction-control statement (ROLLBACK, ROLLBACK TO SAVEPOINT) at once.
	exec(q string) error
	// execWithNext runs q in the transaction no later than the next of nextSavepoint or commit:
	// at once where statements cost no round trip, else in the same round trip as that one
	// (its error is then theirs).
	execWithNext(q string, args ...any) error
	// nextSavepoint releases the savepoint of the unit that just succeeded and sets the next
	// unit's.
	nextSavepoint() error
	// commit sets event_seq to head if it moved from committed, wakes the tails of every process
	// on the database, and commits. An error wrapping errCommitUnknown says the COMMIT went
	// unanswered: the batch may have committed.
	commit(committed, head int64) error
	// reconnectIfLost replaces a connection that a failure left unusable and reports whether it
	// had to.
	reconnectIfLost() bool
	// afterCommit runs between batches, after a batch of n units committed.
	afterCommit(n int)
	close()
}

// lockCounter reads event_seq at the start of a batch; the engine's ForUpdate locks it.
const lockCounter = `SELECT value FROM sequence_counters WHERE name = 'event_seq'`

// openWriteConn takes the write connection from w.writeDB, driven as w's engine drives it.
func openWriteConn(ctx context.Context, w *Writer) (writeConn, error) {
	conn, err := w.writeDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: writer connection: %w", err)
	}
	switch w.dialect.Name() {
	case engine.SQLite:
		return &sqliteWriteConn{w: w, conn: conn, stmts: newStmtCache(conn)}, nil
	case engine.Postgres:
		m, ok := w.dialect.(multiExecer)
		if !ok {
			conn.Close()
			return nil, fmt.Errorf("storage: the postgres dialect %T has no ExecMulti", w.dialect)
		}
		return &postgresWriteConn{w: w, conn: conn, stmts: newStmtCache(conn), multi: m}, nil
	default:
		conn.Close()
		panic("storage: unknown dialect " + string(w.dialect.Name()))
	}
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
