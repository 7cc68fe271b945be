package migrate

import (
	"context"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0016 counts the messages already posted: each thread's post_count holds all of its messages
// (a deleted one too), and each mention names its message's thread, so that a read position
// and its unread mentions work on the rows that were there before it.
func TestReadStateMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		fixture := append(append([]string{}, chatFixture...),
			`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
				VALUES ('p2', 'person', 'pia', 'pia', 'Pia', '`+fixtureAt+`', '`+fixtureAt+`')`,
			`INSERT INTO threads (id, channel_id, space_id, created_by, created_at, updated_at)
				VALUES ('t2', 'c1', 's1', 'p1', '`+fixtureAt+`', '`+fixtureAt+`')`,
			`INSERT INTO threads (id, channel_id, space_id, created_by, created_at, updated_at)
				VALUES ('t3', 'c1', 's1', 'p1', '`+fixtureAt+`', '`+fixtureAt+`')`,
			`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at)
				VALUES ('m2', 't1', 'c1', 's1', 'p1', 'hi @pia', '`+fixtureAt+`')`,
			`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at, deleted_at)
				VALUES ('m3', 't1', 'c1', 's1', 'p1', '', '`+fixtureAt+`', '`+fixtureAt+`')`,
			`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at)
				VALUES ('m4', 't2', 'c1', 's1', 'p1', '@pia there', '`+fixtureAt+`')`,
			`INSERT INTO mentions (message_id, principal_id) VALUES ('m2', 'p2')`,
			`INSERT INTO mentions (message_id, principal_id) VALUES ('m4', 'p2')`,
		)
		w, r := across(t, eng, 16, fixture...)
		for _, c := range []struct {
			thread string
			want   int64
		}{{"t1", 3}, {"t2", 1}, {"t3", 0}} {
			var n int64
			if err := r.QueryRowContext(ctx, `SELECT post_count FROM threads WHERE id = '`+c.thread+`'`).Scan(&n); err != nil || n != c.want {
				t.Errorf("post_count of %s = %d (%v), want %d (every message, a deleted one too)", c.thread, n, err, c.want)
			}
		}
		for _, c := range []struct{ message, thread string }{{"m2", "t1"}, {"m4", "t2"}} {
			var th string
			if err := r.QueryRowContext(ctx, `SELECT thread_id FROM mentions WHERE message_id = '`+c.message+`'`).Scan(&th); err != nil || th != c.thread {
				t.Errorf("the mention of %s names thread %q (%v), want %s", c.message, th, err, c.thread)
			}
		}
		var broadcast string
		if err := r.QueryRowContext(ctx, `SELECT broadcast_mentions FROM instance WHERE id = 1`).Scan(&broadcast); err != nil || broadcast != "post" {
			t.Fatalf("broadcast_mentions %q (%v), want post: anyone who may post may mention the channel", broadcast, err)
		}
		if _, err := w.ExecContext(ctx, `INSERT INTO read_states (principal_id, thread_id, channel_id, last_read_message_id, read_count, updated_at)
			VALUES ('p1', 't1', 'c1', 'm2', 2, '`+fixtureAt+`')`); err != nil {
			t.Fatalf("a read position: %v", err)
		}
		if _, err := w.ExecContext(ctx, `INSERT INTO thread_subscriptions (principal_id, thread_id, level, updated_at)
			VALUES ('p2', 't2', 'loud', '`+fixtureAt+`')`); err == nil {
			t.Fatal("a subscription of an unknown level was stored")
		}
	})
}
