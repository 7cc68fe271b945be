package tests

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// searchPage is the answer of GET /api/v1/search.
type searchPage struct {
	Items []struct {
		Message   json.RawMessage `json:"message"`
		ChannelID string          `json:"channel_id"`
		ThreadID  string          `json:"thread_id"`
		Highlight string          `json:"highlight"`
	} `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// ids are the message ids of the page, in order.
func (p searchPage) ids(tb testing.TB) []string {
	tb.Helper()
	out := []string{}
	for _, it := range p.Items {
		var m message
		if err := json.Unmarshal(it.Message, &m); err != nil {
			tb.Fatal(err)
		}
		out = append(out, m.ID)
	}
	return out
}

func (c *client) search(tb testing.TB, params url.Values, opts ...reqOption) *response {
	tb.Helper()
	return c.do(tb, http.MethodGet, api("search")+"?"+params.Encode(), nil, opts...)
}

func (c *client) mustSearch(tb testing.TB, q string, more ...string) searchPage {
	tb.Helper()
	params := url.Values{"q": {q}}
	for i := 0; i+1 < len(more); i += 2 {
		params.Set(more[i], more[i+1])
	}
	var p searchPage
	c.search(tb, params).want(tb, http.StatusOK).decode(tb, &p)
	return p
}

// all follows next_cursor to the end and answers every id found.
func (c *client) searchAll(tb testing.TB, q string, limit string) []string {
	tb.Helper()
	var out []string
	cursor := ""
	for range 50 {
		more := []string{"limit", limit}
		if cursor != "" {
			more = append(more, "cursor", cursor)
		}
		p := c.mustSearch(tb, q, more...)
		out = append(out, p.ids(tb)...)
		if p.NextCursor == nil {
			return out
		}
		cursor = *p.NextCursor
	}
	tb.Fatal("the pages never end")
	return nil
}

// TestSearch searches messages through the REST API on the real binary: by word, prefix,
// phrase, author and channel, a thread's title, folded diacritics; only in channels the caller
// may read (never another's DM, not for the owner either; not page by page either); not by
// edited-away or deleted text; with hostile queries refused or taken as words, never a failure.
func TestSearch(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Work")
		general := in.owner.mustCreateChannel(t, sp.ID, "general")
		secret := in.owner.mustCreateChannel(t, sp.ID, "secret")
		bob, bobc := in.mustCreateUser(t, "bob")
		carol, carolc := in.mustCreateUser(t, "carol")
		dave, davec := in.mustCreateUser(t, "dave")
		in.owner.mustGrant(t, general.ID, bob.ID, "post")
		in.owner.mustGrant(t, general.ID, carol.ID, "view")
		helper, helperc := in.mustCreateAgent(t, "helper")
		in.owner.mustGrant(t, general.ID, helper.ID, "view")

		release := in.owner.mustPost(t, general.MainThreadID, "We deploy the <b>release</b> tonight")
		cafe := bobc.mustPost(t, general.MainThreadID, "The café opens at nine, deploy later")
		plan := in.owner.mustCreateThread(t, general.ID, "Roadmap for Q3", "first draft attached")
		hidden := in.owner.mustPost(t, secret.MainThreadID, "deploy the secret plans")
		dm := bobc.mustDM(t, http.StatusCreated, dave.ID)
		private := bobc.mustPost(t, dm.MainThreadID, "deploy words between us")
		_ = carol

		t.Run("finds by word, prefix, phrase, author, channel and title, newest first", func(t *testing.T) {
			for _, c := range []struct {
				q    string
				more []string
				want []string
			}{
				{"deplo", nil, []string{cafe.ID, release.ID}},
				{"release", nil, []string{release.ID}},
				{`"we deploy"`, nil, []string{release.ID}},
				{`"the deploy"`, nil, []string{}},
				{"deploy -cafe", nil, []string{release.ID}},
				{"deploy from:@bob", nil, []string{cafe.ID}},
				{"deploy from:@nobody", nil, []string{}},
				{"deploy", []string{"author_id", in.me.ID}, []string{release.ID}},
				{"deploy in:#general", nil, []string{cafe.ID, release.ID}},
				{"deploy in:#secret", nil, []string{}}, // carol may not read it: no results, no error
				{"deploy", []string{"channel_id", secret.ID}, []string{}},
				{"CAFE", nil, []string{cafe.ID}},
				{"roadmap", nil, []string{plan.Message.ID}},
				{"deploy", []string{"before", "2000-01-01"}, []string{}},
				{"deploy after:2000-01-01", nil, []string{cafe.ID, release.ID}},
			} {
				if got := carolc.mustSearch(t, c.q, c.more...).ids(t); !slices.Equal(got, c.want) {
					t.Errorf("carol %q %v: %v, want %v", c.q, c.more, got, c.want)
				}
			}
		})
		t.Run("answers each message as GET /messages/{id} does, with its place and a marked excerpt", func(t *testing.T) {
			p := carolc.mustSearch(t, "release")
			if len(p.Items) != 1 {
				t.Fatalf("items %+v", p.Items)
			}
			var got, want map[string]any
			json.Unmarshal(p.Items[0].Message, &got)
			carolc.do(t, http.MethodGet, api("messages", release.ID), nil).want(t, http.StatusOK).decode(t, &want)
			if !reflect.DeepEqual(got, want) || p.Items[0].ChannelID != general.ID || p.Items[0].ThreadID != general.MainThreadID {
				t.Fatalf("item %+v\nGET %v", p.Items[0], want)
			}
			if h := p.Items[0].Highlight; h != "We deploy the &lt;b&gt;<mark>release</mark>&lt;/b&gt; tonight" {
				t.Fatalf("highlight %q", h)
			}
			if h := carolc.mustSearch(t, "roadmap").Items[0].Highlight; h != "<mark>Roadmap</mark> for Q3" {
				t.Fatalf("title highlight %q", h)
			}
		})
		t.Run("searches only what each caller may read, page by page too", func(t *testing.T) {
			for _, c := range []struct {
				who  string
				c    *client
				want []string
			}{
				{"the owner (all channels, not others' DMs)", in.owner, []string{hidden.ID, cafe.ID, release.ID}},
				{"a poster, in their DM too", bobc, []string{private.ID, cafe.ID, release.ID}},
				{"a reader", carolc, []string{cafe.ID, release.ID}},
				{"an outsider, in their DM only", davec, []string{private.ID}},
				{"an agent, by its grants", helperc, []string{cafe.ID, release.ID}},
			} {
				for _, limit := range []string{"1", "2", "20"} {
					if got := c.c.searchAll(t, "deploy", limit); !slices.Equal(got, c.want) {
						t.Errorf("%s, limit %s: %v, want %v", c.who, limit, got, c.want)
					}
				}
				if got := c.c.mustSearch(t, "deploy", "sort", "relevance", "limit", "100").ids(t); len(got) != len(c.want) {
					t.Errorf("%s by relevance: %v", c.who, got)
				}
			}
			if got := in.owner.mustSearch(t, "deploy", "channel_id", dm.ID).ids(t); len(got) != 0 {
				t.Errorf("the owner in bob's DM: %v", got)
			}
		})
		t.Run("an edit and a deletion change what is found", func(t *testing.T) {
			bobc.do(t, http.MethodPatch, api("messages", cafe.ID), map[string]any{"content": "The tea room opens at nine"}).want(t, http.StatusOK)
			if got := carolc.mustSearch(t, "cafe").ids(t); len(got) != 0 {
				t.Errorf("found by edited-away text: %v", got)
			}
			if got := carolc.mustSearch(t, "tea").ids(t); !slices.Equal(got, []string{cafe.ID}) {
				t.Errorf("by the new text: %v", got)
			}
			in.owner.do(t, http.MethodDelete, api("messages", release.ID), nil).want(t, http.StatusNoContent)
			if got := carolc.mustSearch(t, "release").ids(t); len(got) != 0 {
				t.Errorf("found a deleted message: %v", got)
			}
			in.owner.do(t, http.MethodPatch, api("threads", plan.Thread.ID), map[string]any{"title": "Budget for Q4"}).want(t, http.StatusOK)
			if got := carolc.mustSearch(t, "roadmap").ids(t); len(got) != 0 {
				t.Errorf("found by the old title: %v", got)
			}
			if got := carolc.mustSearch(t, "budget").ids(t); !slices.Equal(got, []string{plan.Message.ID}) {
				t.Errorf("by the new title: %v", got)
			}
		})
		t.Run("hostile queries are words or refused, never a failure", func(t *testing.T) {
			for _, q := range []string{`"`, `*`, `NEAR(`, `NEAR(a b)`, `:`, `&|!`, `deploy:*`, `a:b`, `'; DROP TABLE messages; --`,
				`"unclosed phrase`, `-`, `--`, `(`, `)`, `^x`, `{body}: x`, `日本語 テスト`, "emoji 🎉", `\`, `%_`, "OR", "AND NOT"} {
				r := carolc.search(t, url.Values{"q": {q}})
				if r.status != http.StatusOK && !(r.status == http.StatusBadRequest && r.code() == "validation_failed") {
					t.Errorf("%q: %d %s", q, r.status, r)
				}
			}
			for _, c := range []struct {
				params url.Values
				code   string
			}{
				{url.Values{"q": {strings.Repeat("deploy ", 1500)}}, "validation_failed"},
				{url.Values{"q": {""}}, "validation_failed"},
				{url.Values{"q": {"-deploy"}}, "validation_failed"},
				{url.Values{"q": {"x"}, "limit": {"101"}}, "validation_failed"},
				{url.Values{"q": {"x"}, "has": {"link"}}, "validation_failed"},
				{url.Values{"q": {"x"}, "sort": {"oldest"}}, "validation_failed"},
				{url.Values{"q": {"x"}, "before": {"yesterday"}}, "validation_failed"},
				{url.Values{"q": {"x"}, "channel_id": {"general"}}, "validation_failed"},
				{url.Values{"q": {"x"}, "cursor": {"bm90IGEgY3Vyc29y"}}, "cursor_invalid"},
				{url.Values{"q": {"x has:link"}}, "validation_failed"},
			} {
				r := carolc.search(t, c.params, breaksDocument())
				if r.status != http.StatusBadRequest || r.code() != c.code {
					t.Errorf("%.60v: %d %s, want 400 %s", c.params, r.status, r, c.code)
				}
			}
		})
		t.Run("finds a message by its attachment's name and with has:file", func(t *testing.T) {
			f := bobc.mustUpload(t, "Quarterly-Report.pdf", "application/pdf", []byte("%PDF-1.4 not much"))
			withFile := bobc.mustPostFiles(t, general.MainThreadID, "see attached", f.ID)["id"].(string)
			for _, c := range []struct {
				q    string
				more []string
			}{{"quarterly", nil}, {"report pdf", nil}, {"has:file", nil}, {"attached", []string{"has", "file"}}, {"from:@bob has:file", nil}} {
				if got := carolc.mustSearch(t, c.q, c.more...).ids(t); !slices.Equal(got, []string{withFile}) {
					t.Errorf("%q %v: %v, want the message with the file", c.q, c.more, got)
				}
			}
			if got := davec.mustSearch(t, "has:file").ids(t); len(got) != 0 {
				t.Errorf("an outsider finds %v", got)
			}
		})
		t.Run("a caller without a token is refused", func(t *testing.T) {
			anon := as(in.srv, "")
			if r := anon.search(t, url.Values{"q": {"deploy"}}, breaksDocument()); r.status != http.StatusUnauthorized {
				t.Fatalf("anonymous: %d %s", r.status, r)
			}
		})
	})
}

// TestSearchMCP: an outside agent searches through the MCP tool search_messages and finds what
// REST finds for its token, nothing of a channel it may not read.
func TestSearchMCP(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng, "--set", "mcp.enabled=true")
		sp := in.owner.mustCreateSpace(t, "Work")
		open := in.owner.mustCreateChannel(t, sp.ID, "open")
		secret := in.owner.mustCreateChannel(t, sp.ID, "secret")
		seen := in.owner.mustPost(t, open.MainThreadID, "the deploy went fine")
		in.owner.mustPost(t, secret.MainThreadID, "the deploy of the secret")
		bot, botc := in.mustCreateAgent(t, "scout")
		in.owner.mustGrant(t, open.ID, bot.ID, "view")
		s := mcpSession(t, in.srv, botc.token)
		var got searchPage
		mustTool(t, s, "search_messages", map[string]any{"query": "deplo"}, &got)
		if ids := got.ids(t); !slices.Equal(ids, []string{seen.ID}) || !strings.Contains(got.Items[0].Highlight, "<mark>deploy</mark>") {
			t.Fatalf("search_messages: %+v", got)
		}
		if rest := botc.mustSearch(t, "deplo").ids(t); !slices.Equal(rest, got.ids(t)) {
			t.Fatalf("REST %v, MCP %v", rest, got.ids(t))
		}
		mustTool(t, s, "search_messages", map[string]any{"query": "deploy", "channel_id": secret.ID}, &got)
		if len(got.Items) != 0 {
			t.Fatalf("in a channel it may not read: %+v", got)
		}
		wantToolError(t, s, "search_messages", map[string]any{"query": strings.Repeat("x", 2000)}, "validation_failed")
	})
}
