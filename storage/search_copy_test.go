package storage_test

import (
	"context"
	"slices"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/search"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/sqlite"
	"bothy.dev/bothy/storage/storetest"
)

// A copied instance finds what the source found: by content, by an attachment's name, by a
// thread's title, and not by edited-away or deleted text.
func TestCopyKeepsSearch(t *testing.T) {
	for name, target := range map[string]func(t *testing.T) copyEnd{
		"to SQLite":     func(t *testing.T) copyEnd { e, _ := mustSQLiteEnd(t); return e },
		"to PostgreSQL": func(t *testing.T) copyEnd { return mustPostgresEnd(t) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := newSearchEnv(t, storetest.SQLite)
			a := e.post(t, e.alice, e.mainID, "the café migration plan", "")
			f := e.withFile(t, "see attached", "Migration-notes.pdf")
			_, first, _, err := e.svc.CreateThread(ctx, e.alice, e.channel.ID, messaging.NewThread{Title: "Kickoff agenda", Content: "items"})
			if err != nil {
				t.Fatal(err)
			}
			edited := e.post(t, e.alice, e.mainID, "secret words", "")
			if _, err := e.svc.EditMessage(ctx, e.alice, edited.ID, "plain words"); err != nil {
				t.Fatal(err)
			}
			gone := e.post(t, e.alice, e.mainID, "migration leftovers", "")
			if err := e.svc.DeleteMessage(ctx, e.alice, gone.ID); err != nil {
				t.Fatal(err)
			}
			dst := target(t)
			if _, err := storage.Copy(ctx, mustReadOnly(t, e.where), sqlite.Dialect{}, dst.db, dst.dialect, storage.CopyOptions{BatchRows: 2}); err != nil {
				t.Fatal(err)
			}
			idx := storage.NewSearchStore(dst.open(t))
			find := func(q string) []kernel.ID {
				t.Helper()
				pq, err := search.ParseQuery(q)
				if err != nil {
					t.Fatal(err)
				}
				hits, err := idx.Search(ctx, search.IndexQuery{Terms: pq.Terms, HasFile: pq.HasFile, Channels: []kernel.ID{e.channel.ID}, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				out := []kernel.ID{}
				for _, h := range hits {
					out = append(out, h.MessageID)
				}
				return out
			}
			for q, want := range map[string][]kernel.ID{
				"migration": ids(f, a), "cafe": ids(a), "has:file": ids(f), "kickoff": ids(first),
				"secret": ids(), "plain": ids(edited), "leftovers": ids(),
			} {
				if got := find(q); !slices.Equal(got, want) {
					t.Errorf("%q on the copy: %v, want %v", q, got, want)
				}
			}
		})
	}
}
