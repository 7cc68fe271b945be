package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/search"
)

// fakeSearch answers the page's search through its function field and keeps the last query.
type fakeSearch struct {
	search func(q search.Request) (search.Page, error)
	got    *search.Request
}

func (f *fakeSearch) Search(_ context.Context, _ kernel.Actor, q search.Request) (search.Page, error) {
	f.got = &q
	return f.search(q)
}

// searchChat is fakeChat that also reads channels.
type searchChat struct {
	*fakeChat
	channels map[kernel.ID]chat.Channel
}

func (f *searchChat) GetChannel(_ context.Context, _ kernel.Actor, id kernel.ID) (chat.Channel, error) {
	if ch, ok := f.channels[id]; ok {
		return ch, nil
	}
	return chat.Channel{}, kernel.ErrNotFound
}

type searchFixture struct {
	c           *chatView
	search      *fakeSearch
	ch          chat.Channel
	main, plans chat.Thread
	ada         kernel.ID
}

func newSearchFixture(t *testing.T) *searchFixture {
	t.Helper()
	f := &searchFixture{search: &fakeSearch{}, ada: kernel.NewID()}
	f.ch = chat.Channel{ID: kernel.NewID(), SpaceID: kernel.NewID(), Name: "general", Kind: "channel"}
	f.main = chat.Thread{ID: kernel.NewID(), ChannelID: f.ch.ID, SpaceID: f.ch.SpaceID, IsMain: true}
	f.plans = chat.Thread{ID: kernel.NewID(), ChannelID: f.ch.ID, SpaceID: f.ch.SpaceID, Title: "Plans"}
	f.ch.MainThreadID = f.main.ID
	ch := &searchChat{fakeChat: &fakeChat{threads: map[kernel.ID]chat.Thread{f.main.ID: f.main, f.plans.ID: f.plans}},
		channels: map[kernel.ID]chat.Channel{f.ch.ID: f.ch}}
	con := New(Deps{Identity: noIdentity{}, Chat: ch, Messages: noMessages{}, Search: f.search})
	f.c = &chatView{Console: con}
	// The directory as the chat view read it a moment ago, so the page needs no people's list.
	f.c.dirs.dir = &principalDir{byID: map[kernel.ID]principalInfo{f.ada: {ID: f.ada, Handle: "ada", Name: "Ada Lovelace"}}, at: time.Now()}
	return f
}

// get serves the search page at target to a signed-in person.
func (f *searchFixture) get(t *testing.T, target string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	rq := &request{w: w, r: httptest.NewRequest(http.MethodGet, target, nil), actor: kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson},
		user: &identity.User{Handle: "bob", DisplayName: "Bob"}, csrf: "tok"}
	if err := f.c.searchPage(rq); err != nil {
		f.c.fail(rq, err)
	}
	return w
}

func (f *searchFixture) hit(th chat.Thread, text, highlight string, attached int) search.Result {
	m := messaging.Message{ID: kernel.NewID(), ThreadID: th.ID, ChannelID: th.ChannelID, AuthorID: f.ada, Content: text,
		CreatedAt: time.Date(2026, 3, 2, 15, 4, 5, 0, time.UTC)}
	for range attached {
		m.Attachments = append(m.Attachments, files.Attachment{ID: kernel.NewID(), Name: "a.txt", ContentType: "text/plain", Size: 1})
	}
	return search.Result{Message: m, ChannelID: th.ChannelID, ThreadID: th.ID, Highlight: highlight}
}

func TestSearchPage(t *testing.T) {
	t.Run("results show channel, thread, author, time and the marked excerpt, each leading to its message", func(t *testing.T) {
		f := newSearchFixture(t)
		first := f.hit(f.main, "deploy the site", "<mark>deploy</mark> the site", 0)
		second := f.hit(f.plans, "we deploy friday", "we <mark>deploy</mark> friday &amp; <b>not</b>", 2)
		next := "c2"
		f.search.search = func(search.Request) (search.Page, error) {
			return search.Page{Items: []search.Result{first, second}, NextCursor: &next}, nil
		}
		w := f.get(t, "/console/search?q=deplo+from%3A%40ada")
		if w.Code != http.StatusOK {
			t.Fatalf("status %d:\n%s", w.Code, w.Body)
		}
		if g := f.search.got; g == nil || g.Q != "deplo from:@ada" || g.Cursor != "" || g.Limit != searchPageSize {
			t.Fatalf("the use case got %+v", g)
		}
		html := w.Body.String()
		for _, want := range []string{
			`data-testid="search-result" data-id="` + string(first.Message.ID) + `"`,
			`<a href="/console/channels/` + string(f.ch.ID) + `" data-testid="search-channel">#general</a>`,
			`<a href="/console/threads/` + string(f.plans.ID) + `" data-testid="search-thread">Plans</a>`,
			`<b data-testid="search-author">Ada Lovelace</b> @ada`,
			`<time datetime="2026-03-02T15:04:05Z"`,
			`href="/console/messages/` + string(first.Message.ID) + `" class="hit" data-testid="search-link"><mark>deploy</mark> the site</a>`,
			// Only <mark> survives as markup; anything else in the excerpt stays text.
			`we <mark>deploy</mark> friday &amp; &lt;b&gt;not&lt;/b&gt;`,
			`<span data-testid="search-files">2 files</span>`,
			`href="/console/search?cursor=c2&amp;q=deplo+from%3A%40ada" data-testid="search-next"`,
			// The box of the top bar shows the query too.
			`data-testid="top-search-input"`,
			`value="deplo from:@ada"`,
		} {
			if !strings.Contains(html, want) {
				t.Errorf("the page lacks %s:\n%s", want, html)
			}
		}
		if strings.Count(html, `data-testid="search-thread"`) != 1 || strings.Contains(html, "search-first") {
			t.Errorf("a main thread is named, or the first page links to itself:\n%s", html)
		}
	})

	t.Run("a later page passes its cursor and leads back to the newest matches", func(t *testing.T) {
		f := newSearchFixture(t)
		f.search.search = func(search.Request) (search.Page, error) { return search.Page{}, nil }
		html := f.get(t, "/console/search?q=deploy&cursor=c2").Body.String()
		if f.search.got.Cursor != "c2" {
			t.Fatalf("the use case got %+v", f.search.got)
		}
		if !strings.Contains(html, `href="/console/search?q=deploy" data-testid="search-first"`) || !strings.Contains(html, "No more messages match") ||
			strings.Contains(html, "search-next") {
			t.Fatalf("%s", html)
		}
	})

	t.Run("nothing found says so", func(t *testing.T) {
		f := newSearchFixture(t)
		f.search.search = func(search.Request) (search.Page, error) { return search.Page{}, nil }
		html := f.get(t, "/console/search?q=nothing").Body.String()
		if !strings.Contains(html, `data-testid="search-empty">No message you may read matches <b>nothing</b>.`) || strings.Contains(html, "search-results") {
			t.Fatalf("%s", html)
		}
	})

	t.Run("without a query the page shows the box and the syntax, and searches nothing", func(t *testing.T) {
		f := newSearchFixture(t)
		html := f.get(t, "/console/search").Body.String()
		if f.search.got != nil {
			t.Fatalf("searched %+v", f.search.got)
		}
		for _, want := range []string{`data-testid="search-hint"`, `from:&#64;ada`, `in:#general`, `has:file`, `"exact phrase"`, `autofocus`} {
			if !strings.Contains(html, want) {
				t.Errorf("the page lacks %s:\n%s", want, html)
			}
		}
		if strings.Contains(html, "search-empty") {
			t.Errorf("an empty query says nothing matched:\n%s", html)
		}
	})

	t.Run("a query the search refuses comes back with why, as 400", func(t *testing.T) {
		f := newSearchFixture(t)
		f.search.search = func(search.Request) (search.Page, error) {
			return search.Page{}, kernel.Invalid("q", "before: takes a date, as 2026-01-31")
		}
		w := f.get(t, "/console/search?q=before%3Asoon")
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "before: takes a date, as 2026-01-31") {
			t.Fatalf("status %d:\n%s", w.Code, w.Body)
		}
	})

	t.Run("a cursor the search does not know leads back to the first page", func(t *testing.T) {
		f := newSearchFixture(t)
		f.search.search = func(search.Request) (search.Page, error) {
			return search.Page{}, kernel.Errorf(kernel.CodeCursorInvalid, "no such cursor")
		}
		w := f.get(t, "/console/search?q=x&cursor=forged")
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "out of date") ||
			!strings.Contains(w.Body.String(), `href="/console/search?q=x" data-testid="search-first"`) {
			t.Fatalf("status %d:\n%s", w.Code, w.Body)
		}
	})

	t.Run("a hit whose channel went away meanwhile is left out", func(t *testing.T) {
		f := newSearchFixture(t)
		gone := f.hit(chat.Thread{ID: kernel.NewID(), ChannelID: kernel.NewID()}, "x", "x", 0)
		kept := f.hit(f.main, "y", "y", 0)
		f.search.search = func(search.Request) (search.Page, error) { return search.Page{Items: []search.Result{gone, kept}}, nil }
		html := f.get(t, "/console/search?q=x").Body.String()
		if strings.Contains(html, string(gone.Message.ID)) || !strings.Contains(html, string(kept.Message.ID)) {
			t.Fatalf("%s", html)
		}
	})

	t.Run("without the search wired the page does not exist", func(t *testing.T) {
		f := newSearchFixture(t)
		f.c.d.Search = nil
		if w := f.get(t, "/console/search?q=x"); w.Code != http.StatusNotFound {
			t.Fatalf("status %d", w.Code)
		}
	})
}

func TestSafeHighlight(t *testing.T) {
	for in, want := range map[string]string{
		"<mark>deploy</mark> now":              "<mark>deploy</mark> now",
		"a &lt;b&gt; &amp; <mark>c</mark>":     "a &lt;b&gt; &amp; <mark>c</mark>",
		"<script>alert(1)</script>":            "&lt;script&gt;alert(1)&lt;/script&gt;",
		"<mark onclick=x>y</mark>":             "&lt;mark onclick=x&gt;y",
		"<mark><mark>a</mark></mark> b</mark>": "<mark>a</mark> b",
		"<mark>open":                           "<mark>open</mark>",
		"&lt;mark&gt;not a tag&lt;/mark&gt;":   "&lt;mark&gt;not a tag&lt;/mark&gt;",
		"nul\x00 and \x01 bytes":               "nul and  bytes",
		"quotes \" and ' are escaped":          "quotes &#34; and &#39; are escaped",
	} {
		if got := safeHighlight(in); got != want {
			t.Errorf("safeHighlight(%q) = %q, want %q", in, got, want)
		}
	}
}
