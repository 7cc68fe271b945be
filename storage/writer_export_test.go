package storage

import (
	"context"
	"database/sql"
)

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
