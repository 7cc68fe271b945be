package search

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

func TestParseQuery(t *testing.T) {
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	cases := []struct {
		q    string
		want Query
	}{
		{"deploy", Query{Terms: []Term{{Words: []string{"deploy"}, Prefix: true}}}},
		{"Deploy Café", Query{Terms: []Term{{Words: []string{"deploy"}}, {Words: []string{"cafe"}, Prefix: true}}}},
		{`"exact phrase" x`, Query{Terms: []Term{{Words: []string{"exact", "phrase"}}, {Words: []string{"x"}}}}},
		{`plan -draft -"old plan"`, Query{Terms: []Term{{Words: []string{"plan"}}, {Words: []string{"draft"}, Exclude: true}, {Words: []string{"old", "plan"}, Exclude: true}}}},
		{"from:@Bob in:#General has:file report", Query{Terms: []Term{{Words: []string{"report"}, Prefix: true}},
			FromHandles: []string{"bob"}, ChannelNames: []string{"General"}, HasFile: true}},
		{"before:2026-03-02 after:2026-01-01", Query{Before: day("2026-03-02"), After: day("2026-01-02").Add(-time.Nanosecond)}},
		{"e-mail", Query{Terms: []Term{{Words: []string{"e", "mail"}}}}},
		{`NEAR( * : &|! "`, Query{Terms: []Term{{Words: []string{"near"}, Prefix: true}}}},
		{"http://x.org", Query{Terms: []Term{{Words: []string{"http", "x", "org"}}}}},
		{"a", Query{Terms: []Term{{Words: []string{"a"}}}}}, // one letter is no prefix
		{"- -", Query{}},
	}
	for _, tc := range cases {
		got, err := ParseQuery(tc.q)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %+v, %v\nwant %+v", tc.q, got, err, tc.want)
		}
	}
	for _, bad := range []string{strings.Repeat("x", MaxQueryBytes+1), "has:link", "before:2026-13-01", "after:yesterday",
		string([]byte{0xff, 0xfe}), strings.Repeat("w ", MaxTerms+1)} {
		if _, err := ParseQuery(bad); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Errorf("%.40q: %v, want validation_failed", bad, err)
		}
	}
}

func TestHighlight(t *testing.T) {
	q, _ := ParseQuery(`"new release" deplo`)
	got := Highlight(q.Terms, `We <b>deploy</b> the new release & Deployed it`, "", nil)
	want := `We &lt;b&gt;<mark>deploy</mark>&lt;/b&gt; the <mark>new</mark> <mark>release</mark> &amp; <mark>Deployed</mark> it`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	long := strings.Repeat("lorem ipsum ", 40) + "the café is open " + strings.Repeat("dolor sit ", 40)
	q, _ = ParseQuery("cafe")
	got = Highlight(q.Terms, long, "", nil)
	if !strings.Contains(got, "<mark>café</mark>") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") || len(got) > 260 {
		t.Errorf("long: %q", got)
	}
	q, _ = ParseQuery("roadmap")
	if got := Highlight(q.Terms, "see below", "Q3 Roadmap", nil); got != "Q3 <mark>Roadmap</mark>" {
		t.Errorf("title: %q", got)
	}
	if got := Highlight(q.Terms, "attached", "", []string{"roadmap.pdf"}); got != "<mark>roadmap</mark>.pdf" {
		t.Errorf("file: %q", got)
	}
	if got := Highlight(nil, "<i>x</i>", "", nil); got != "&lt;i&gt;x&lt;/i&gt;" {
		t.Errorf("no terms: %q", got)
	}
}

// fakeIndex answers hits and records the query.
type fakeIndex struct {
	hits     []Hit
	got      IndexQuery
	channels []kernel.ID
	names    map[string][]kernel.ID
}

func (f *fakeIndex) Search(_ context.Context, q IndexQuery) ([]Hit, error) {
	f.got = q
	if len(f.hits) > q.Limit {
		return f.hits[:q.Limit], nil
	}
	return f.hits, nil
}
func (f *fakeIndex) ChannelNames(context.Context) (map[string][]kernel.ID, error) {
	return f.names, nil
}
func (f *fakeIndex) ChannelIDs(context.Context) ([]kernel.ID, error) { return f.channels, nil }

type fakeMessages map[kernel.ID]messaging.Message

func (f fakeMessages) Message(_ context.Context, id kernel.ID) (messaging.Message, error) {
	m, ok := f[id]
	if !ok {
		return m, kernel.ErrNotFound
	}
	return m, nil
}

type fakeDirectory map[string]kernel.ID

func (f fakeDirectory) ResolveHandles(_ context.Context, keys []string) (map[string]kernel.ID, error) {
	out := map[string]kernel.ID{}
	for _, k := range keys {
		if id, ok := f[k]; ok {
			out[k] = id
		}
	}
	return out, nil
}

type fakeScoper struct {
	all      bool
	channels map[kernel.ID]bool
}

func (f fakeScoper) Visible(ctx context.Context, _ kernel.Actor, a kernel.Action) (kernel.Visibility, error) {
	kernel.RecordCheck(ctx, a)
	return f, nil
}
func (f fakeScoper) Space(kernel.ID) bool      { return true }
func (f fakeScoper) Channel(id kernel.ID) bool { return f.channels[id] }
func (f fakeScoper) All() bool                 { return f.all }

func TestService(t *testing.T) {
	ctx := context.Background()
	c1, c2, c3, dm := kernel.NewID(), kernel.NewID(), kernel.NewID(), kernel.NewID()
	bob := kernel.NewID()
	msgs := fakeMessages{}
	var hits []Hit
	for i := range 5 {
		m := messaging.Message{ID: kernel.NewID(), ChannelID: c1, ThreadID: kernel.NewID(), Content: "deploy now"}
		msgs[m.ID] = m
		hits = append(hits, Hit{MessageID: m.ID, ChannelID: c1, ThreadID: m.ThreadID, Key: string(rune('a' + i))})
	}
	idx := &fakeIndex{hits: hits, channels: []kernel.ID{c1, c2, c3, dm}, names: map[string][]kernel.ID{"general": {c1}, "secret": {c3}}}
	reader := fakeScoper{channels: map[kernel.ID]bool{c1: true, c2: true}}
	svc := New(Deps{Index: idx, Messages: msgs, Directory: fakeDirectory{"bob": bob}, Scoper: reader})
	actor := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}

	p, err := svc.Search(ctx, actor, Request{Q: "deplo", Limit: 2})
	if err != nil || len(p.Items) != 2 || p.NextCursor == nil {
		t.Fatalf("page %+v, %v", p, err)
	}
	if !reflect.DeepEqual(idx.got.Channels, []kernel.ID{c1, c2}) || idx.got.AllChannels || idx.got.Limit != 3 {
		t.Fatalf("index asked %+v", idx.got)
	}
	if p.Items[0].Highlight != "<mark>deploy</mark> now" || p.Items[0].ChannelID != c1 {
		t.Fatalf("item %+v", p.Items[0])
	}
	if _, err := svc.Search(ctx, actor, Request{Q: "deplo", Limit: 2, Cursor: *p.NextCursor}); err != nil || idx.got.Key != "b" {
		t.Fatalf("next page: key %q, %v", idx.got.Key, err)
	}
	// A channel the caller may not read, by name or by id, finds nothing and asks nothing.
	for _, r := range []Request{{Q: "deploy in:#secret"}, {Q: "deploy", ChannelID: c3}, {Q: "in:#nowhere"}, {Q: "from:@nobody x"},
		{Q: "deploy in:#general", ChannelID: c2}, {Q: "from:@bob", AuthorID: kernel.NewID()}} {
		idx.got = IndexQuery{}
		p, err := svc.Search(ctx, actor, r)
		if err != nil || len(p.Items) != 0 || p.NextCursor != nil || idx.got.Limit != 0 {
			t.Errorf("%+v: %+v, %v, index asked %+v", r, p, err, idx.got)
		}
	}
	if _, err := svc.Search(ctx, actor, Request{Q: "x from:@bob in:#general"}); err != nil || idx.got.AuthorID != bob ||
		!reflect.DeepEqual(idx.got.Channels, []kernel.ID{c1}) {
		t.Fatalf("filters: %+v, %v", idx.got, err)
	}
	// An owner reads all but a DM: the index is told the one channel left out.
	owner := New(Deps{Index: idx, Messages: msgs, Directory: fakeDirectory{}, Scoper: fakeScoper{all: true, channels: map[kernel.ID]bool{c1: true, c2: true, c3: true}}})
	if _, err := owner.Search(ctx, actor, Request{Q: "x"}); err != nil || !idx.got.AllChannels || !reflect.DeepEqual(idx.got.Channels, []kernel.ID{dm}) {
		t.Fatalf("owner: %+v, %v", idx.got, err)
	}
	// A hit in a channel the caller may not read is never answered, even if the index gave it.
	idx.hits = []Hit{{MessageID: kernel.NewID(), ChannelID: c3}}
	if p, err := svc.Search(ctx, actor, Request{Q: "deploy"}); err != nil || len(p.Items) != 0 {
		t.Fatalf("invisible hit: %+v, %v", p, err)
	}
	for _, r := range []Request{{Q: ""}, {Q: "-x"}, {Q: "x", Limit: 101}, {Q: "x", Limit: -1}, {Q: "x", Sort: "oldest"},
		{Q: "x", Before: time.Unix(0, 0), After: time.Unix(10, 0)}} {
		if _, err := svc.Search(ctx, actor, r); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Errorf("%+v: %v, want validation_failed", r, err)
		}
	}
	for _, c := range []string{"!!", encodeCursor("r", "5"), encodeCursor("n", ""), encodeCursor("x", "1")} {
		if _, err := svc.Search(ctx, actor, Request{Q: "x", Cursor: c}); !kernel.IsCode(err, kernel.CodeCursorInvalid) {
			t.Errorf("cursor %q: %v, want cursor_invalid", c, err)
		}
	}
}
