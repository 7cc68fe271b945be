package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"maragu.dev/goqite"

	"bothy.dev/bothy/storage/engine"
)

// The SQL of this package, in goqite's schema (migrate 0006_jobs), written with ? placeholders:
// storage.DB.Exec rebinds them in a Unit of Work, the runner's pool through the dialect.

// insertSQL is goqite's SendTx statement with the id set here (a UUIDv7, or the key's id) and
// nothing done when that id is in the queue already: the dedupe of kernel.Job.Key.
const insertSQL = `INSERT INTO goqite (id, queue, body, timeout) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`

// notifySQL wakes the runners of other processes (QueueOptions.NotifyOthers, PostgreSQL only).
const notifySQL = `SELECT pg_notify('` + NotifyChannel + `', '')`

// nextDueSQL is the earliest time a job of the queue becomes receivable, by goqite's rule
// (received below MaxReceive, timeout passed); index goqite_queue_timeout_idx serves it.
const nextDueSQL = `SELECT MIN(timeout) FROM goqite WHERE queue = ? AND received < ?`

// receivedSQL is how often goqite has handed out a job: its attempts so far, the one in hand
// included.
const receivedSQL = `SELECT received FROM goqite WHERE id = ?`

// rescheduleSQL moves a periodic job's row to its next run, with its attempts reset.
const rescheduleSQL = `UPDATE goqite SET timeout = ?, received = 0 WHERE id = ?`

// putBackSQL gives a received job back without counting the attempt, due at a later time: a job
// this process has no handler for waits for one that has (a rolling upgrade).
const putBackSQL = `UPDATE goqite SET timeout = ?, received = received - 1 WHERE id = ? AND received > 0`

// reviveSQL gives a periodic job whose last attempt never finished (its process died in it)
// its attempts back: goqite would never hand it out again, and its schedule would end.
const reviveSQL = `UPDATE goqite SET timeout = ?, received = 0 WHERE id = ? AND received >= ? AND timeout <= ?`

// sweepSQL deletes the jobs whose last attempt never finished: goqite never hands them out
// again, and their keys would stay taken.
const sweepSQL = `DELETE FROM goqite WHERE queue = ? AND received >= ? AND timeout <= ?`

// rfc3339Milli is goqite's text time on SQLite: UTC, milliseconds, fixed width, so that it
// sorts as text and compares with what goqite's receiver writes.
const rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"

// timeArg is t as the flavour's goqite binds it: text on SQLite, time.Time on PostgreSQL.
func timeArg(flavor engine.Name, t time.Time) any {
	switch flavor {
	case engine.SQLite:
		return t.UTC().Format(rfc3339Milli)
	case engine.Postgres:
		return t.UTC()
	default:
		panic("jobs: unknown dialect " + string(flavor))
	}
}

func goqiteFlavor(flavor engine.Name) goqite.SQLFlavor {
	switch flavor {
	case engine.SQLite:
		return goqite.SQLFlavorSQLite
	case engine.Postgres:
		return goqite.SQLFlavorPostgreSQL
	default:
		panic("jobs: unknown dialect " + string(flavor))
	}
}

// nextDue reads the earliest time a job becomes receivable; ok is false on an empty queue.
func (r *Runner) nextDue(ctx context.Context) (due time.Time, ok bool, err error) {
	row := r.pool.QueryRowContext(ctx, r.rebind(nextDueSQL), queueName, r.o.MaxAttempts)
	switch r.flavor {
	case engine.SQLite:
		var s sql.NullString
		if err := row.Scan(&s); err != nil || !s.Valid {
			return time.Time{}, false, err
		}
		t, err := time.Parse(rfc3339Milli, s.String)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("jobs: a timeout %q in the queue: %w", s.String, err)
		}
		return t, true, nil
	case engine.Postgres:
		var t sql.NullTime
		if err := row.Scan(&t); err != nil || !t.Valid {
			return time.Time{}, false, err
		}
		return t.Time, true, nil
	default:
		panic("jobs: unknown dialect " + string(r.flavor))
	}
}

func (r *Runner) received(ctx context.Context, id goqite.ID) (int, error) {
	var n int
	err := r.pool.QueryRowContext(ctx, r.rebind(receivedSQL), string(id)).Scan(&n)
	return n, err
}

func (r *Runner) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := r.pool.ExecContext(ctx, r.rebind(q), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (r *Runner) rebind(q string) string { return r.q.db.Dialect().Rebind(q) }

// backlogSQL counts the jobs due now that a runner may still receive (index
// goqite_queue_timeout_idx); a job being run is hidden until its timeout and not counted.
const backlogSQL = `SELECT COUNT(*) FROM goqite WHERE queue = ? AND received < ? AND timeout <= ?`

// Backlog is how many jobs are due and wait for a worker.
func (r *Runner) Backlog(ctx context.Context) (int64, error) {
	var n int64
	err := r.pool.QueryRowContext(ctx, r.rebind(backlogSQL), queueName, r.o.MaxAttempts, timeArg(r.flavor, time.Now())).Scan(&n)
	return n, err
}
