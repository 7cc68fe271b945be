package migrate

import (
	"context"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0019 moves the unread counters onto the rows the unread read has already: each thread names
// its newest message, and each read position holds its person's mentions in its thread and
// those read, counted from the mentions there were; a person mentioned in a thread without a
// position gets one that has read nothing, so that their mentions count.
func TestUnreadCountersMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		fixture := append(append([]string{}, chatFixture...),
			`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
				VALUES ('p2', 'person', 'pia', 'pia', 'Pia', '`+fixtureAt+`', '`+fixtureAt+`')`,
			`INSERT INTO threads (id, channel_id, space_id, created_by, created_at, updated_at)
				VALUES ('t2', 'c1', 's1', 'p1', '`+fixtureAt+`', '`+fixtureAt+`')`,
			`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at)
				VALUES ('m2', 't1', 'c1', 's1', 'p1', 'hi @pia', '`+fixtureAt+`')`,
			`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at)
				VALUES ('m3', 't1', 'c1', 's1', 'p1', 'again @pia', '`+fixtureAt+`')`,
			`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at)
				VALUES ('m4', 't2', 'c1', 's1', 'p1', '@pia there', '`+fixtureAt+`')`,
			`INSERT INTO mentions (message_id, principal_id, thread_id) VALUES ('m2', 'p2', 't1'), ('m3', 'p2', 't1'), ('m4', 'p2', 't2')`,
			// Pia has read t1 up to m2; she has no position in t2.
			`INSERT INTO read_states (principal_id, thread_id, channel_id, last_read_message_id, read_count, updated_at)
				VALUES ('p2', 't1', 'c1', 'm2', 2, '`+fixtureAt+`')`,
		)
		_, r := across(t, eng, 19, fixture...)
		for _, c := range []struct{ thread, want string }{{"t1", "m3"}, {"t2", "m4"}} {
			var last string
			if err := r.QueryRowContext(ctx, `SELECT last_message_id FROM threads WHERE id = '`+c.thread+`'`).Scan(&last); err != nil || last != c.want {
				t.Errorf("last_message_id of %s = %q (%v), want %s", c.thread, last, err, c.want)
			}
		}
		for _, c := range []struct {
			thread, read     string
			mentions, readOf int64
		}{{"t1", "m2", 2, 1}, {"t2", "", 1, 0}} {
			var read string
			var mentions, readOf int64
			err := r.QueryRowContext(ctx, `SELECT last_read_message_id, mention_count, mentions_read FROM read_states
				WHERE principal_id = 'p2' AND thread_id = '`+c.thread+`'`).Scan(&read, &mentions, &readOf)
			if err != nil || read != c.read || mentions != c.mentions || readOf != c.readOf {
				t.Errorf("Pia's position in %s: read %q, %d mentions, %d read (%v); want %q, %d, %d",
					c.thread, read, mentions, readOf, err, c.read, c.mentions, c.readOf)
			}
		}
	})
}
