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
		w, r, _ := openEmpty(t, eng)
		if _, err := up(ctx, w, until(t, eng, 13), eng, nil); err != nil {
			t.Fatal(err)
		}
		const at = "2026-03-01T10:00:00.000000Z"
		for _, q := range []string{
			`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
				VALUES ('p1', 'person', 'olga', 'olga', 'Olga', '` + at + `', '` + at + `')`,
			`INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES ('s1', 'Home', 'p1', '` + at + `', '` + at + `')`,
			`INSERT INTO channels (id, space_id, name, main_thread_id, created_by, created_at, updated_at)
				VALUES ('c1', 's1', 'general', 't1', 'p1', '` + at + `', '` + at + `')`,
			`INSERT INTO threads (id, channel_id, space_id, created_by, created_at, updated_at)
				VALUES ('t1', 'c1', 's1', 'p1', '` + at + `', '` + at + `')`,
			`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at)
				VALUES ('m1', 't1', 'c1', 's1', 'p1', 'hello', '` + at + `')`,
		} {
			if _, err := w.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		applied, err := Up(ctx, w, eng, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) == 0 || applied[0].Version != 14 {
			t.Fatalf("applied %v, want 0014 first", versions(applied))
		}
		var n int
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d messages after 0014, %v", n, err)
		}
		pin := func(message string) error {
			_, err := w.ExecContext(ctx, `INSERT INTO message_pins (message_id, channel_id, thread_id, pinned_by, pinned_at)
				VALUES ('`+message+`', 'c1', 't1', 'p1', '`+at+`')`)
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
