package migrate

import (
	"context"
	"database/sql"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0023 adds messages.triggers to a database with messages in it: a message posted before has
// none (NULL), and a new message takes its per-agent triggers as one JSON text.
func TestMessageTriggersMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		w, r := across(t, eng, 23, chatFixture...)
		var old sql.NullString
		if err := r.QueryRowContext(ctx, `SELECT triggers FROM messages WHERE id = 'm1'`).Scan(&old); err != nil || old.Valid {
			t.Fatalf("the message from before 0023 has triggers %v, %v; want NULL", old, err)
		}
		const doc = `[{"agent_id":"a1","state":"agent_disabled"},{"agent_id":"a2","state":"triggered","run_id":"r1"}]`
		if _, err := w.ExecContext(ctx, `INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at, triggers)
			VALUES ('m2', 't1', 'c1', 's1', 'p1', '@a @b', '`+fixtureAt+`', '`+doc+`')`); err != nil {
			t.Fatalf("a message with triggers: %v", err)
		}
		var got string
		if err := r.QueryRowContext(ctx, `SELECT triggers FROM messages WHERE id = 'm2'`).Scan(&got); err != nil || got != doc {
			t.Fatalf("triggers %q, %v", got, err)
		}
	})
}
