package commit

import (
	"context"
	"database/sql"
	"fmt"
)

// sqliteWriteConn runs a batch on SQLite: every statement prepared once on the one connection
// and run at once, one by one (an in-process database has no round trips to save). BEGIN
// IMMEDIATE takes the write lock, so reading event_seq needs no lock of its own.
type sqliteWriteConn struct {
	w     *Writer
	conn  *sql.Conn
	stmts *stmtCache

	pagesSinceCheckpoint int
}

func (c *sqliteWriteConn) units() Querier { return c.stmts }

func (c *sqliteWriteConn) savepointAlone() bool { return false }

func (c *sqliteWriteConn) exec(q string) error {
	_, err := c.stmts.ExecContext(context.Background(), q)
	return err
}

func (c *sqliteWriteConn) begin(savepoint bool) (int64, error) {
	var committed int64
	if err := c.exec(c.w.dialect.BeginWrite()); err != nil {
		return 0, err
	}
	if err := c.stmts.QueryRowContext(context.Background(), lockCounter).Scan(&committed); err != nil {
		return 0, fmt.Errorf("lock event_seq: %w", err)
	}
	if savepoint {
		return committed, c.exec("SAVEPOINT uow")
	}
	return committed, nil
}

func (c *sqliteWriteConn) execWithNext(q string, args ...any) error {
	_, err := c.stmts.ExecContext(context.Background(), q, args...)
	return err
}

func (c *sqliteWriteConn) nextSavepoint() error {
	if err := c.exec("RELEASE SAVEPOINT uow"); err != nil {
		return err
	}
	return c.exec("SAVEPOINT uow")
}

// commit: SQLite has one process per file, which wakes its tails in process (Options.Committed);
// a COMMIT that fails has not committed.
func (c *sqliteWriteConn) commit(committed, head int64) error {
	if head != committed {
		if _, err := c.stmts.ExecContext(context.Background(), `UPDATE sequence_counters SET value = ? WHERE name = 'event_seq'`, head); err != nil {
			return err
		}
	}
	return c.exec("COMMIT")
}

// reconnectIfLost: the connection to a file does not get lost.
func (c *sqliteWriteConn) reconnectIfLost() bool { return false }

// afterCommit checkpoints the WAL between batches, on the writer itself, so that a checkpoint
// never runs inside a commit and the WAL never outgrows journal_size_limit under steady load.
func (c *sqliteWriteConn) afterCommit(n int) {
	c.pagesSinceCheckpoint += 4 * n // a message-shaped write touches about four pages
	if c.pagesSinceCheckpoint < c.w.opts.CheckpointPages {
		return
	}
	c.pagesSinceCheckpoint = 0
	if err := c.exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		c.w.log.Warn("wal checkpoint", "err", err)
	}
}

func (c *sqliteWriteConn) close() {
	c.stmts.close()
	c.conn.Close()
}
