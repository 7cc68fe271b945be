package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/appliance/httpapi"
	"bothy.dev/bothy/appliance/passwords"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// namedTokens lets a scenario name its caller ("olga", "echo") instead of carrying a token: the
// name is swapped for the real token before identity authenticates it.
type namedTokens struct {
	id     *identity.Service
	tokens map[string]string
}

func (n *namedTokens) Authenticate(ctx context.Context, token string) (kernel.Actor, error) {
	if t, ok := n.tokens[token]; ok {
		token = t
	}
	return n.id.Authenticate(ctx, token)
}

// people is the start of an API on a real store with the real rules (authz) and identity: the
// owner olga (password owner-password) and the people of handles (password handle+"-password")
// logged in, their ids in api.vars and their tokens under their handles in names.
type people struct {
	db    *storage.DB
	clock *kernel.ManualClock
	az    *authz.Service
	id    *identity.Service
	api   *chatAPI
	names *namedTokens
}

func newPeople(t *testing.T, handles ...string) people {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, storage.Options{})
	clock := kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	azStore := storage.NewAuthzStore(db)
	az := authz.New(authz.Deps{Store: azStore, Structure: azStore, UoW: db, Events: db, Clock: clock})
	cheap := passwords.New(passwords.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}, 0)
	id := identity.New(identity.Deps{Store: storage.NewIdentityStore(db), UoW: db, Events: db, Authz: az, Hasher: cheap, Clock: clock},
		identity.DefaultConfig())
	p := people{db: db, clock: clock, az: az, id: id, api: &chatAPI{db: db, vars: map[string]map[string]any{}},
		names: &namedTokens{id: id, tokens: map[string]string{}}}

	olga, err := id.BootstrapOwner(ctx, "olga", "Olga", "owner-password")
	if err != nil {
		t.Fatal(err)
	}
	pws := map[identity.User]string{olga: "owner-password"}
	owner := kernel.Actor{ID: olga.ID, Kind: kernel.KindPerson, IsOwner: true}
	for _, h := range handles {
		u, err := id.CreateUser(ctx, owner, h, h, h+"-password")
		if err != nil {
			t.Fatal(err)
		}
		pws[u] = h + "-password"
	}
	for u, pw := range pws {
		res, err := id.Login(ctx, u.Handle, pw, "192.0.2.1")
		if err != nil {
			t.Fatal(err)
		}
		p.names.tokens[u.Handle] = res.Token
		p.api.vars[u.Handle] = map[string]any{"id": string(u.ID)}
	}
	return p
}

// newAgentAPI is a router with the identity, chat, grant and agent routes on a real store, with
// the real rules (authz) and an owner olga and a person pia logged in.
func newAgentAPI(t *testing.T) (*chatAPI, *namedTokens) {
	t.Helper()
	p := newPeople(t, "pia")
	db, clock, az, id, api, names := p.db, p.clock, p.az, p.id, p.api, p.names
	chatStore := storage.NewChatStore(db)
	chats := chat.New(chat.Deps{Store: chatStore, Principals: chatStore, UoW: db, Events: db, Authz: az, Scoper: az, Clock: clock})
	ags := agents.New(agents.Deps{Store: storage.NewAgentStore(db), Principals: id, UoW: db, Events: db, Authz: az})
	rt := httpapi.NewRouter(names, httpapi.NewIdempotency(db, db), httpapi.Options{})
	rt.Handle(httpapi.IdentityRoutes(id)...)
	rt.Handle(httpapi.ChatRoutes(chats)...)
	rt.Handle(httpapi.GrantRoutes(az)...)
	rt.Handle(httpapi.AgentRoutes(ags)...)
	api.router = rt
	return api, names
}

// keepToken names the token of the agent in the answer.
func keepToken(names *namedTokens, name string) func(t *testing.T, api *chatAPI, body []byte) {
	return func(t *testing.T, api *chatAPI, body []byte) {
		var a struct{ Token string }
		if err := json.Unmarshal(body, &a); err != nil || !strings.HasPrefix(a.Token, identity.APITokenPrefix) {
			t.Fatalf("token %q in %s", a.Token, body)
		}
		names.tokens[name] = a.Token
	}
}

func TestAgentRoutes(t *testing.T) {
	api, names := newAgentAPI(t)
	create := func(handle string) string {
		return `{"handle":"` + handle + `","display_name":"Agent ` + handle + `","description":"does ` + handle + `"}`
	}
	bad := func(field string) map[string]any { return map[string]any{"code": "validation_failed", "field": field} }
	api.play(t, []chatScenario{
		{name: "a person who is no owner may not create an agent", as: "pia", method: "POST", path: "/api/v1/agents", body: create("echo"),
			status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"}},
		{name: "nobody creates one anonymously", method: "POST", path: "/api/v1/agents", body: create("echo"),
			status: http.StatusUnauthorized},
		{name: "the owner creates an agent and sees its token once", as: "olga", method: "POST", path: "/api/v1/agents",
			body: create("echo"), status: http.StatusCreated, save: "echo", events: []string{"agent.created"},
			fields: map[string]any{"id": present, "kind": "agent", "handle": "echo", "display_name": "Agent echo", "description": "does echo",
				"status": "active", "created_by": "{olga.id}", "created_at": "2026-03-01T12:00:00Z", "updated_at": present,
				"disabled_at": nil, "token": present},
			check: keepToken(names, "echo")},
		{name: "the token authenticates as the agent", as: "echo", method: "GET", path: "/api/v1/me", status: http.StatusOK,
			fields: map[string]any{"id": "{echo.id}", "kind": "agent", "handle": "echo", "is_owner": false}},
		{name: "the agent's token lists as its own", as: "echo", method: "GET", path: "/api/v1/tokens", status: http.StatusOK,
			check: func(t *testing.T, api *chatAPI, body []byte) {
				if strings.Count(string(body), `"id"`) != 1 || strings.Contains(string(body), names.tokens["echo"]) {
					t.Fatalf("tokens %s", body)
				}
			}},
		{name: "a handle an agent holds is taken, in any case", as: "olga", method: "POST", path: "/api/v1/agents", body: create("ECHO"),
			status: http.StatusConflict, fields: map[string]any{"code": "conflict", "field": "handle"}},
		{name: "a handle a person holds is taken", as: "olga", method: "POST", path: "/api/v1/agents", body: create("pia"),
			status: http.StatusConflict, fields: map[string]any{"code": "conflict", "field": "handle"}},
		{name: "a person cannot take an agent's handle either", as: "olga", method: "POST", path: "/api/v1/users",
			body:   `{"handle":"Echo","display_name":"Echo","password":"long-enough-pw"}`,
			status: http.StatusConflict, fields: map[string]any{"field": "handle"}},
		{name: "a bad handle is refused", as: "olga", method: "POST", path: "/api/v1/agents", body: create("two words"),
			status: http.StatusBadRequest, fields: bad("handle")},
		{name: "a missing display name is refused", as: "olga", method: "POST", path: "/api/v1/agents", body: `{"handle":"mute"}`,
			status: http.StatusBadRequest, fields: bad("display_name")},
		{name: "a description over 500 characters is refused", as: "olga", method: "POST", path: "/api/v1/agents",
			body:   `{"handle":"wordy","display_name":"Wordy","description":"` + strings.Repeat("w", 501) + `"}`,
			status: http.StatusBadRequest, fields: bad("description")},
		{name: "an unknown field is refused", as: "olga", method: "POST", path: "/api/v1/agents",
			body: `{"handle":"x","display_name":"X","is_owner":true}`, status: http.StatusBadRequest, fields: bad("is_owner")},
		{name: "a person lists the agents", as: "pia", method: "GET", path: "/api/v1/agents", status: http.StatusOK,
			fields: map[string]any{"has_more": false},
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var l struct{ Items []map[string]any }
				_ = json.Unmarshal(body, &l)
				if len(l.Items) != 1 || l.Items[0]["id"] != api.vars["echo"]["id"] || l.Items[0]["token"] != nil {
					t.Fatalf("items %s", body)
				}
			}},
		{name: "a bad page is refused", as: "pia", method: "GET", path: "/api/v1/agents?limit=0", status: http.StatusBadRequest,
			fields: bad("limit")},
		{name: "a malformed cursor is refused", as: "pia", method: "GET", path: "/api/v1/agents?after=x", status: http.StatusBadRequest,
			fields: map[string]any{"code": "cursor_invalid", "field": "after"}},
		{name: "an agent may not list the agents", as: "echo", method: "GET", path: "/api/v1/agents", status: http.StatusForbidden},
		{name: "a person reads one agent", as: "pia", method: "GET", path: "/api/v1/agents/{echo.id}", status: http.StatusOK,
			fields: map[string]any{"id": "{echo.id}", "handle": "echo", "description": "does echo", "token": nil}},
		{name: "a person's id is no agent", as: "pia", method: "GET", path: "/api/v1/agents/{pia.id}", status: http.StatusNotFound},
		{name: "a malformed id is not found", as: "pia", method: "GET", path: "/api/v1/agents/nope", status: http.StatusNotFound},
		{name: "a person who is no owner may not disable an agent", as: "pia", method: "POST", path: "/api/v1/agents/{echo.id}/disable",
			status: http.StatusForbidden},
		{name: "an agent is not disabled as a person", as: "olga", method: "POST", path: "/api/v1/users/{echo.id}/disable",
			status: http.StatusNotFound},
		{name: "the owner disables the agent", as: "olga", method: "POST", path: "/api/v1/agents/{echo.id}/disable",
			status: http.StatusOK, events: []string{"agent.updated"}, fields: map[string]any{"status": "disabled", "disabled_at": present}},
		{name: "the disabled agent's token answers 401", as: "echo", method: "GET", path: "/api/v1/me", status: http.StatusUnauthorized},
		{name: "disabling it again changes nothing", as: "olga", method: "POST", path: "/api/v1/agents/{echo.id}/disable",
			status: http.StatusOK, fields: map[string]any{"status": "disabled"}},
		{name: "the owner enables it", as: "olga", method: "POST", path: "/api/v1/agents/{echo.id}/enable",
			status: http.StatusOK, events: []string{"agent.updated"}, fields: map[string]any{"status": "active", "disabled_at": nil}},
		{name: "the same token works again", as: "echo", method: "GET", path: "/api/v1/me", status: http.StatusOK,
			fields: map[string]any{"status": "active"}},
		{name: "an unknown agent cannot be enabled", as: "olga", method: "POST", path: "/api/v1/agents/{pia.id}/enable",
			status: http.StatusNotFound},
		{name: "an agent never has an owner's rights", as: "echo", method: "POST", path: "/api/v1/spaces", body: `{"name":"mine"}`,
			status: http.StatusForbidden},
	})

	t.Run("the operator of a channel", func(t *testing.T) {
		api.play(t, []chatScenario{
			{name: "the owner makes a space", as: "olga", method: "POST", path: "/api/v1/spaces", body: `{"name":"Home"}`,
				status: http.StatusCreated, save: "sp", events: []string{"space.created"}},
			{name: "and a channel without an operator", as: "olga", method: "POST", path: "/api/v1/spaces/{sp.id}/channels",
				body: `{"name":"general"}`, status: http.StatusCreated, save: "ch", events: []string{"channel.created", "thread.created"},
				fields: map[string]any{"operator_id": nil}},
			{name: "an agent that cannot read the channel cannot operate it", as: "olga", method: "PUT", path: "/api/v1/channels/{ch.id}/operator",
				body: `{"agent_id":"{echo.id}"}`, status: http.StatusBadRequest, fields: bad("agent_id")},
			{name: "the agent cannot see the channel yet", as: "echo", method: "GET", path: "/api/v1/channels/{ch.id}", status: http.StatusNotFound},
			{name: "the owner grants the agent view, like a person", as: "olga", method: "POST", path: "/api/v1/channels/{ch.id}/grants",
				body: `{"principal_id":"{echo.id}","level":"view"}`, status: http.StatusCreated, events: []string{"grant.changed"}},
			{name: "with the grant the agent reads the channel", as: "echo", method: "GET", path: "/api/v1/channels/{ch.id}", status: http.StatusOK},
			{name: "but may not post in it", as: "echo", method: "PATCH", path: "/api/v1/channels/{ch.id}", body: `{"topic":"mine"}`,
				status: http.StatusForbidden},
			{name: "the owner names the agent the operator", as: "olga", method: "PUT", path: "/api/v1/channels/{ch.id}/operator",
				body: `{"agent_id":"{echo.id}"}`, status: http.StatusOK, events: []string{"channel.updated"},
				fields: map[string]any{"id": "{ch.id}", "operator_id": "{echo.id}"}},
			{name: "the channel shows its operator", as: "olga", method: "GET", path: "/api/v1/channels/{ch.id}", status: http.StatusOK,
				fields: map[string]any{"operator_id": "{echo.id}"}},
			{name: "naming it again changes nothing", as: "olga", method: "PUT", path: "/api/v1/channels/{ch.id}/operator",
				body: `{"agent_id":"{echo.id}"}`, status: http.StatusOK, fields: map[string]any{"operator_id": "{echo.id}"}},
			{name: "a person is no operator", as: "olga", method: "PUT", path: "/api/v1/channels/{ch.id}/operator",
				body: `{"agent_id":"{pia.id}"}`, status: http.StatusBadRequest, fields: bad("agent_id")},
			{name: "a malformed agent_id is refused", as: "olga", method: "PUT", path: "/api/v1/channels/{ch.id}/operator",
				body: `{"agent_id":"bot"}`, status: http.StatusBadRequest, fields: bad("agent_id")},
			{name: "agent_id is required", as: "olga", method: "PUT", path: "/api/v1/channels/{ch.id}/operator",
				body: `{}`, status: http.StatusBadRequest, fields: bad("agent_id")},
			{name: "a caller who cannot see the channel gets 404", as: "pia", method: "PUT", path: "/api/v1/channels/{ch.id}/operator",
				body: `{"agent_id":"{echo.id}"}`, status: http.StatusNotFound},
			{name: "an agent cannot name itself", as: "echo", method: "PUT", path: "/api/v1/channels/{ch.id}/operator",
				body: `{"agent_id":"{echo.id}"}`, status: http.StatusForbidden},
			{name: "the operator stays named while its agent is disabled", as: "olga", method: "POST", path: "/api/v1/agents/{echo.id}/disable",
				status: http.StatusOK, events: []string{"agent.updated"}},
			{name: "a disabled agent cannot be named", as: "olga", method: "PUT", path: "/api/v1/channels/{ch.id}/operator",
				body: `{"agent_id":"{echo.id}"}`, status: http.StatusBadRequest, fields: bad("agent_id")},
			{name: "the channel still names it", as: "olga", method: "GET", path: "/api/v1/channels/{ch.id}", status: http.StatusOK,
				fields: map[string]any{"operator_id": "{echo.id}"}},
			{name: "a caller who cannot see the channel cannot clear it", as: "pia", method: "DELETE", path: "/api/v1/channels/{ch.id}/operator",
				status: http.StatusNotFound},
			{name: "the owner clears the operator", as: "olga", method: "DELETE", path: "/api/v1/channels/{ch.id}/operator",
				status: http.StatusNoContent, events: []string{"channel.updated"}},
			{name: "the channel has no operator", as: "olga", method: "GET", path: "/api/v1/channels/{ch.id}", status: http.StatusOK,
				fields: map[string]any{"operator_id": nil}},
			{name: "clearing it again changes nothing", as: "olga", method: "DELETE", path: "/api/v1/channels/{ch.id}/operator",
				status: http.StatusNoContent},
			{name: "an unknown channel is not found", as: "olga", method: "DELETE", path: "/api/v1/channels/{pia.id}/operator",
				status: http.StatusNotFound},
		})
	})
}

// An Idempotency-Key makes POST /agents safe to retry: the retry answers the first answer and
// creates nothing more; only the token is left out, since a secret is never kept.
func TestAgentRoutesIdempotency(t *testing.T) {
	api, names := newAgentAPI(t)
	post := func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/api/v1/agents", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+names.tokens["olga"])
		req.Header.Set("Idempotency-Key", "make-echo")
		w := httptest.NewRecorder()
		api.router.ServeHTTP(w, req)
		return w
	}
	body := `{"handle":"echo","display_name":"Echo"}`
	first := post(body)
	head := api.db.Head()
	again := post(body)
	withoutToken := regexp.MustCompile(`,"token":"bothy_[^"]+"`).ReplaceAllString(first.Body.String(), "")
	if first.Code != http.StatusCreated || again.Code != http.StatusCreated || withoutToken == first.Body.String() ||
		again.Body.String() != withoutToken || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("first %d %s, again %d %s", first.Code, first.Body, again.Code, again.Body)
	}
	if api.db.Head() != head {
		t.Fatal("the retry appended events")
	}
	if other := post(`{"handle":"other","display_name":"Other"}`); other.Code != http.StatusUnprocessableEntity {
		t.Fatalf("the same key with another body: %d %s", other.Code, other.Body)
	}
}
