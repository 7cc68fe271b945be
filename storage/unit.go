package storage

import (
	"context"
	"database/sql"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/commit"
)

// Do runs fn in a Unit of Work; see kernel.UnitOfWork. The store's one writer runs it
// (storage/commit): with the units that queue meanwhile, in one transaction and one COMMIT.
func (db *DB) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return db.w.Do(ctx, fn)
}

// Append buffers a durable event in the Unit of Work of ctx (kernel.EventLog).
func (db *DB) Append(ctx context.Context, e kernel.Event) {
	if !commit.Append(ctx, e) {
		panic("storage: event " + e.Type + " appended outside a unit of work")
	}
}

// Exec runs one statement, written with ? placeholders, in the Unit of Work of ctx: its rows
// commit or roll back with the unit's. It is for the adapter that keeps the SQL of a library's
// own table next to that library (storage/jobs writes goqite's queue rows with it), so that the
// library's rows join the domain transaction (a job exists only if the write that caused
// it committed) although the writer has no
// *sql.Tx per unit to hand out. It panics outside a Unit of Work, like Append: a write outside
// a transaction is a programming error.
func (db *DB) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if !inTx(ctx) {
		panic("storage: Exec outside a unit of work")
	}
	return db.q(ctx).ExecContext(ctx, query, args...)
}

// AfterCommit registers fn to run once the Unit of Work of ctx has committed; never when it
// rolls back or its batch fails (a unit the writer runs again registers again). fn runs on the
// writer's goroutine right after the COMMIT, before the next batch: it must be quick and must
// not block or write (signal a channel without blocking). The job queue wakes its runner with
// it, so that a job due now starts at once and not at the next poll. It panics outside a Unit
// of Work.
func (db *DB) AfterCommit(ctx context.Context, fn func()) {
	if !commit.AfterCommit(ctx, fn) {
		panic("storage: AfterCommit outside a unit of work")
	}
}
