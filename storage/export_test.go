package storage

import (
	"context"
	"database/sql"
	"testing"
)

// ExecInTest runs one statement in its own Unit of Work; the authz and identity tests use it
// to lay out rows that other modules own (spaces, channels) without depending on their code.
func ExecInTest(tb testing.TB, db *DB, q string, args ...any) {
	tb.Helper()
	err := db.Do(context.Background(), func(ctx context.Context) error {
		_, err := db.q(ctx).ExecContext(ctx, q, args...)
		return err
	})
	if err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

// ExecIn runs one statement on the querier of ctx: the transaction of its Unit of Work, or the
// (read-only) read pool outside one. The writer's tests use it to make a statement fail inside
// a unit, or to try a write outside one.
func ExecIn(ctx context.Context, db *DB, q string, args ...any) (sql.Result, error) {
	return db.q(ctx).ExecContext(ctx, q, args...)
}

// ScanIn reads one row of one column on the querier of ctx into dest.
func ScanIn(ctx context.Context, db *DB, q string, dest any, args ...any) error {
	return db.q(ctx).QueryRowContext(ctx, q, args...).Scan(dest)
}

// QueuedUnits is how many Units of Work wait for the writer. A test that needs several units in
// one batch holds the writer with a unit until the others have queued.
func QueuedUnits(db *DB) int { return db.w.Queued() }

// MaxPrefixWordsForTest is how many words SQLite's expansion of a prefix takes.
const MaxPrefixWordsForTest = maxPrefixWords

// QueryInTest runs a query on the read pool and hands each row's Scan to row.
func QueryInTest(tb testing.TB, db *DB, q string, row func(scan func(...any) error), args ...any) {
	tb.Helper()
	rows, err := db.q(context.Background()).QueryContext(context.Background(), q, args...)
	if err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	for rows.Next() {
		row(rows.Scan)
	}
	if err := rows.Err(); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}
