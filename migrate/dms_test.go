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
		dmChannel := func(id, thread string) string {
			return `INSERT INTO channels (id, space_id, kind, name, main_thread_id, created_by, created_at, updated_at)
				VALUES ('` + id + `', 's1', 'dm', '', '` + thread + `', 'p1', '` + fixtureAt + `', '` + fixtureAt + `')`
		}
		w, r := across(t, eng, 15, chatFixture[0], chatFixture[1], dmChannel("c1", "t1"), dmChannel("c2", "t2"), dmChannel("c3", "t3"))
		// key is the participant key as SQL: a quoted text, or NULL.
		dm := func(channel, key string) error {
			_, err := w.ExecContext(ctx, `INSERT INTO dms (channel_id, participant_key, created_at) VALUES ('`+channel+`', `+key+`, '`+fixtureAt+`')`)
			return err
		}
		if err := dm("c1", "'p1,p2'"); err != nil {
			t.Fatalf("dm: %v", err)
		}
		if err := dm("c2", "'p1,p2'"); err == nil {
			t.Fatal("a second DM with the key p1,p2 was stored")
		}
		if err := dm("c2", "NULL"); err != nil {
			t.Fatalf("a DM without a key: %v", err)
		}
		if err := dm("c3", "NULL"); err != nil {
			t.Fatalf("a second DM without a key: %v", err)
		}
		if err := dm("c9", "'p1'"); err == nil {
			t.Fatal("a DM of a channel that does not exist was stored")
		}
		var n int
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM dms`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("%d dms, %v", n, err)
		}
	})
}
