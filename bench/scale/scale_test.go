package scale

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/search"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/fixture"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/sqlite"
)

// TestSeed holds that the seed leaves what posting would, as the store reads it: the messages
// counted, each with its message.created event read back as the message in its thread, the
// threads' counters and the full-text index.
func TestSeed(t *testing.T) {
	ctx := context.Background()
	w, r, err := fixture.OpenMigrated(ctx, filepath.Join(t.TempDir(), "bothy.db"), "NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	fx, err := fixture.Seed(ctx, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	var target httpbench.Target
	for _, th := range fx.Threads {
		target.Threads = append(target.Threads, string(th.ID))
	}
	const n = 1003
	rep, err := Seed(ctx, w, target, Layout{Messages: n, Span: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Messages != n || rep.Events != n {
		t.Fatalf("report %+v, want %d messages and events", rep, n)
	}
	var cursor int64
	if err := r.QueryRowContext(ctx, `SELECT seq FROM log_cursors WHERE name = 'notifier'`).Scan(&cursor); err != nil || cursor != n {
		t.Fatalf("the notifier's cursor is at %d (%v), want the seeded head %d", cursor, err, n)
	}
	db, err := storage.Open(ctx, sqlite.Dialect{}, w, r, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evs, err := db.EventsAfter(ctx, 0, 2000)
	if err != nil || len(evs) != n {
		t.Fatalf("%d events (%v), want %d", len(evs), err, n)
	}
	for i, ev := range []kernel.LoggedEvent{evs[0], evs[n-1]} {
		var m messaging.Message
		if err := json.Unmarshal(ev.Payload, &m); err != nil || m.ID != ev.SubjectID || m.Content == "" || m.AuthorID != fx.AuthorID ||
			ev.Scope.ThreadID == "" || ev.Scope.ChannelID != m.ChannelID {
			t.Fatalf("event %d reads %+v (%v) in %+v", i, m, err, ev.Scope)
		}
	}
	th, err := storage.NewChatStore(db).Thread(ctx, fx.Threads[0].ID)
	if err != nil || th.MessageCount != (n+3)/4 {
		t.Fatalf("thread counts %d messages (%v), want %d", th.MessageCount, err, (n+3)/4)
	}
	c, err := storage.NewStatsStore(db).Counts(ctx)
	if err != nil || c.Messages != n {
		t.Fatalf("overview counts %d messages (%v), want %d", c.Messages, err, n)
	}
	hits, err := storage.NewSearchStore(db).Search(ctx, search.IndexQuery{Terms: []search.Term{{Words: []string{words[7]}}},
		Channels: []kernel.ID{fx.Threads[0].ChannelID, fx.Threads[1].ChannelID, fx.Threads[2].ChannelID, fx.Threads[3].ChannelID}, Limit: 5})
	if err != nil || len(hits) == 0 {
		t.Fatalf("search for %q: %d hits (%v)", words[7], len(hits), err)
	}
}
