package tests

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// loginAs returns a check that makes the session token of the answer the client called name.
func loginAs(name string) func(t *testing.T, p *play, r *response) {
	return func(t *testing.T, p *play, r *response) {
		tok, _ := r.obj()["token"].(string)
		if tok == "" {
			t.Fatalf("%s: no token", r)
		}
		p.clients[name] = as(p.srv, tok)
	}
}

// TestReadmeFlow walks the path of the README: the printed setup code, the owner's login,
// a space, a channel, a thread and a message, and the log that tells all of it in order.
func TestReadmeFlow(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		srv := mustStart(t, eng)
		p := newPlay(srv)
		p.vars["setup"] = map[string]any{"code": srv.setupCode}
		t.Run("the printed link opens the console's setup page", func(t *testing.T) {
			u, err := url.Parse(srv.setupLink)
			if err != nil || u.Path != "/console/setup" || u.Query().Get("code") != srv.setupCode {
				t.Fatalf("setup link %q (%v)", srv.setupLink, err)
			}
			r := as(srv, "").do(t, http.MethodGet, u.RequestURI(), nil, breaksDocument()).want(t, http.StatusOK)
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Errorf("content type %q", ct)
			}
			page := string(r.raw)
			if !strings.Contains(page, `data-testid="setup-form"`) || !strings.Contains(page, `name="code" value="`+html.EscapeString(srv.setupCode)+`"`) {
				t.Errorf("the page has no setup form carrying the code")
			}
		})
		p.run(t, []scenario{
			{
				name: "a wrong setup code creates nobody", method: "POST", path: api("setup"),
				body:   map[string]any{"code": "not-the-printed-code", "handle": "intruder", "display_name": "Intruder", "password": ownerPassword},
				status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"},
			},
			{
				name: "nobody can log in before setup", method: "POST", path: api("auth", "login"),
				body:   map[string]any{"handle": "intruder", "password": ownerPassword},
				status: http.StatusUnauthorized, orStatus: []int{http.StatusServiceUnavailable},
			},
			{
				name: "the printed setup code creates the owner", method: "POST", path: api("setup"),
				body:   map[string]any{"code": "{setup.code}", "handle": "owner", "display_name": "The Owner", "password": ownerPassword},
				status: http.StatusCreated, save: "owner_user",
				fields: map[string]any{"handle": "owner", "display_name": "The Owner", "kind": "person", "status": "active", "is_owner": true},
			},
			{
				name: "the same code cannot set up a second owner", method: "POST", path: api("setup"),
				body:   map[string]any{"code": "{setup.code}", "handle": "owner2", "display_name": "Another", "password": ownerPassword},
				status: http.StatusConflict, fields: map[string]any{"code": "setup_complete", "status": 409, "correlation_id": present},
			},
			{
				name: "the owner logs in with handle and password", method: "POST", path: api("auth", "login"),
				body:   map[string]any{"handle": "owner", "password": ownerPassword},
				status: http.StatusOK, save: "session", check: loginAs("owner"),
				fields: map[string]any{"token": present, "expires_at": present},
			},
			{
				name: "the owner reads itself", as: "owner", method: "GET", path: api("me"),
				status: http.StatusOK, fields: map[string]any{"id": "{owner_user.id}", "handle": "owner", "is_owner": true},
			},
			{
				name: "the owner creates a space", as: "owner", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "Home"}, status: http.StatusCreated, save: "space",
				fields: map[string]any{"name": "Home"}, events: []string{"space.created"},
			},
			{
				name: "the owner lists the space", as: "owner", method: "GET", path: api("spaces"), status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var l page[space]
					r.decode(t, &l)
					if len(l.Items) != 1 || l.Items[0].ID != p.lookup(t, "space.id") {
						t.Errorf("spaces %+v, want only the new one", l.Items)
					}
				},
			},
			{
				name: "the owner creates a channel in the space", as: "owner", method: "POST", path: api("spaces", "{space.id}", "channels"),
				body: map[string]any{"name": "general"}, status: http.StatusCreated, save: "channel",
				fields: map[string]any{"name": "general", "space_id": "{space.id}", "kind": "channel", "main_thread_id": present},
				events: []string{"channel.created", "thread.created"},
			},
			{
				name: "the owner lists the channels of the space", as: "owner", method: "GET", path: api("spaces", "{space.id}", "channels"),
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var l page[channel]
					r.decode(t, &l)
					if len(l.Items) != 1 || l.Items[0].ID != p.lookup(t, "channel.id") {
						t.Errorf("channels %+v, want only the new one", l.Items)
					}
				},
			},
			{
				name: "the owner renames the space", as: "owner", method: "PATCH", path: api("spaces", "{space.id}"),
				body: map[string]any{"name": "Home sweet home"}, status: http.StatusOK,
				fields: map[string]any{"id": "{space.id}", "name": "Home sweet home"}, events: []string{"space.updated"},
			},
			{
				name: "the space reads back with its new name", as: "owner", method: "GET", path: api("spaces", "{space.id}"),
				status: http.StatusOK, fields: map[string]any{"id": "{space.id}", "name": "Home sweet home", "created_at": "{space.created_at}"},
			},
			{
				name: "the owner sets the channel's topic", as: "owner", method: "PATCH", path: api("channels", "{channel.id}"),
				body: map[string]any{"topic": "Everything"}, status: http.StatusOK,
				fields: map[string]any{"name": "general", "topic": "Everything"}, events: []string{"channel.updated"},
			},
			{
				name: "the owner starts a thread with its first message", as: "owner", method: "POST", path: api("channels", "{channel.id}", "threads"),
				body:   map[string]any{"title": "Hello", "content": "first words", "client_msg_id": "readme-1"},
				status: http.StatusCreated, save: "started",
				events: []string{"thread.created", "message.created"},
				check: func(t *testing.T, p *play, r *response) {
					var tm threadWithMessage
					r.decode(t, &tm)
					if tm.Thread.Title != "Hello" || tm.Thread.ChannelID != p.lookup(t, "channel.id") || tm.Thread.IsMain {
						t.Errorf("thread %+v", tm.Thread)
					}
					if tm.Message.ThreadID != tm.Thread.ID || tm.Message.Content != "first words" || tm.Message.Version != 1 {
						t.Errorf("message %+v", tm.Message)
					}
				},
			},
			{
				name: "the owner answers in the thread", as: "owner", method: "POST", path: api("threads", "{started.thread.id}", "messages"),
				body:   map[string]any{"content": "second words", "client_msg_id": "readme-2"},
				status: http.StatusCreated, save: "reply", events: []string{"message.created"},
				fields: map[string]any{"thread_id": "{started.thread.id}", "channel_id": "{channel.id}", "space_id": "{space.id}",
					"author_id": "{owner_user.id}", "content": "second words", "client_msg_id": "readme-2", "version": 1, "deleted": false,
					"mentions": []any{}, "edited_at": nil},
			},
			{
				name: "the thread lists both messages in order", as: "owner", method: "GET", path: api("threads", "{started.thread.id}", "messages"),
				status: http.StatusOK, fields: map[string]any{"has_more": false},
				check: func(t *testing.T, p *play, r *response) {
					var l page[message]
					r.decode(t, &l)
					if len(l.Items) != 2 || l.Items[0].Content != "first words" || l.Items[1].Content != "second words" {
						t.Errorf("messages %+v", l.Items)
					}
				},
			},
			{
				name: "the thread counts its messages", as: "owner", method: "GET", path: api("channels", "{channel.id}", "threads"),
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var l page[thread]
					r.decode(t, &l)
					for _, th := range l.Items {
						if th.ID == p.lookup(t, "started.thread.id") {
							if th.MessageCount != 2 || th.LastMessageAt == nil {
								t.Errorf("thread %+v: want 2 messages and a last_message_at", th)
							}
							return
						}
					}
					t.Errorf("the new thread is not in %+v", l.Items)
				},
			},
			{
				name: "the log tells everything in order with consecutive seqs", as: "owner", method: "GET", path: "/api/v1/events?after=0",
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var pg eventPage
					r.decode(t, &pg)
					var got []string
					for i, e := range pg.Events {
						if i > 0 && e.Seq != pg.Events[i-1].Seq+1 {
							t.Errorf("seq %d follows %d", e.Seq, pg.Events[i-1].Seq)
						}
						if strings.HasPrefix(e.Type, "space.") || strings.HasPrefix(e.Type, "channel.") ||
							strings.HasPrefix(e.Type, "thread.") || strings.HasPrefix(e.Type, "message.") {
							got = append(got, e.Type)
						}
					}
					want := []string{"space.created", "channel.created", "thread.created", "space.updated", "channel.updated",
						"thread.created", "message.created", "message.created"}
					if strings.Join(got, " ") != strings.Join(want, " ") {
						t.Errorf("events %v, want %v", got, want)
					}
					if n := len(pg.Events); n == 0 || pg.Events[n-1].Seq != pg.HeadSeq || pg.NextAfter != pg.HeadSeq {
						t.Errorf("head_seq %d, next_after %d, last event %+v", pg.HeadSeq, pg.NextAfter, pg.Events)
					}
					last := pg.Events[len(pg.Events)-1]
					if last.Type != "message.created" || last.ThreadID != p.lookup(t, "started.thread.id") ||
						last.ChannelID != p.lookup(t, "channel.id") || last.SpaceID != p.lookup(t, "space.id") {
						t.Errorf("the last event %+v does not name its thread, channel and space", last)
					}
				},
			},
			{
				name: "the owner logs out", as: "owner", method: "POST", path: api("auth", "logout"), status: http.StatusNoContent,
				events: anyEvents,
			},
			{
				name: "the ended session no longer works", as: "owner", method: "GET", path: api("me"), status: http.StatusUnauthorized,
				fields: map[string]any{"code": "unauthenticated"}, events: anyEvents,
			},
		})
	})
}

// TestTokens covers API tokens: shown once, usable as a bearer token, listed without their
// value, and dead at once after revocation.
func TestTokens(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		p := newPlay(in.srv)
		p.clients["owner"] = in.owner
		p.run(t, []scenario{
			{
				name: "the owner creates a token and sees its value once", as: "owner", method: "POST", path: api("tokens"),
				body: map[string]any{"name": "my bot"}, status: http.StatusCreated, save: "tok", events: anyEvents,
				fields: map[string]any{"name": "my bot", "id": present, "created_at": present},
				check: func(t *testing.T, p *play, r *response) {
					tok, _ := r.obj()["token"].(string)
					if !strings.HasPrefix(tok, "bothy_") || len(tok) < len("bothy_")+20 {
						t.Fatalf("token %q: want bothy_ and a long secret", tok)
					}
					p.clients["bot"] = as(p.srv, tok)
				},
			},
			{
				name: "the token works as a bearer token", as: "bot", method: "GET", path: api("me"), status: http.StatusOK,
				fields: map[string]any{"handle": "owner"},
			},
			{
				name: "the token acts for its holder", as: "bot", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "made by token"}, status: http.StatusCreated, events: []string{"space.created"},
			},
			{
				name: "the list names the token but never shows its value", as: "owner", method: "GET", path: api("tokens"), status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					items, _ := r.obj()["items"].([]any)
					if len(items) != 1 {
						t.Fatalf("items %v, want the one token", items)
					}
					it := items[0].(map[string]any)
					if it["id"] != p.lookup(t, "tok.id") || it["name"] != "my bot" {
						t.Errorf("item %v", it)
					}
					if _, has := it["token"]; has {
						t.Errorf("the list shows the token value: %v", it)
					}
					if strings.Contains(string(r.raw), p.lookup(t, "tok.token").(string)) {
						t.Errorf("the list holds the secret: %s", r.raw)
					}
					if it["last_used_at"] == nil {
						t.Errorf("last_used_at is null after the token was used: %v", it)
					}
				},
			},
			{
				name: "the owner revokes the token", as: "owner", method: "DELETE", path: api("tokens", "{tok.id}"),
				status: http.StatusNoContent, events: anyEvents,
			},
			{
				name: "the revoked token answers 401 at once", as: "bot", method: "GET", path: api("me"),
				status: http.StatusUnauthorized, fields: map[string]any{"code": "unauthenticated"},
			},
			{
				name: "revoking it again finds nothing", as: "owner", method: "DELETE", path: api("tokens", "{tok.id}"),
				status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "the list is empty again", as: "owner", method: "GET", path: api("tokens"), status: http.StatusOK,
				fields: map[string]any{"items": []any{}},
			},
		})
	})
}
