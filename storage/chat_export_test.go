package storage

import (
	"context"
	"testing"
)

// ExecForChatTests runs one statement in its own Unit of Work; the chat, messaging and sync
// tests use it to lay out principals, which identity owns, without depending on its code.
func ExecForChatTests(tb testing.TB, db *DB, q string, args ...any) {
	tb.Helper()
	err := db.Do(context.Background(), func(ctx context.Context) error {
		_, err := db.q(ctx).ExecContext(ctx, q, args...)
		return err
	})
	if err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}
