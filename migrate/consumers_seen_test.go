package migrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"testing"
	"testing/fstest"

	"bothy.dev/bothy/storage/engine"
)

// until is the embedded migrations of engine up to version last, to build a database as an
// older binary left it.
func until(t *testing.T, eng engine.Name, last int) fstest.MapFS {
	t.Helper()
	ms, err := List(eng)
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for _, m := range ms {
		if m.Version <= last {
			name := path.Join(string(eng), fmt.Sprintf("%04d_%s.sql", m.Version, m.Name))
			if _, err := fs.Stat(files, name); err != nil {
				t.Fatal(err)
			}
			out[name] = &fstest.MapFile{Data: []byte(m.SQL)}
		}
	}
	return out
}

// 0008 adds agent_consumers.seen_at to a table that holds cursors already: each row starts seen
// when its cursor was last saved, and keeps its cursor.
func TestConsumersSeenMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		w, r, _ := openEmpty(t, eng)
		if _, err := up(ctx, w, until(t, eng, 7), eng, nil); err != nil {
			t.Fatal(err)
		}
		const at = "2026-03-01T10:00:00.000000Z"
		for _, q := range []string{
			`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
				VALUES ('p1', 'agent', 'bot', 'bot', 'bot', '` + at + `', '` + at + `')`,
			`INSERT INTO agent_consumers (agent_id, acked_seq, updated_at) VALUES ('p1', 42, '` + at + `')`,
		} {
			if _, err := w.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		applied, err := Up(ctx, w, eng, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) == 0 || applied[0].Version != 8 {
			t.Fatalf("applied %v, want 0008 first", versions(applied))
		}
		var seq int64
		var updated, seen string
		if err := r.QueryRowContext(ctx, `SELECT acked_seq, updated_at, seen_at FROM agent_consumers WHERE agent_id = 'p1'`).
			Scan(&seq, &updated, &seen); err != nil {
			t.Fatal(err)
		}
		if seq != 42 || updated != at || seen != at {
			t.Fatalf("row after 0008: seq %d, updated_at %q, seen_at %q", seq, updated, seen)
		}
	})
}
