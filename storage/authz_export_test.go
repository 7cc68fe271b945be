package storage

import (
	"context"
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
