package migrate

import (
	"context"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0009 names an instance that exists already, with its setup done and messages in it: the row
// keeps its setup and gets the default name, and the messages stay.
func TestInstanceNameMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		w, r, _ := openEmpty(t, eng)
		if _, err := up(ctx, w, until(t, eng, 8), eng, nil); err != nil {
			t.Fatal(err)
		}
		const at = "2026-03-01T10:00:00.000000Z"
		for _, q := range []string{
			`UPDATE instance SET setup_completed_at = '` + at + `' WHERE id = 1`,
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
		if len(applied) == 0 || applied[0].Version != 9 {
			t.Fatalf("applied %v, want 0009 first", versions(applied))
		}
		var name, done string
		if err := r.QueryRowContext(ctx, `SELECT name, setup_completed_at FROM instance WHERE id = 1`).Scan(&name, &done); err != nil {
			t.Fatal(err)
		}
		if name != "bothy" || done != at {
			t.Fatalf("instance after 0009: name %q, setup_completed_at %q", name, done)
		}
		var n int
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE created_at >= '`+at+`'`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d messages after 0009, %v", n, err)
		}
	})
}
