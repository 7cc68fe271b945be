package migrate

import (
	"context"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0014 adds message_pins to a database with messages in it: the messages stay, a message takes
// one pin, and a second pin of the same message or a pin of a message that does not exist is
// refused.
func TestMessagePinsMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		w, r := across(t, eng, 14, chatFixture...)
		var n int
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d messages after 0014, %v", n, err)
		}
		pin := func(message string) error {
			_, err := w.ExecContext(ctx, `INSERT INTO message_pins (message_id, channel_id, thread_id, pinned_by, pinned_at)
				VALUES ('`+message+`', 'c1', 't1', 'p1', '`+fixtureAt+`')`)
			return err
		}
		if err := pin("m1"); err != nil {
			t.Fatalf("pin: %v", err)
		}
		if err := pin("m1"); err == nil {
			t.Fatal("a second pin of m1 was stored")
		}
		if err := pin("m2"); err == nil {
			t.Fatal("a pin of a message that does not exist was stored")
		}
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM message_pins WHERE channel_id = 'c1'`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d pins, %v", n, err)
		}
	})
}
