package migrate

import (
	"context"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0020 adds messages.components and interactions to a database with messages in it: the
// message stays without components, takes a JSON document of them, and an interaction with it
// is stored while one with a message that does not exist is refused.
func TestMessageComponentsMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		w, r := across(t, eng, 20, chatFixture...)
		var n int
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE components IS NULL`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d messages without components after 0020, %v", n, err)
		}
		if _, err := w.ExecContext(ctx, `UPDATE messages SET components = '[{"components":[]}]' WHERE id = 'm1'`); err != nil {
			t.Fatalf("set components: %v", err)
		}
		interact := func(id, message string) error {
			_, err := w.ExecContext(ctx, `INSERT INTO interactions (id, message_id, thread_id, channel_id, component_id, picked, user_id, created_at)
				VALUES ('`+id+`', '`+message+`', 't1', 'c1', 'ok', '[]', 'p1', '`+fixtureAt+`')`)
			return err
		}
		if err := interact("i1", "m1"); err != nil {
			t.Fatalf("interaction: %v", err)
		}
		if err := interact("i2", "m2"); err == nil {
			t.Fatal("an interaction with a message that does not exist was stored")
		}
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM interactions WHERE message_id = 'm1'`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d interactions, %v", n, err)
		}
	})
}
