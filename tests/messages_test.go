package tests

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestMessages covers the life of a message: the author's client_msg_id, edits, deletion to a
// tombstone, reactions and mentions.
func TestMessages(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Talk")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		bob, bobc := in.mustCreateUser(t, "bob")
		in.owner.mustGrant(t, ch.ID, bob.ID, "post")
		started := in.owner.mustCreateThread(t, ch.ID, "Topic", "opening")

		p := newPlay(in.srv)
		p.clients["owner"] = in.owner
		p.clients["bob"] = bobc
		p.vars["th"] = map[string]any{"id": started.Thread.ID}
		p.vars["ch"] = map[string]any{"id": ch.ID, "main": ch.MainThreadID}
		p.vars["bob"] = map[string]any{"id": bob.ID}
		p.vars["owner"] = map[string]any{"id": in.me.ID}
		thumbs := url.PathEscape("👍")
		secret := "the words that must vanish " + uniqueName("x")
		p.run(t, []scenario{
			{
				name: "a message is posted with the author's client_msg_id", as: "owner", method: "POST", path: api("threads", "{th.id}", "messages"),
				body: map[string]any{"content": "hello", "client_msg_id": "c-1"}, status: http.StatusCreated, save: "m1",
				fields: map[string]any{"content": "hello", "client_msg_id": "c-1", "version": 1, "author_id": "{owner.id}"},
				events: []string{"message.created"},
			},
			{
				name: "the same client_msg_id again answers the same message and appends nothing", as: "owner", method: "POST",
				path: api("threads", "{th.id}", "messages"), body: map[string]any{"content": "hello", "client_msg_id": "c-1"},
				status: http.StatusOK, fields: map[string]any{"id": "{m1.id}", "content": "hello", "version": 1},
			},
			{
				name: "the same client_msg_id in another thread is a conflict", as: "owner", method: "POST", path: api("threads", "{ch.main}", "messages"),
				body: map[string]any{"content": "hello", "client_msg_id": "c-1"}, status: http.StatusConflict,
				fields: map[string]any{"code": "conflict"},
			},
			{
				name: "a thread is started with a client_msg_id", as: "owner", method: "POST", path: api("channels", "{ch.id}", "threads"),
				body:   map[string]any{"title": "Twice?", "content": "only once", "client_msg_id": "t-1"},
				status: http.StatusCreated, save: "t1", events: []string{"thread.created", "message.created"},
			},
			{
				name: "starting it again with the same client_msg_id answers the same thread and appends nothing", as: "owner", method: "POST",
				path: api("channels", "{ch.id}", "threads"), body: map[string]any{"title": "Twice?", "content": "only once", "client_msg_id": "t-1"},
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var tm threadWithMessage
					r.decode(t, &tm)
					if tm.Thread.ID != p.lookup(t, "t1.thread.id") || tm.Message.ID != p.lookup(t, "t1.message.id") {
						t.Errorf("another thread or message: %s", r.raw)
					}
				},
			},
			{
				name: "another author's same client_msg_id is its own message", as: "bob", method: "POST", path: api("threads", "{th.id}", "messages"),
				body: map[string]any{"content": "hello too", "client_msg_id": "c-1"}, status: http.StatusCreated, save: "b1",
				fields: map[string]any{"author_id": "{bob.id}", "content": "hello too"}, events: []string{"message.created"},
			},
			{
				name: "a mention of a person is stored with the message", as: "owner", method: "POST", path: api("threads", "{th.id}", "messages"),
				body: map[string]any{"content": "ping @bob, please look", "client_msg_id": "c-2"}, status: http.StatusCreated, save: "mention",
				fields: map[string]any{"mentions": []any{"{bob.id}"}}, events: []string{"message.created"},
			},
			{
				name: "the mention is there when the message is read again", as: "bob", method: "GET", path: api("messages", "{mention.id}"),
				status: http.StatusOK, fields: map[string]any{"mentions": []any{"{bob.id}"}},
			},
			{
				name: "the author edits the message", as: "owner", method: "PATCH", path: api("messages", "{m1.id}"),
				body: map[string]any{"content": "hello, edited"}, status: http.StatusOK,
				fields: map[string]any{"id": "{m1.id}", "content": "hello, edited", "version": 2, "edited_at": present},
				events: []string{"message.updated"},
			},
			{
				name: "a second edit counts another version", as: "owner", method: "PATCH", path: api("messages", "{m1.id}"),
				body: map[string]any{"content": "hello, edited twice"}, status: http.StatusOK,
				fields: map[string]any{"content": "hello, edited twice", "version": 3}, events: []string{"message.updated"},
			},
			{
				name: "the edited message reads back with its last content", as: "bob", method: "GET", path: api("messages", "{m1.id}"),
				status: http.StatusOK, fields: map[string]any{"content": "hello, edited twice", "version": 3, "deleted": false},
				check: func(t *testing.T, p *play, r *response) {
					if r.obj()["edited_at"] == nil {
						t.Errorf("edited_at is null after an edit")
					}
				},
			},
			{
				name: "the earlier contents are kept as revisions", as: "bob", method: "GET", path: api("messages", "{m1.id}", "revisions"),
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var l page[revision]
					r.decode(t, &l)
					var contents []string
					for _, rv := range l.Items {
						contents = append(contents, rv.Content)
					}
					if !slices.Contains(contents, "hello") || !slices.Contains(contents, "hello, edited") {
						t.Errorf("revisions %q lack the earlier contents", contents)
					}
				},
			},
			{
				name: "someone else cannot edit it", as: "bob", method: "PATCH", path: api("messages", "{m1.id}"),
				body: map[string]any{"content": "hijack"}, status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"},
			},
			{
				name: "the first reaction is added", as: "bob", method: "PUT", path: api("messages", "{m1.id}", "reactions", thumbs),
				status: http.StatusNoContent, events: []string{"reaction.added"},
			},
			{
				name: "the same reaction again changes nothing", as: "bob", method: "PUT", path: api("messages", "{m1.id}", "reactions", thumbs),
				status: http.StatusNoContent,
			},
			{
				name: "another person's same reaction is its own", as: "owner", method: "PUT", path: api("messages", "{m1.id}", "reactions", thumbs),
				status: http.StatusNoContent, events: []string{"reaction.added"},
			},
			{
				name: "a reaction is taken back", as: "bob", method: "DELETE", path: api("messages", "{m1.id}", "reactions", thumbs),
				status: http.StatusNoContent, events: []string{"reaction.removed"},
			},
			{
				name: "taking it back again changes nothing", as: "bob", method: "DELETE", path: api("messages", "{m1.id}", "reactions", thumbs),
				status: http.StatusNoContent,
			},
			{
				name: "a message with words to forget is posted", as: "bob", method: "POST", path: api("threads", "{th.id}", "messages"),
				body: map[string]any{"content": secret, "client_msg_id": "c-secret"}, status: http.StatusCreated, save: "doomed",
				events: []string{"message.created"},
			},
			{
				name: "it is edited once, so its words are in a revision too", as: "bob", method: "PATCH", path: api("messages", "{doomed.id}"),
				body: map[string]any{"content": secret + " (edited)"}, status: http.StatusOK, events: []string{"message.updated"},
			},
			{
				name: "the author deletes it", as: "bob", method: "DELETE", path: api("messages", "{doomed.id}"),
				status: http.StatusNoContent, events: []string{"message.deleted"},
			},
			{
				name: "a tombstone stays without the content", as: "owner", method: "GET", path: api("messages", "{doomed.id}"),
				status: http.StatusOK, fields: map[string]any{"id": "{doomed.id}", "deleted": true, "content": ""},
			},
			{
				name: "the revisions of a deleted message keep nothing of it", as: "bob", method: "GET", path: api("messages", "{doomed.id}", "revisions"),
				status: http.StatusOK, orStatus: []int{http.StatusGone, http.StatusNotFound}, events: anyEvents,
				check: func(t *testing.T, p *play, r *response) {
					if strings.Contains(string(r.raw), "words that must vanish") {
						t.Errorf("the revisions still hold the deleted content: %s", r.raw)
					}
				},
			},
			{
				name: "a deleted message cannot be edited", as: "bob", method: "PATCH", path: api("messages", "{doomed.id}"),
				body: map[string]any{"content": "back from the dead"}, status: http.StatusGone, fields: map[string]any{"code": "message_deleted"},
			},
			{
				name: "the thread lists the tombstone without the content", as: "owner", method: "GET", path: api("threads", "{th.id}", "messages"),
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					if strings.Contains(string(r.raw), "words that must vanish") {
						t.Errorf("the thread still holds the deleted content: %s", truncate(string(r.raw), 2000))
					}
					var l page[message]
					r.decode(t, &l)
					i := slices.IndexFunc(l.Items, func(m message) bool { return m.ID == p.lookup(t, "doomed.id") })
					if i < 0 || !l.Items[i].Deleted {
						t.Errorf("the deleted message is not listed as a tombstone: %+v", l.Items)
					}
				},
			},
			{
				name: "no event in the log holds the deleted content any more", as: "owner", method: "GET", path: "/api/v1/events?after=0&limit=1000",
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					if strings.Contains(string(r.raw), "words that must vanish") {
						t.Errorf("/events still holds the deleted content: %s", truncate(string(r.raw), 3000))
					}
				},
			},
			{
				name: "nor does the author's own view of the log", as: "bob", method: "GET", path: "/api/v1/events?after=0&limit=1000",
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					if strings.Contains(string(r.raw), "words that must vanish") {
						t.Errorf("/events still holds the deleted content: %s", truncate(string(r.raw), 3000))
					}
				},
			},
		})
	})
}

// TestMessagePaging pages through a thread with before and after: every message comes exactly
// once, in order, and has_more is true until the last page.
func TestMessagePaging(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Pages")
		ch := in.owner.mustCreateChannel(t, sp.ID, "long")
		started := in.owner.mustCreateThread(t, ch.ID, "Many", "m0")
		want := []string{started.Message.ID}
		for i := 1; i < 8; i++ {
			want = append(want, in.owner.mustPost(t, started.Thread.ID, "m"+string(rune('0'+i))).ID)
		}
		list := func(t *testing.T, query string) page[message] {
			t.Helper()
			var pg page[message]
			in.owner.do(t, http.MethodGet, api("threads", started.Thread.ID, "messages")+query, nil).want(t, http.StatusOK).decode(t, &pg)
			for i := 1; i < len(pg.Items); i++ {
				if pg.Items[i-1].ID >= pg.Items[i].ID {
					t.Errorf("page %s is not in ascending id order: %s then %s", query, pg.Items[i-1].ID, pg.Items[i].ID)
				}
			}
			return pg
		}
		ids := func(pg page[message]) []string {
			var out []string
			for _, m := range pg.Items {
				out = append(out, m.ID)
			}
			return out
		}
		t.Run("the first page is the newest messages", func(t *testing.T) {
			pg := list(t, "?limit=3")
			if got := ids(pg); !slices.Equal(got, want[5:]) || !pg.HasMore {
				t.Errorf("ids %v has_more %v, want %v and more", got, pg.HasMore, want[5:])
			}
		})
		t.Run("paging backwards with before reaches the oldest message once", func(t *testing.T) {
			var got []string
			query := "?limit=3"
			for range 10 {
				pg := list(t, query)
				got = append(ids(pg), got...)
				if !pg.HasMore {
					break
				}
				query = "?limit=3&before=" + pg.Items[0].ID
			}
			if !slices.Equal(got, want) {
				t.Errorf("backwards %v, want %v", got, want)
			}
		})
		t.Run("paging forwards with after reaches the newest message once", func(t *testing.T) {
			var got []string
			query := "?limit=3&after=" + want[0]
			got = append(got, want[0])
			for range 10 {
				pg := list(t, query)
				got = append(got, ids(pg)...)
				if !pg.HasMore {
					break
				}
				query = "?limit=3&after=" + pg.Items[len(pg.Items)-1].ID
			}
			if !slices.Equal(got, want) {
				t.Errorf("forwards %v, want %v", got, want)
			}
		})
		t.Run("after the newest message there is nothing", func(t *testing.T) {
			pg := list(t, "?after="+want[len(want)-1])
			if len(pg.Items) != 0 || pg.HasMore {
				t.Errorf("ids %v has_more %v, want nothing", ids(pg), pg.HasMore)
			}
		})
		t.Run("threads of a channel page the same way", func(t *testing.T) {
			var all page[thread]
			in.owner.do(t, http.MethodGet, api("channels", ch.ID, "threads"), nil).want(t, http.StatusOK).decode(t, &all)
			if len(all.Items) != 2 || all.HasMore {
				t.Fatalf("threads %+v has_more %v, want the main thread and one more", all.Items, all.HasMore)
			}
			var first page[thread]
			in.owner.do(t, http.MethodGet, api("channels", ch.ID, "threads")+"?limit=1", nil).want(t, http.StatusOK).decode(t, &first)
			if len(first.Items) != 1 || !first.HasMore || first.Items[0].ID != all.Items[1].ID {
				t.Errorf("the first page of one %+v (has_more %v), want the newest thread and more", first.Items, first.HasMore)
			}
		})
	})
}
