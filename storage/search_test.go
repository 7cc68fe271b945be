package storage_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/search"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/storetest"
)

// searchEnv is a msgEnv with the search index and a second channel.
type searchEnv struct {
	*msgEnv
	idx   *storage.SearchStore
	other chat.Channel
}

func newSearchEnv(tb testing.TB, eng storetest.Engine) *searchEnv {
	tb.Helper()
	e := &searchEnv{msgEnv: newMsgEnv(tb, eng)}
	e.idx = storage.NewSearchStore(e.db)
	e.other = e.chatEnv.channel(tb, e.channel.SpaceID, "random")
	return e
}

// find answers the ids of the messages q finds in channels (nil: the first channel), newest first.
func (e *searchEnv) find(tb testing.TB, q string, edit func(*search.IndexQuery)) []kernel.ID {
	tb.Helper()
	pq, err := search.ParseQuery(q)
	if err != nil {
		tb.Fatalf("parse %q: %v", q, err)
	}
	iq := search.IndexQuery{Terms: pq.Terms, Channels: []kernel.ID{e.channel.ID}, Limit: 100, HasFile: pq.HasFile}
	if edit != nil {
		edit(&iq)
	}
	hits, err := e.idx.Search(context.Background(), iq)
	if err != nil {
		tb.Fatalf("search %q: %v", q, err)
	}
	out := []kernel.ID{}
	for _, h := range hits {
		out = append(out, h.MessageID)
	}
	return out
}

func ids(ms ...messaging.Message) []kernel.ID {
	out := []kernel.ID{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// withFile inserts a message with an attachment straight through the store, as messaging does
// once it has checked the files.
func (e *searchEnv) withFile(tb testing.TB, content, name string) messaging.Message {
	tb.Helper()
	m := messaging.Message{ID: kernel.NewID(), ThreadID: e.mainID, ChannelID: e.channel.ID, SpaceID: e.channel.SpaceID,
		AuthorID: e.alice.ID, Content: content, Version: 1, CreatedAt: e.clock.Now().UTC(), Mentions: []kernel.ID{},
		Attachments: []files.Attachment{{ID: kernel.NewID(), Name: name, ContentType: "text/plain", Size: 3}}}
	err := e.db.Do(context.Background(), func(ctx context.Context) error {
		_, err := e.msgs.InsertMessage(ctx, m)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestSearchIndex(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		t.Run("finds by word, prefix, phrase, exclusion and folded diacritics, newest first", func(t *testing.T) {
			e := newSearchEnv(t, eng)
			a := e.post(t, e.alice, e.mainID, "We deploy the new release on Friday", "")
			b := e.post(t, e.bob, e.mainID, "the release notes are ready", "")
			c := e.post(t, e.alice, e.mainID, "Le café est fermé; deploy.example.com is down", "")
			cases := []struct {
				q    string
				want []kernel.ID
			}{
				{"release", ids(b, a)},
				{"RELEASE notes", ids(b)},
				{"deplo", ids(c, a)},                                // the last word is a prefix
				{"release deplo", ids(a)}, {"deplo release", ids()}, // only the last word
				{`"new release"`, ids(a)},
				{`"release new"`, ids()},
				{"release -notes", ids(a)},
				{`release -"release notes"`, ids(a)},
				{"cafe", ids(c)},
				{"CAFÉ ferme", ids(c)},
				{"example", ids(c)}, // a host name is words, as a query splits it
				{"nothing", ids()},
			}
			for _, tc := range cases {
				if got := e.find(t, tc.q, nil); !slices.Equal(got, tc.want) {
					t.Errorf("%q: got %v, want %v", tc.q, got, tc.want)
				}
			}
		})
		t.Run("a prefix finds every word it begins, past the words an OR takes too", func(t *testing.T) {
			e := newSearchEnv(t, eng)
			var want []kernel.ID
			for i := range storage.MaxPrefixWordsForTest + 6 { // more words than the expansion takes
				want = append([]kernel.ID{e.post(t, e.alice, e.mainID, fmt.Sprintf("zebra%03d stripes", i), "").ID}, want...)
			}
			few := e.post(t, e.alice, e.mainID, "quokkas smile", "")
			if got := e.find(t, "quokka", nil); !slices.Equal(got, ids(few)) {
				t.Errorf("a prefix of one word: %v", got)
			}
			q := func(q *search.IndexQuery) { q.Limit = 100 }
			if got := e.find(t, "zebr", q); !slices.Equal(got, want) {
				t.Errorf("a prefix of %d words: %d hits", len(want), len(got))
			}
			if got := e.find(t, "zeb", nil); len(got) != 0 {
				t.Errorf("three letters are a word, not a prefix: %v", got)
			}
		})
		t.Run("filters by channel, author and attachment inside the index query", func(t *testing.T) {
			e := newSearchEnv(t, eng)
			a := e.post(t, e.alice, e.mainID, "budget draft", "")
			b := e.post(t, e.bob, e.mainID, "budget final", "")
			o := e.post(t, e.alice, e.other.MainThreadID, "budget elsewhere", "")
			f := e.withFile(t, "the numbers", "Budget-2026.xlsx")
			if got := e.find(t, "budget", nil); !slices.Equal(got, ids(f, b, a)) {
				t.Fatalf("one channel: %v", got)
			}
			both := func(q *search.IndexQuery) { q.Channels = []kernel.ID{e.channel.ID, e.other.ID} }
			if got := e.find(t, "budget", both); !slices.Equal(got, ids(f, o, b, a)) {
				t.Fatalf("two channels: %v", got)
			}
			allBut := func(q *search.IndexQuery) { q.AllChannels, q.Channels = true, []kernel.ID{e.channel.ID} }
			if got := e.find(t, "budget", allBut); !slices.Equal(got, ids(o)) {
				t.Fatalf("all channels but the first: %v", got)
			}
			everything := func(q *search.IndexQuery) { q.AllChannels, q.Channels = true, nil }
			if got := e.find(t, "budget", everything); !slices.Equal(got, ids(f, o, b, a)) {
				t.Fatalf("every channel: %v", got)
			}
			if got := e.find(t, "budget", func(q *search.IndexQuery) { q.AuthorID = e.bob.ID }); !slices.Equal(got, ids(b)) {
				t.Fatalf("by bob: %v", got)
			}
			if got := e.find(t, "", func(q *search.IndexQuery) { both(q); q.AuthorID = e.alice.ID }); !slices.Equal(got, ids(f, o, a)) {
				t.Fatalf("alice's without words: %v", got)
			}
			// Past a few channels the filter moves from the MATCH into the WHERE: the same answer.
			many := func(q *search.IndexQuery) {
				q.Channels = []kernel.ID{e.channel.ID}
				for range 20 {
					q.Channels = append(q.Channels, kernel.NewID())
				}
			}
			if got := e.find(t, "budget", many); !slices.Equal(got, ids(f, b, a)) {
				t.Fatalf("many channels: %v", got)
			}
			if got := e.find(t, "", func(q *search.IndexQuery) { many(q); q.AuthorID = e.alice.ID }); !slices.Equal(got, ids(f, a)) {
				t.Fatalf("many channels, alice's without words: %v", got)
			}
			if got := e.find(t, "has:file", many); !slices.Equal(got, ids(f)) {
				t.Fatalf("many channels, has:file: %v", got)
			}
			if got := e.find(t, "has:file", nil); !slices.Equal(got, ids(f)) {
				t.Fatalf("has:file: %v", got)
			}
			if got := e.find(t, "xlsx", nil); !slices.Equal(got, ids(f)) {
				t.Fatalf("by the file's name: %v", got)
			}
			if got := e.find(t, "budget", func(q *search.IndexQuery) { q.Channels = []kernel.ID{kernel.NewID()} }); len(got) != 0 {
				t.Fatalf("another channel: %v", got)
			}
			if got := e.find(t, "budget", func(q *search.IndexQuery) { q.Channels = nil }); len(got) != 0 {
				t.Fatalf("no channel: %v", got)
			}
		})
		t.Run("pages newest first with the key and by relevance with the offset", func(t *testing.T) {
			e := newSearchEnv(t, eng)
			var posted []messaging.Message
			for i := range 7 {
				posted = append(posted, e.post(t, e.alice, e.mainID, fmt.Sprintf("standup note %d", i), ""))
			}
			e.post(t, e.alice, e.other.MainThreadID, "standup elsewhere", "")
			slices.Reverse(posted)
			var got []kernel.ID
			key := ""
			for range 10 {
				pq, _ := search.ParseQuery("standup")
				hits, err := e.idx.Search(ctx, search.IndexQuery{Terms: pq.Terms, Channels: []kernel.ID{e.channel.ID}, Limit: 3, Key: key})
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range hits {
					got = append(got, h.MessageID)
				}
				if len(hits) < 3 {
					break
				}
				key = hits[len(hits)-1].Key
			}
			if !slices.Equal(got, ids(posted...)) {
				t.Fatalf("pages %v\nwant %v", got, ids(posted...))
			}
			pq, _ := search.ParseQuery("standup")
			all, _ := e.idx.Search(ctx, search.IndexQuery{Terms: pq.Terms, Channels: []kernel.ID{e.channel.ID}, Limit: 100, Sort: search.SortRelevance})
			rest, _ := e.idx.Search(ctx, search.IndexQuery{Terms: pq.Terms, Channels: []kernel.ID{e.channel.ID}, Limit: 100, Sort: search.SortRelevance, Offset: 5})
			if len(all) != 7 || len(rest) != 2 || rest[0].MessageID != all[5].MessageID {
				t.Fatalf("relevance: %d, then %d after 5", len(all), len(rest))
			}
			if _, err := e.idx.Search(ctx, search.IndexQuery{Terms: pq.Terms, Channels: []kernel.ID{e.channel.ID}, Limit: 3, Key: "x'; --"}); !kernel.IsCode(err, kernel.CodeCursorInvalid) {
				t.Fatalf("a bad key: %v", err)
			}
		})
		t.Run("bounds by time", func(t *testing.T) {
			e := newSearchEnv(t, eng)
			early := e.post(t, e.alice, e.mainID, "retro one", "")
			e.clock.Advance(48 * time.Hour)
			late := e.post(t, e.alice, e.mainID, "retro two", "")
			mid := early.CreatedAt.Add(24 * time.Hour)
			if got := e.find(t, "retro", func(q *search.IndexQuery) { q.Before = mid }); !slices.Equal(got, ids(early)) {
				t.Fatalf("before: %v", got)
			}
			if got := e.find(t, "retro", func(q *search.IndexQuery) { q.After = mid }); !slices.Equal(got, ids(late)) {
				t.Fatalf("after: %v", got)
			}
		})
		t.Run("an edit, a deletion and a thread's new title change what is found in the same commit", func(t *testing.T) {
			e := newSearchEnv(t, eng)
			m := e.post(t, e.alice, e.mainID, "the password is hunter2", "")
			if _, err := e.svc.EditMessage(ctx, e.alice, m.ID, "the password is gone"); err != nil {
				t.Fatal(err)
			}
			if got := e.find(t, "hunter2", nil); len(got) != 0 {
				t.Fatalf("found by edited-away text: %v", got)
			}
			if got := e.find(t, "gone", nil); !slices.Equal(got, ids(m)) {
				t.Fatalf("by the new text: %v", got)
			}
			if err := e.svc.DeleteMessage(ctx, e.alice, m.ID); err != nil {
				t.Fatal(err)
			}
			if got := e.find(t, "password", nil); len(got) != 0 {
				t.Fatalf("found a deleted message: %v", got)
			}
			th, first, _, err := e.svc.CreateThread(ctx, e.alice, e.channel.ID, messaging.NewThread{Title: "Quarterly roadmap", Content: "see below"})
			if err != nil {
				t.Fatal(err)
			}
			second := e.post(t, e.bob, th.ID, "I have notes on the roadmap", "")
			if got := e.find(t, "quarterly", nil); !slices.Equal(got, ids(first)) {
				t.Fatalf("by the thread's title: %v", got)
			}
			if got := e.find(t, "roadmap", nil); !slices.Equal(got, ids(second, first)) {
				t.Fatalf("roadmap: %v", got)
			}
			title := "Yearly plan"
			if _, err := e.chatEnv.svc.UpdateThread(ctx, e.alice, th.ID, chat.ThreadPatch{Title: &title}); err != nil {
				t.Fatal(err)
			}
			if got := e.find(t, "quarterly", nil); len(got) != 0 {
				t.Fatalf("by the old title: %v", got)
			}
			if got := e.find(t, "yearly", nil); !slices.Equal(got, ids(first)) {
				t.Fatalf("by the new title: %v", got)
			}
			hits, _ := e.idx.Search(ctx, search.IndexQuery{Terms: []search.Term{{Words: []string{"yearly"}}}, Channels: []kernel.ID{e.channel.ID}, Limit: 5})
			if len(hits) != 1 || hits[0].Title != title || hits[0].ThreadID != th.ID || hits[0].ChannelID != e.channel.ID {
				t.Fatalf("hit %+v", hits)
			}
		})
		t.Run("takes hostile words as words", func(t *testing.T) {
			e := newSearchEnv(t, eng)
			m := e.post(t, e.alice, e.mainID, `NEAR the "quoted" thing: a*b & c|d !e 'f' \g`, "")
			for _, q := range []string{`NEAR(`, `"quoted`, `thing:`, `a*b`, `c|d`, `!e`, `'f'`, `\g`, `near "the quoted`, "AND", "OR", "NOT"} {
				pq, err := search.ParseQuery(q)
				if err != nil {
					t.Fatalf("%q: %v", q, err)
				}
				hits, err := e.idx.Search(ctx, search.IndexQuery{Terms: pq.Terms, Channels: []kernel.ID{e.channel.ID}, Limit: 5})
				if err != nil {
					t.Fatalf("%q: %v", q, err)
				}
				if q == "AND" || q == "OR" || q == "NOT" {
					continue
				}
				if len(hits) != 1 || hits[0].MessageID != m.ID {
					t.Errorf("%q: hits %+v", q, hits)
				}
			}
			// Words that are no word to the query language reach the engine quoted too.
			raw := []search.Term{{Words: []string{`x" OR "y`}}, {Words: []string{`'; DROP TABLE messages; --`}}, {Words: []string{`\`}}}
			for _, term := range raw {
				if _, err := e.idx.Search(ctx, search.IndexQuery{Terms: []search.Term{term}, Channels: []kernel.ID{e.channel.ID}, Limit: 5}); err != nil {
					t.Errorf("%q: %v", term.Words[0], err)
				}
			}
		})
		t.Run("indexes in the message's own Unit of Work", func(t *testing.T) {
			e := newSearchEnv(t, eng)
			err := e.db.Do(ctx, func(ctx context.Context) error {
				if _, _, err := e.svc.CreateMessage(ctx, e.alice, e.mainID, messaging.NewMessage{Content: "rolled back words"}); err != nil {
					return err
				}
				return kernel.Errorf(kernel.CodeConflict, "undo")
			})
			if !kernel.IsCode(err, kernel.CodeConflict) {
				t.Fatal(err)
			}
			if got := e.find(t, "rolled", nil); len(got) != 0 {
				t.Fatalf("a rolled back message is found: %v", got)
			}
			// A message edited or deleted in the Unit of Work that posts it is indexed as it ends.
			var edited, gone messaging.Message
			err = e.db.Do(ctx, func(ctx context.Context) error {
				var err error
				if edited, _, err = e.svc.CreateMessage(ctx, e.alice, e.mainID, messaging.NewMessage{Content: "alpha words"}); err != nil {
					return err
				}
				if _, err = e.svc.EditMessage(ctx, e.alice, edited.ID, "beta words"); err != nil {
					return err
				}
				if gone, _, err = e.svc.CreateMessage(ctx, e.alice, e.mainID, messaging.NewMessage{Content: "gamma words"}); err != nil {
					return err
				}
				return e.svc.DeleteMessage(ctx, e.alice, gone.ID)
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := e.find(t, "words", nil); !slices.Equal(got, ids(edited)) {
				t.Fatalf("words: %v, want only the edited message", got)
			}
			if got := e.find(t, "alpha", nil); len(got) != 0 {
				t.Fatalf("found by the text before the edit: %v", got)
			}
		})
	})
}

// The fold of the query words (search.Fold) and PostgreSQL's of a title in SQL (translate in
// migrate/postgres/0025) use the same letters.
func TestSearchFoldMatchesMigration(t *testing.T) {
	from, to := search.FoldPairs()
	b, err := migrationText(engine.Postgres, "0025_search.sql")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(b, "'"+from+"'") != 2 || strings.Count(b, "'"+to+"'") != 2 {
		t.Fatal("migrate/postgres/0025_search.sql does not fold with search.FoldPairs")
	}
}

func migrationText(eng engine.Name, file string) (string, error) {
	ms, err := migrate.List(eng)
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if fmt.Sprintf("%04d_%s.sql", m.Version, m.Name) == file {
			return m.SQL, nil
		}
	}
	return "", fmt.Errorf("no migration %s", file)
}
