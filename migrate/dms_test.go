package migrate

import (
	"context"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0015 adds dms to a database with a DM channel in it: the channel stays, a participant key
// names one DM at most, a DM whose key is cleared (NULL) collides with none, and a DM of a
// channel that does not exist is refused.
func TestDMsMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		w, r, _ := openEmpty(t, eng)
		if _, err := up(ctx, w, until(t, eng, 14), eng, nil); err != nil {
			t.Fatal(err)
		}
		const at = "2026-03-01T10:00:00.000000Z"
		for _, q := range []string{
			`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
				VALUES ('p1', 'person', 'olga', 'olga', 'Olga', '` + at + `', '` + at + `')`,
			`INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES ('s1', 'Direct messages', 'p1', '` + at + `', '` + at + `')`,
			`INSERT INTO channels (id, space_id, kind, name, main_thread_id, created_by, created_at, updated_at)
				VALUES ('c1', 's1', 'dm', '', 't1', 'p1', '` + at + `', '` + at + `')`,
			`INSERT INTO channels (id, space_id, kind, name, main_thread_id, created_by, created_at, updated_at)
				VALUES ('c2', 's1', 'dm', '', 't2', 'p1', '` + at + `', '` + at + `')`,
			`INSERT INTO channels (id, space_id, kind, name, main_thread_id, created_by, created_at, updated_at)
				VALUES ('c3', 's1', 'dm', '', 't3', 'p1', '` + at + `', '` + at + `')`,
		} {
			if _, err := w.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		applied, err := Up(ctx, w, eng, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) == 0 || applied[0].Version != 15 {
			t.Fatalf("applied %v, want 0015 first", versions(applied))
		}
		dm := func(channel string, key any) error {
			_, err := w.ExecContext(ctx, `INSERT INTO dms (channel_id, participant_key, created_at) VALUES ($1, $2, '`+at+`')`, channel, key)
			return err
		}
		if eng == engine.SQLite {
			dm = func(channel string, key any) error {
				_, err := w.ExecContext(ctx, `INSERT INTO dms (channel_id, participant_key, created_at) VALUES (?, ?, '`+at+`')`, channel, key)
				return err
			}
		}
		if err := dm("c1", "p1,p2"); err != nil {
			t.Fatalf("dm: %v", err)
		}
		if err := dm("c2", "p1,p2"); err == nil {
			t.Fatal("a second DM with the key p1,p2 was stored")
		}
		if err := dm("c2", nil); err != nil {
			t.Fatalf("a DM without a key: %v", err)
		}
		if err := dm("c3", nil); err != nil {
			t.Fatalf("a second DM without a key: %v", err)
		}
		if err := dm("c9", "p1"); err == nil {
			t.Fatal("a DM of a channel that does not exist was stored")
		}
		var n int
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM dms`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("%d dms, %v", n, err)
		}
	})
}
