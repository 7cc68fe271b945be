package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/appliance/httpapi"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// chatAuthn knows one bearer token per principal: its handle.
type chatAuthn map[string]kernel.Actor

func (a chatAuthn) Authenticate(ctx context.Context, token string) (kernel.Actor, error) {
	if actor, ok := a[token]; ok {
		return actor, nil
	}
	return kernel.Actor{}, kernel.Errorf(kernel.CodeUnauthenticated, "unknown token")
}

// chatAuthz is the fake decision point of these tests: what hidden names is not found for
// everyone, and readers may read but not write. It records every decision, as the real one does.
type chatAuthz struct {
	hidden  map[kernel.ID]bool
	readers map[kernel.ID]bool
}

var (
	_ kernel.Authorizer = (*chatAuthz)(nil)
	_ kernel.Scoper     = (*chatAuthz)(nil)
)

func (a *chatAuthz) Authorize(ctx context.Context, actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
	kernel.RecordCheck(ctx, action)
	if !actor.Authenticated() {
		return kernel.Errorf(kernel.CodeUnauthenticated, "no principal")
	}
	if a.hidden[r.ID] || a.hidden[r.ChannelID] || a.hidden[r.SpaceID] {
		return kernel.ErrNotFound
	}
	switch action {
	case chat.ActSpaceRead, chat.ActChannelRead, chat.ActThreadRead, messaging.ActMessageRead, messaging.ActRevisionsRead, catchup.ActEventsCatchUp:
	default:
		if a.readers[actor.ID] {
			return kernel.Errorf(kernel.CodeForbidden, "read only")
		}
	}
	return nil
}

func (a *chatAuthz) Visible(ctx context.Context, actor kernel.Actor, action kernel.Action) (kernel.Visibility, error) {
	kernel.RecordCheck(ctx, action)
	if !actor.Authenticated() {
		return nil, kernel.Errorf(kernel.CodeUnauthenticated, "no principal")
	}
	return chatVisible{a.hidden}, nil
}

type chatVisible struct{ hidden map[kernel.ID]bool }

func (v chatVisible) Space(id kernel.ID) bool   { return !v.hidden[id] }
func (v chatVisible) Channel(id kernel.ID) bool { return !v.hidden[id] }
func (v chatVisible) All() bool                 { return false }

// chatAPI is a router with the chat, message and event routes on a real store.
type chatAPI struct {
	db     *storage.DB
	router http.Handler
	az     *chatAuthz
	actors map[string]kernel.Actor
	vars   map[string]map[string]any
	clock  *kernel.ManualClock // set by the APIs that use one
}

func newChatAPI(tb testing.TB) *chatAPI {
	tb.Helper()
	ctx := context.Background()
	db := storetest.Open(tb, storage.Options{})
	clock := kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	api := &chatAPI{db: db, az: &chatAuthz{hidden: map[kernel.ID]bool{}, readers: map[kernel.ID]bool{}},
		actors: map[string]kernel.Actor{}, vars: map[string]map[string]any{}}
	ids := storage.NewIdentityStore(db)
	for _, h := range []string{"alice", "bob", "carol"} {
		u := identity.User{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: h, DisplayName: h, Status: "active",
			CreatedAt: clock.Now(), UpdatedAt: clock.Now()}
		if err := db.Do(ctx, func(ctx context.Context) error { return ids.CreatePrincipal(ctx, u, identity.HandleKey(h)) }); err != nil {
			tb.Fatal(err)
		}
		api.actors[h] = kernel.Actor{ID: u.ID, Kind: kernel.KindPerson, Handle: h}
		api.vars[h] = map[string]any{"id": string(u.ID)}
	}
	api.az.readers[api.actors["carol"].ID] = true

	chatStore := storage.NewChatStore(db)
	chats := chat.New(chat.Deps{Store: chatStore, Principals: chatStore, UoW: db, Events: db, Authz: api.az, Scoper: api.az, Clock: clock})
	msgStore := storage.NewMessageStore(db)
	msgs := messaging.New(messaging.Deps{Store: msgStore, Threads: chats, Directory: msgStore, Redactor: db, UoW: db,
		Events: db, Authz: api.az, Bus: kernel.NewTxBus(), Clock: clock})
	rt := httpapi.NewRouter(chatAuthn(api.actors), nil, httpapi.Options{})
	rt.Handle(httpapi.ChatRoutes(chats)...)
	rt.Handle(httpapi.MessageRoutes(msgs, nil)...)
	rt.Handle(httpapi.EventRoutes(catchup.New(catchup.Deps{Log: db, Scoper: api.az}))...)
	api.router = rt
	return api
}

// chatScenario is one row of a scenario table: name, request, expected status, body fields and events.
type chatScenario struct {
	name   string
	setup  func(api *chatAPI)
	as     string // a handle; "" is anonymous
	method string
	path   string            // {name.field} refers to saved answers
	body   string            // raw JSON; {name.field} works here too
	header map[string]string // request headers; {name.field} works in their values
	status int
	fields map[string]any // top-level fields of the answer; present only asks that it is there
	events []string       // the types of the events the request appends, in order
	save   string
	check  func(t *testing.T, api *chatAPI, body []byte)
}

var present = &struct{}{}

var chatRef = regexp.MustCompile(`\{([a-z_0-9]+)\.([a-z_0-9]+)\}`)

func (api *chatAPI) expand(t *testing.T, s string) string {
	return chatRef.ReplaceAllStringFunc(s, func(m string) string {
		p := chatRef.FindStringSubmatch(m)
		v, ok := api.vars[p[1]][p[2]]
		if !ok {
			t.Fatalf("no saved %s", m)
		}
		if s, ok := v.(string); ok {
			return s
		}
		b, _ := json.Marshal(v)
		return string(b)
	})
}

func (api *chatAPI) expandAny(t *testing.T, v any) any {
	switch x := v.(type) {
	case string:
		return api.expand(t, x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = api.expandAny(t, e)
		}
		return out
	}
	return v
}

func (api *chatAPI) play(t *testing.T, rows []chatScenario) {
	t.Helper()
	for _, sc := range rows {
		if !t.Run(sc.name, func(t *testing.T) { api.runOne(t, sc) }) {
			t.FailNow()
		}
	}
}

func (api *chatAPI) runOne(t *testing.T, sc chatScenario) {
	if sc.setup != nil {
		sc.setup(api)
	}
	before := api.db.Head()
	var body io.Reader
	if sc.body != "" {
		body = strings.NewReader(api.expand(t, sc.body))
	}
	req := httptest.NewRequest(sc.method, api.expand(t, sc.path), body)
	if sc.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if sc.as != "" {
		req.Header.Set("Authorization", "Bearer "+sc.as)
	}
	for k, v := range sc.header {
		req.Header.Set(k, api.expand(t, v))
	}
	w := httptest.NewRecorder()
	api.router.ServeHTTP(w, req)
	raw := w.Body.Bytes()
	if w.Code != sc.status {
		t.Fatalf("%s %s: status %d, want %d: %s", sc.method, sc.path, w.Code, sc.status, raw)
	}
	var obj map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("answer is not a JSON object: %s", raw)
		}
		if ct := w.Header().Get("Content-Type"); sc.status < 300 && ct != "application/json" {
			t.Fatalf("content type %q", ct)
		}
	}
	for k, want := range sc.fields {
		got, has := obj[k]
		if want == present {
			if !has {
				t.Errorf("no field %q in %s", k, raw)
			}
			continue
		}
		want = api.expandAny(t, want)
		g, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(g) != string(wb) {
			t.Errorf("%s = %s, want %s (answer %s)", k, g, wb, raw)
		}
	}
	if sc.save != "" {
		api.vars[sc.save] = obj
	}
	evs, err := api.db.EventsAfter(context.Background(), before, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if !slices.Equal(types, sc.events) {
		t.Errorf("appended events %v, want %v", types, sc.events)
	}
	if sc.check != nil {
		sc.check(t, api, raw)
	}
}

func TestChatRoutes(t *testing.T) {
	api := newChatAPI(t)
	api.play(t, []chatScenario{
		{name: "a space is created", as: "alice", method: "POST", path: "/api/v1/spaces", body: `{"name":"  Home "}`,
			status: http.StatusCreated, save: "sp", events: []string{"space.created"},
			fields: map[string]any{"name": "Home", "id": present, "created_at": "2026-03-01T12:00:00Z", "updated_at": present}},
		{name: "a blank name is refused naming the field", as: "alice", method: "POST", path: "/api/v1/spaces", body: `{"name":" "}`,
			status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed", "field": "name"}},
		{name: "a name over 80 characters is refused", as: "alice", method: "POST", path: "/api/v1/spaces",
			body: `{"name":"` + strings.Repeat("n", 81) + `"}`, status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed"}},
		{name: "a reader may not create a space", as: "carol", method: "POST", path: "/api/v1/spaces", body: `{"name":"mine"}`,
			status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"}},
		{name: "nobody may create a space anonymously", method: "POST", path: "/api/v1/spaces", body: `{"name":"x"}`,
			status: http.StatusUnauthorized, fields: map[string]any{"code": "unauthenticated"}},
		{name: "a hidden space is created", as: "alice", method: "POST", path: "/api/v1/spaces", body: `{"name":"Hidden"}`,
			status: http.StatusCreated, save: "hidden", events: []string{"space.created"}},
		{name: "the list holds only the visible spaces", as: "bob", method: "GET", path: "/api/v1/spaces", status: http.StatusOK,
			setup: func(api *chatAPI) { api.az.hidden[kernel.ID(api.vars["hidden"]["id"].(string))] = true },
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var l struct{ Items []chat.Space }
				_ = json.Unmarshal(body, &l)
				if len(l.Items) != 1 || string(l.Items[0].ID) != api.vars["sp"]["id"] {
					t.Errorf("items %+v", l.Items)
				}
			}},
		{name: "the hidden space is not found", as: "bob", method: "GET", path: "/api/v1/spaces/{hidden.id}",
			status: http.StatusNotFound, fields: map[string]any{"code": "not_found"}},
		{name: "a malformed id is not found", as: "bob", method: "GET", path: "/api/v1/spaces/nope",
			status: http.StatusNotFound, fields: map[string]any{"code": "not_found"}},
		{name: "a space reads back", as: "bob", method: "GET", path: "/api/v1/spaces/{sp.id}", status: http.StatusOK,
			fields: map[string]any{"id": "{sp.id}", "name": "Home"}},
		{name: "a space is renamed", as: "alice", method: "PATCH", path: "/api/v1/spaces/{sp.id}", body: `{"name":"Hearth"}`,
			status: http.StatusOK, fields: map[string]any{"name": "Hearth"}, events: []string{"space.updated"}},
		{name: "an empty patch changes nothing", as: "alice", method: "PATCH", path: "/api/v1/spaces/{sp.id}", body: `{}`,
			status: http.StatusOK, fields: map[string]any{"name": "Hearth"}},
		{name: "an unknown field is refused", as: "alice", method: "PATCH", path: "/api/v1/spaces/{sp.id}", body: `{"colour":"red"}`,
			status: http.StatusBadRequest, fields: map[string]any{"field": "colour"}},
		{name: "a channel is created with its main thread", as: "alice", method: "POST", path: "/api/v1/spaces/{sp.id}/channels",
			body: `{"name":"general"}`, status: http.StatusCreated, save: "ch", events: []string{"channel.created", "thread.created"},
			fields: map[string]any{"name": "general", "kind": "channel", "topic": "", "space_id": "{sp.id}", "main_thread_id": present}},
		{name: "a channel in a hidden space is not found", as: "alice", method: "POST", path: "/api/v1/spaces/{hidden.id}/channels",
			body: `{"name":"x"}`, status: http.StatusNotFound},
		{name: "the channels of a space are listed", as: "bob", method: "GET", path: "/api/v1/spaces/{sp.id}/channels", status: http.StatusOK,
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var l struct{ Items []chat.Channel }
				_ = json.Unmarshal(body, &l)
				if len(l.Items) != 1 || string(l.Items[0].ID) != api.vars["ch"]["id"] {
					t.Errorf("items %+v", l.Items)
				}
			}},
		{name: "a channel reads back", as: "bob", method: "GET", path: "/api/v1/channels/{ch.id}", status: http.StatusOK,
			fields: map[string]any{"id": "{ch.id}", "main_thread_id": "{ch.main_thread_id}"}},
		{name: "a channel's topic is set", as: "alice", method: "PATCH", path: "/api/v1/channels/{ch.id}", body: `{"topic":"All of it"}`,
			status: http.StatusOK, fields: map[string]any{"name": "general", "topic": "All of it"}, events: []string{"channel.updated"}},
		{name: "a reader may not change a channel", as: "carol", method: "PATCH", path: "/api/v1/channels/{ch.id}", body: `{"topic":"x"}`,
			status: http.StatusForbidden},
		{name: "a channel lists its main thread", as: "bob", method: "GET", path: "/api/v1/channels/{ch.id}/threads", status: http.StatusOK,
			fields: map[string]any{"has_more": false},
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var l struct{ Items []map[string]any }
				_ = json.Unmarshal(body, &l)
				if len(l.Items) != 1 || l.Items[0]["id"] != api.vars["ch"]["main_thread_id"] || l.Items[0]["is_main"] != true ||
					l.Items[0]["last_message_at"] != nil {
					t.Errorf("items %+v", l.Items)
				}
			}},
		{name: "a malformed cursor is refused", as: "bob", method: "GET", path: "/api/v1/channels/{ch.id}/threads?before=x",
			status: http.StatusBadRequest, fields: map[string]any{"code": "cursor_invalid", "field": "before"}},
		{name: "a malformed limit is refused", as: "bob", method: "GET", path: "/api/v1/channels/{ch.id}/threads?limit=many",
			status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed", "field": "limit"}},
		{name: "a limit over 200 is refused", as: "bob", method: "GET", path: "/api/v1/channels/{ch.id}/threads?limit=201",
			status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed", "field": "limit"}},
	})
}
