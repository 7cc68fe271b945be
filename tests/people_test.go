package tests

import (
	"net/http"
	"strings"
	"testing"
)

// TestPeople covers what a person who is not an owner may see and do, before and after grants,
// and that disabling a person stops all of its credentials at once.
func TestPeople(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Private")
		ch := in.owner.mustCreateChannel(t, sp.ID, "secret-plans")
		started := in.owner.mustCreateThread(t, ch.ID, "Plans", "the owner's private plans")

		p := newPlay(in.srv)
		p.clients["owner"] = in.owner
		p.vars["sp"] = map[string]any{"id": sp.ID}
		p.vars["ch"] = map[string]any{"id": ch.ID}
		p.vars["th"] = map[string]any{"id": started.Thread.ID}
		p.vars["msg"] = map[string]any{"id": started.Message.ID}
		p.vars["owner"] = map[string]any{"id": in.me.ID}
		const carolPassword = "carol's long password"
		noTrace := func(t *testing.T, p *play, r *response) {
			for _, s := range []string{sp.ID, ch.ID, started.Thread.ID, "private plans"} {
				if strings.Contains(string(r.raw), s) {
					t.Errorf("the answer shows %q: %s", s, truncate(string(r.raw), 2000))
				}
			}
		}
		p.run(t, []scenario{
			{
				name: "the owner creates a person", as: "owner", method: "POST", path: api("users"),
				body:   map[string]any{"handle": "carol", "display_name": "Carol", "password": carolPassword},
				status: http.StatusCreated, save: "carol", events: anyEvents,
				fields: map[string]any{"handle": "carol", "display_name": "Carol", "kind": "person", "status": "active", "is_owner": false},
			},
			{
				name: "a second person with the same handle is a conflict", as: "owner", method: "POST", path: api("users"),
				body:   map[string]any{"handle": "carol", "display_name": "Carol 2", "password": carolPassword},
				status: http.StatusConflict, fields: map[string]any{"code": "conflict"},
			},
			{
				name: "the person logs in", method: "POST", path: api("auth", "login"),
				body:   map[string]any{"handle": "carol", "password": carolPassword},
				status: http.StatusOK, check: loginAs("carol"), events: anyEvents,
				fields: map[string]any{"token": present},
			},
			{
				name: "the person cannot create people", as: "carol", method: "POST", path: api("users"),
				body:   map[string]any{"handle": "mallory", "display_name": "M", "password": carolPassword},
				status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"},
			},
			{
				name: "the person cannot create spaces", as: "carol", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "mine"}, status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"},
			},
			{
				name: "the person lists no space", as: "carol", method: "GET", path: api("spaces"),
				status: http.StatusOK, fields: map[string]any{"items": []any{}},
			},
			{
				name: "the owner's space is not found for the person", as: "carol", method: "GET", path: api("spaces", "{sp.id}"),
				status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "the owner's channel is not found for the person", as: "carol", method: "GET", path: api("channels", "{ch.id}"),
				status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "the owner's message is not found for the person", as: "carol", method: "GET", path: api("messages", "{msg.id}"),
				status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "posting into the owner's thread is not found", as: "carol", method: "POST", path: api("threads", "{th.id}", "messages"),
				body: map[string]any{"content": "let me in"}, status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "starting a thread in the owner's channel is not found", as: "carol", method: "POST", path: api("channels", "{ch.id}", "threads"),
				body: map[string]any{"title": "x", "content": "let me in"}, status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "the person's log shows nothing of the owner's channel", as: "carol", method: "GET", path: "/api/v1/events?after=0&limit=1000",
				status: http.StatusOK, check: noTrace,
			},
			{
				name: "the owner grants the person view", as: "owner", method: "POST", path: api("channels", "{ch.id}", "grants"),
				body: map[string]any{"principal_id": "{carol.id}", "level": "view"}, status: http.StatusCreated, events: anyEvents,
				fields: map[string]any{"channel_id": "{ch.id}", "principal_id": "{carol.id}", "level": "view"},
			},
			{
				name: "the owner lists the grant", as: "owner", method: "GET", path: api("channels", "{ch.id}", "grants"), status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var l page[grant]
					r.decode(t, &l)
					for _, g := range l.Items {
						if g.PrincipalID == p.lookup(t, "carol.id") && g.Level == "view" && g.ChannelID == ch.ID {
							return
						}
					}
					t.Errorf("grants %+v lack carol's view", l.Items)
				},
			},
			{
				name: "with view the person reads the channel", as: "carol", method: "GET", path: api("channels", "{ch.id}"),
				status: http.StatusOK, fields: map[string]any{"id": "{ch.id}", "name": "secret-plans"},
			},
			{
				name: "with view the person reads the thread", as: "carol", method: "GET", path: api("threads", "{th.id}", "messages"),
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					if !strings.Contains(string(r.raw), "private plans") {
						t.Errorf("the thread does not show its message: %s", r.raw)
					}
				},
			},
			{
				name: "with view the person sees the space in the list", as: "carol", method: "GET", path: api("spaces"), status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					if !strings.Contains(string(r.raw), sp.ID) {
						t.Errorf("spaces %s lack the granted channel's space", r.raw)
					}
				},
			},
			{
				name: "with view posting is forbidden", as: "carol", method: "POST", path: api("threads", "{th.id}", "messages"),
				body: map[string]any{"content": "may I?"}, status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"},
			},
			{
				name: "with view managing grants is forbidden", as: "carol", method: "POST", path: api("channels", "{ch.id}", "grants"),
				body: map[string]any{"principal_id": "{carol.id}", "level": "manage"}, status: http.StatusForbidden,
				fields: map[string]any{"code": "forbidden"},
			},
			{
				name: "the owner raises the grant to post", as: "owner", method: "POST", path: api("channels", "{ch.id}", "grants"),
				body: map[string]any{"principal_id": "{carol.id}", "level": "post"}, status: http.StatusCreated, orStatus: []int{http.StatusOK},
				events: anyEvents, fields: map[string]any{"level": "post"},
			},
			{
				name: "with post the person posts", as: "carol", method: "POST", path: api("threads", "{th.id}", "messages"),
				body: map[string]any{"content": "I can talk now"}, status: http.StatusCreated, events: []string{"message.created"},
			},
			{
				name: "the owner revokes the grant", as: "owner", method: "DELETE", path: api("channels", "{ch.id}", "grants", "{carol.id}"),
				status: http.StatusNoContent, events: anyEvents,
			},
			{
				name: "after the revocation the channel is not found again", as: "carol", method: "GET", path: api("channels", "{ch.id}"),
				status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "after the revocation posting is not found again", as: "carol", method: "POST", path: api("threads", "{th.id}", "messages"),
				body: map[string]any{"content": "still here?"}, status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "the person makes an API token", as: "carol", method: "POST", path: api("tokens"),
				body: map[string]any{"name": "carol's bot"}, status: http.StatusCreated, events: anyEvents,
				check: func(t *testing.T, p *play, r *response) {
					p.clients["carol_token"] = as(p.srv, r.obj()["token"].(string))
				},
			},
			{
				name: "the token works before the person is disabled", as: "carol_token", method: "GET", path: api("me"),
				status: http.StatusOK, fields: map[string]any{"handle": "carol"},
			},
			{
				name: "the person cannot disable anyone", as: "carol", method: "POST", path: api("users", "{carol.id}", "disable"),
				status: http.StatusForbidden,
			},
			{
				name: "the owner disables the person", as: "owner", method: "POST", path: api("users", "{carol.id}", "disable"),
				status: http.StatusOK, fields: map[string]any{"id": "{carol.id}", "status": "disabled"}, events: anyEvents,
			},
			{
				name: "the disabled person's session answers 401 at once", as: "carol", method: "GET", path: api("me"),
				status: http.StatusUnauthorized, fields: map[string]any{"code": "unauthenticated"},
			},
			{
				name: "the disabled person's API token answers 401 at once", as: "carol_token", method: "GET", path: api("me"),
				status: http.StatusUnauthorized, fields: map[string]any{"code": "unauthenticated"},
			},
			{
				name: "the disabled person cannot log in", method: "POST", path: api("auth", "login"),
				body:   map[string]any{"handle": "carol", "password": carolPassword},
				status: http.StatusUnauthorized, fields: map[string]any{"code": "unauthenticated"},
			},
			{
				name: "the owner sees the person as disabled", as: "owner", method: "GET", path: api("users"), status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var l page[user]
					r.decode(t, &l)
					for _, u := range l.Items {
						if u.ID == p.lookup(t, "carol.id") {
							if u.Status != "disabled" {
								t.Errorf("carol is %q", u.Status)
							}
							return
						}
					}
					t.Errorf("users %+v lack carol", l.Items)
				},
			},
			{
				name: "the last owner cannot disable itself", as: "owner", method: "POST", path: api("users", "{owner.id}", "disable"),
				status: http.StatusConflict, fields: map[string]any{"code": "last_owner"},
			},
		})
	})
}

// TestChangeOwnPassword is POST /api/v1/me/password: the current password is checked, the
// session it is called with stays, the person's other sessions end, and the new password signs
// in. The same request again with an Idempotency-Key is not replayed: a body with a password
// keeps no record.
func TestChangeOwnPassword(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		const old, next = "carol's long password", "carol's new long password"
		in.owner.do(t, http.MethodPost, api("users"), map[string]any{"handle": "carol", "display_name": "Carol", "password": old}).
			want(t, http.StatusCreated)
		here, elsewhere := mustLogin(t, in.srv, "carol", old), mustLogin(t, in.srv, "carol", old)
		r := here.do(t, http.MethodPost, api("me", "password"), map[string]any{"current_password": "not it", "new_password": next})
		r.want(t, http.StatusBadRequest)
		if r.code() != "validation_failed" {
			t.Fatalf("a wrong current password: %s", r.code())
		}
		here.do(t, http.MethodPost, api("me", "password"), map[string]any{"current_password": old, "new_password": next},
			header("Idempotency-Key", "change-1")).want(t, http.StatusNoContent)
		here.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK)
		elsewhere.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusUnauthorized)
		// Not replayed: the current password is now the new one, so the same body is refused.
		if r := here.do(t, http.MethodPost, api("me", "password"), map[string]any{"current_password": old, "new_password": next},
			header("Idempotency-Key", "change-1")); r.status != http.StatusBadRequest || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("the same request again: %d %s (replayed %q)", r.status, r.code(), r.header.Get("Idempotent-Replayed"))
		}
		mustLogin(t, in.srv, "carol", next)
	})
}

// TestNamesRefuseInvisibleCharacters holds the one rule of every name a person gives: the
// display names of people and agents, token names, the instance's name and the names of spaces
// and channels refuse control, bidirectional-formatting and invisible characters alike, and
// keep a name in NFC; a refused name changes nothing.
func TestNamesRefuseInvisibleCharacters(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Names")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		p := newPlay(in.srv)
		p.clients["owner"] = in.owner
		p.vars["sp"] = map[string]any{"id": sp.ID}
		p.vars["ch"] = map[string]any{"id": ch.ID}
		refused := func(field string) map[string]any {
			return map[string]any{"code": "validation_failed", "field": field}
		}
		const override, isolate, zeroWidth, joiner = "\u202e", "\u2066", "\u200b", "\u200d"
		p.run(t, []scenario{
			{
				name: "a person's display name with a right-to-left override is refused", as: "owner", method: "POST", path: api("users"),
				body:   map[string]any{"handle": "mallory", "display_name": "Mallory" + override + "exe.", "password": "a long enough password"},
				status: http.StatusBadRequest, fields: refused("display_name"),
			},
			{
				name: "a person's display name with a bidi isolate is refused", as: "owner", method: "POST", path: api("users"),
				body:   map[string]any{"handle": "mallory", "display_name": isolate + "Admin\u2069", "password": "a long enough password"},
				status: http.StatusBadRequest, fields: refused("display_name"),
			},
			{
				name: "an agent's display name with a zero-width space is refused", as: "owner", method: "POST", path: api("agents"),
				body:   map[string]any{"handle": "helper", "display_name": "Hel" + zeroWidth + "per"},
				status: http.StatusBadRequest, fields: refused("display_name"),
			},
			{
				name: "a token name with a right-to-left override is refused", as: "owner", method: "POST", path: api("tokens"),
				body: map[string]any{"name": "ci" + override}, status: http.StatusBadRequest, fields: refused("name"),
			},
			{
				name: "the instance's name with a bidi isolate is refused", as: "owner", method: "PUT", path: api("instance"),
				body: map[string]any{"name": isolate + "bothy\u2069"}, status: http.StatusBadRequest, fields: refused("name"),
			},
			{
				name: "a space's name with a zero-width space is refused", as: "owner", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "Na" + zeroWidth + "mes"}, status: http.StatusBadRequest, fields: refused("name"),
			},
			{
				name: "a space renamed with a zero-width joiner is refused", as: "owner", method: "PATCH", path: api("spaces", "{sp.id}"),
				body: map[string]any{"name": "Na" + joiner + "mes"}, status: http.StatusBadRequest, fields: refused("name"),
			},
			{
				name: "a channel's name with a zero-width joiner is refused", as: "owner", method: "POST", path: api("spaces", "{sp.id}", "channels"),
				body: map[string]any{"name": "gen" + joiner + "eral"}, status: http.StatusBadRequest, fields: refused("name"),
			},
			{
				name: "a channel renamed with a word joiner is refused", as: "owner", method: "PATCH", path: api("channels", "{ch.id}"),
				body: map[string]any{"name": "gen\u2060eral"}, status: http.StatusBadRequest, fields: refused("name"),
			},
			{
				name: "a decomposed name is kept composed", as: "owner", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "  Cafe\u0301  "}, status: http.StatusCreated, events: anyEvents,
				fields: map[string]any{"name": "Caf\u00e9"},
			},
		})
	})
}
