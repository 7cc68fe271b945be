package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/appliance/httpapi"
	"bothy.dev/bothy/storage"
)

// newRunAPI is a router with the chat, grant, agent, message and run routes on a real store, the
// real rules and runs subscribed to the bus as the appliance wires it; the owner olga and the
// people pia, paul and vic are logged in.
func newRunAPI(t *testing.T) (*chatAPI, *namedTokens) {
	t.Helper()
	p := newPeople(t, "pia", "paul", "vic")
	db, clock, az, id, api, names := p.db, p.clock, p.az, p.id, p.api, p.names
	bus := kernel.NewTxBus()
	chatStore := storage.NewChatStore(db)
	chats := chat.New(chat.Deps{Store: chatStore, Principals: chatStore, UoW: db, Events: db, Authz: az, Scoper: az, Clock: clock})
	agentStore := storage.NewAgentStore(db)
	ags := agents.New(agents.Deps{Store: agentStore, Principals: id, UoW: db, Events: db, Authz: az, Bus: bus})
	msgStore := storage.NewMessageStore(db)
	msgs := messaging.New(messaging.Deps{Store: msgStore, Threads: chats, Directory: msgStore, Redactor: db, UoW: db, Events: db,
		Authz: az, Bus: bus, Clock: clock})
	svc := runs.New(runs.Deps{Store: storage.NewRunStore(db), Agents: agentStore, Structure: chats, UoW: db, Events: db, Authz: az, Clock: clock, Keys: runs.NewKeyring(storage.NewSigningKeyStore(db), clock), Jobs: &kerneltest.Tx{}}, kerneltest.With(runs.DefaultConfig(), func(c *runs.Config) { c.TokenTTL = time.Minute }))
	kernel.Subscribe(bus, "runs.trigger", svc.OnMessageDeciding)
	kernel.Subscribe(bus, "runs.invoke", svc.OnMessagePosted)
	kernel.Subscribe(bus, "runs.agent_disabled", svc.OnAgentDisabled)
	bus.Seal()

	rt := httpapi.NewRouter(names, httpapi.NewIdempotency(db, db), httpapi.Options{})
	rt.Handle(httpapi.ChatRoutes(chats)...)
	rt.Handle(httpapi.GrantRoutes(az)...)
	rt.Handle(httpapi.AgentRoutes(ags)...)
	rt.Handle(httpapi.MessageRoutes(msgs, svc)...)
	rt.Handle(httpapi.RunRoutes(svc)...)
	api.router = rt
	api.clock = clock
	return api, names
}

// saveThread keeps the thread of a POST /channels/{id}/threads answer as name.
func saveThread(name string) func(t *testing.T, api *chatAPI, body []byte) {
	return func(t *testing.T, api *chatAPI, body []byte) {
		var a struct{ Thread map[string]any }
		if err := json.Unmarshal(body, &a); err != nil || a.Thread == nil {
			t.Fatalf("no thread in %s", body)
		}
		api.vars[name] = a.Thread
	}
}

// saveOnlyRun keeps the one item of a page of runs as name.
func saveOnlyRun(name string) func(t *testing.T, api *chatAPI, body []byte) {
	return func(t *testing.T, api *chatAPI, body []byte) {
		var p struct{ Items []map[string]any }
		if err := json.Unmarshal(body, &p); err != nil || len(p.Items) != 1 {
			t.Fatalf("want one run in %s", body)
		}
		api.vars[name] = p.Items[0]
	}
}

// ownerChannel are the first steps of a run scenario: olga makes the space sp and in it the
// channel ch.
func ownerChannel() []chatScenario {
	return []chatScenario{
		{name: "the owner makes a space", as: "olga", method: "POST", path: "/api/v1/spaces", body: `{"name":"Home"}`,
			status: http.StatusCreated, save: "sp", events: []string{"space.created"}},
		{name: "and a channel", as: "olga", method: "POST", path: "/api/v1/spaces/{sp.id}/channels", body: `{"name":"help"}`,
			status: http.StatusCreated, save: "ch", events: []string{"channel.created", "thread.created"}},
	}
}

// grant is the body of a grant of level to the principal saved as who.
func grant(who, level string) string {
	return `{"principal_id":"{` + who + `.id}","level":"` + level + `"}`
}

func TestRunRoutes(t *testing.T) {
	api, names := newRunAPI(t)
	api.play(t, append(ownerChannel(), []chatScenario{
		{name: "and an agent", as: "olga", method: "POST", path: "/api/v1/agents", body: `{"handle":"echo","display_name":"Echo"}`,
			status: http.StatusCreated, save: "echo", events: []string{"agent.created"}, check: keepToken(names, "echo")},
		{name: "the agent may read the channel", as: "olga", method: "POST", path: "/api/v1/channels/{ch.id}/grants", body: grant("echo", "view"),
			status: http.StatusCreated, events: []string{"grant.changed"}},
		{name: "pia may invoke in it", as: "olga", method: "POST", path: "/api/v1/channels/{ch.id}/grants", body: grant("pia", "invoke"),
			status: http.StatusCreated, events: []string{"grant.changed"}},
		{name: "paul may post", as: "olga", method: "POST", path: "/api/v1/channels/{ch.id}/grants", body: grant("paul", "post"),
			status: http.StatusCreated, events: []string{"grant.changed"}},
		{name: "the owner opens a thread", as: "olga", method: "POST", path: "/api/v1/channels/{ch.id}/threads",
			body: `{"title":"Q","content":"questions here"}`, status: http.StatusCreated, events: []string{"thread.created", "message.created"},
			check: saveThread("th")},
		{name: "a message without a mention concerns no agent", as: "paul", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"hello"}`, status: http.StatusCreated, events: []string{"message.created"},
			fields: map[string]any{"trigger_state": nil, "run_id": nil}},
		{name: "a mention by one without invoke makes no run and says why", as: "paul", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"@echo help"}`, status: http.StatusCreated, events: []string{"message.created"},
			fields: map[string]any{"trigger_state": "no_invoke_right", "run_id": nil}},
		{name: "a mention by one with invoke makes a queued run", as: "pia", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"@echo help"}`, status: http.StatusCreated, save: "m",
			events: []string{"message.created", "agent.invocation", "run.state_changed"}, fields: map[string]any{"trigger_state": "triggered"}},
		{name: "a reader lists the thread's runs", as: "paul", method: "GET", path: "/api/v1/threads/{th.id}/runs", status: http.StatusOK,
			fields: map[string]any{"has_more": false}, check: saveOnlyRun("run")},
		{name: "a reader reads the run and its document", as: "paul", method: "GET", path: "/api/v1/runs/{run.id}", status: http.StatusOK,
			fields: map[string]any{"id": "{run.id}", "agent_id": "{echo.id}", "thread_id": "{th.id}", "channel_id": "{ch.id}",
				"space_id": "{sp.id}", "trigger_message_id": "{m.id}", "invoked_by": "{pia.id}", "status": "queued", "reason": nil,
				"version": 0, "cancel_requested_at": nil, "started_at": nil, "ended_at": nil, "created_at": "2026-03-01T12:00:00Z",
				"document": map[string]any{"version": 0, "status": "", "steps": []any{}, "output": ""}}},
		{name: "the agent reads its run", as: "echo", method: "GET", path: "/api/v1/runs/{run.id}", status: http.StatusOK},
		{name: "one who cannot read the thread does not find the run", as: "vic", method: "GET", path: "/api/v1/runs/{run.id}",
			status: http.StatusNotFound, fields: map[string]any{"code": "not_found"}},
		{name: "nor the thread's runs", as: "vic", method: "GET", path: "/api/v1/threads/{th.id}/runs", status: http.StatusNotFound},
		{name: "a malformed run id is not found", as: "paul", method: "GET", path: "/api/v1/runs/nope", status: http.StatusNotFound},
		{name: "an unknown thread has no runs", as: "paul", method: "GET", path: "/api/v1/threads/{run.id}/runs", status: http.StatusNotFound},
		{name: "a bad page is refused", as: "paul", method: "GET", path: "/api/v1/threads/{th.id}/runs?limit=201", status: http.StatusBadRequest,
			fields: map[string]any{"code": "validation_failed", "field": "limit"}},
		{name: "nobody reads a run anonymously", method: "GET", path: "/api/v1/runs/{run.id}", status: http.StatusUnauthorized},
		{name: "a reader who did not invoke it may not cancel it", as: "paul", method: "POST", path: "/api/v1/runs/{run.id}/cancel",
			status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"}},
		{name: "one who cannot read the thread does not find it to cancel", as: "vic", method: "POST", path: "/api/v1/runs/{run.id}/cancel",
			status: http.StatusNotFound},
		{name: "the one who invoked it cancels the queued run at once", as: "pia", method: "POST", path: "/api/v1/runs/{run.id}/cancel",
			status: http.StatusOK, events: []string{"run.cancel_requested", "run.state_changed"},
			fields: map[string]any{"status": "cancelled", "reason": nil, "cancel_requested_at": present, "ended_at": present}},
		{name: "a run that has ended cannot be cancelled again", as: "pia", method: "POST", path: "/api/v1/runs/{run.id}/cancel",
			status: http.StatusConflict, fields: map[string]any{"code": "run_ended"}},
		{name: "the run reads as cancelled", as: "paul", method: "GET", path: "/api/v1/runs/{run.id}", status: http.StatusOK,
			fields: map[string]any{"status": "cancelled"}},
		{name: "pia invokes again", as: "pia", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"@echo once more"}`, status: http.StatusCreated, events: []string{"message.created", "agent.invocation", "run.state_changed"}},
		{name: "disabling the agent fails its queued run", as: "olga", method: "POST", path: "/api/v1/agents/{echo.id}/disable",
			status: http.StatusOK, events: []string{"run.state_changed", "agent.updated"}},
		{name: "the thread's runs show it", as: "paul", method: "GET", path: "/api/v1/threads/{th.id}/runs?after={run.id}", status: http.StatusOK,
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var p struct{ Items []map[string]any }
				_ = json.Unmarshal(body, &p)
				if len(p.Items) != 1 || p.Items[0]["status"] != "failed" || p.Items[0]["reason"] != "agent_disabled" {
					t.Fatalf("runs %s", body)
				}
			}},
	}...))
}

func TestAgentRunRoutes(t *testing.T) {
	api, names := newRunAPI(t)
	tok := map[string]string{"Invocation-Token": "{tok.invocation_token}"}
	api.play(t, append(ownerChannel(), []chatScenario{
		{name: "and two agents", as: "olga", method: "POST", path: "/api/v1/agents", body: `{"handle":"echo","display_name":"Echo"}`,
			status: http.StatusCreated, save: "echo", events: []string{"agent.created"}, check: keepToken(names, "echo")},
		{name: "the second", as: "olga", method: "POST", path: "/api/v1/agents", body: `{"handle":"parrot","display_name":"Parrot"}`,
			status: http.StatusCreated, save: "parrot", events: []string{"agent.created"}, check: keepToken(names, "parrot")},
		{name: "echo may post in the channel", as: "olga", method: "POST", path: "/api/v1/channels/{ch.id}/grants", body: grant("echo", "post"),
			status: http.StatusCreated, events: []string{"grant.changed"}},
		{name: "the parrot may read it", as: "olga", method: "POST", path: "/api/v1/channels/{ch.id}/grants", body: grant("parrot", "view"),
			status: http.StatusCreated, events: []string{"grant.changed"}},
		{name: "pia may invoke", as: "olga", method: "POST", path: "/api/v1/channels/{ch.id}/grants", body: grant("pia", "invoke"),
			status: http.StatusCreated, events: []string{"grant.changed"}},
		{name: "the owner opens a thread", as: "olga", method: "POST", path: "/api/v1/channels/{ch.id}/threads",
			body: `{"title":"Q","content":"questions here"}`, status: http.StatusCreated, events: []string{"thread.created", "message.created"}, check: saveThread("th")},
		{name: "pia invokes echo", as: "pia", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"@echo help"}`, status: http.StatusCreated,
			events: []string{"message.created", "agent.invocation", "run.state_changed"}},
		{name: "the run is listed", as: "pia", method: "GET", path: "/api/v1/threads/{th.id}/runs", status: http.StatusOK, check: saveOnlyRun("run")},
		{name: "the agent gets a token for its run", as: "echo", method: "POST", path: "/api/v1/runs/{run.id}/token", status: http.StatusOK,
			save: "tok", fields: map[string]any{"invocation_token": present, "expires_at": "2026-03-01T12:01:00Z"}},
		{name: "another agent gets no token for it", as: "parrot", method: "POST", path: "/api/v1/runs/{run.id}/token",
			status: http.StatusNotFound},
		{name: "nor may it use echo's token", as: "parrot", method: "POST", path: "/api/v1/runs/{run.id}/start", header: tok,
			status: http.StatusUnauthorized, fields: map[string]any{"code": "invocation_token_invalid"}},
		{name: "a start without the token is refused", as: "echo", method: "POST", path: "/api/v1/runs/{run.id}/start",
			status: http.StatusUnauthorized, fields: map[string]any{"code": "invocation_token_invalid"}},
		{name: "a patch before the start is a conflict", as: "echo", method: "PATCH", path: "/api/v1/runs/{run.id}", header: tok,
			body: `{"version":1}`, status: http.StatusConflict, fields: map[string]any{"code": "conflict"}},
		{name: "the agent starts its run", as: "echo", method: "POST", path: "/api/v1/runs/{run.id}/start", header: tok,
			status: http.StatusOK, events: []string{"run.state_changed"}, fields: map[string]any{"status": "running", "started_at": present}},
		{name: "a second start is refused", as: "echo", method: "POST", path: "/api/v1/runs/{run.id}/start", header: tok,
			status: http.StatusConflict, fields: map[string]any{"code": "already_started"}},
		{name: "the first patch has version 1 and logs nothing", as: "echo", method: "PATCH", path: "/api/v1/runs/{run.id}", header: tok,
			body: `{"version":1,"status":"Thinking","output_append":"hel"}`, status: http.StatusOK, fields: map[string]any{"version": 1.0}},
		{name: "a patch out of order is a conflict", as: "echo", method: "PATCH", path: "/api/v1/runs/{run.id}", header: tok,
			body: `{"version":3}`, status: http.StatusConflict, fields: map[string]any{"code": "run_version_conflict"}},
		{name: "a patch with a negative usage is refused", as: "echo", method: "PATCH", path: "/api/v1/runs/{run.id}", header: tok,
			body: `{"version":2,"usage":{"input_tokens":-1,"output_tokens":0,"cost_usd":0}}`, status: http.StatusBadRequest,
			fields: map[string]any{"code": "validation_failed"}},
		{name: "the next patch, with the usage so far", as: "echo", method: "PATCH", path: "/api/v1/runs/{run.id}", header: tok,
			body: `{"version":2,"output_append":"lo","usage":{"input_tokens":10,"output_tokens":2,"cost_usd":0.01}}`, status: http.StatusOK, fields: map[string]any{"version": 2.0}},
		{name: "a reader sees the document so far", as: "pia", method: "GET", path: "/api/v1/runs/{run.id}", status: http.StatusOK,
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var r struct{ Document map[string]any }
				_ = json.Unmarshal(body, &r)
				if r.Document["output"] != "hello" || r.Document["status"] != "Thinking" || r.Document["version"] != 2.0 {
					t.Fatalf("run %s", body)
				}
			}},
		{name: "the agent posts its answer with the token, linked to the run", as: "echo", method: "POST",
			path: "/api/v1/threads/{th.id}/messages", header: tok, body: `{"content":"hello"}`, status: http.StatusCreated,
			events: []string{"message.created"}, fields: map[string]any{"run_id": "{run.id}"}},
		{name: "a message without the token is linked to nothing", as: "echo", method: "POST",
			path: "/api/v1/threads/{th.id}/messages", body: `{"content":"aside"}`, status: http.StatusCreated,
			events: []string{"message.created"}, fields: map[string]any{"run_id": nil}},
		{name: "the owner opens another thread", as: "olga", method: "POST", path: "/api/v1/channels/{ch.id}/threads",
			body: `{"title":"R","content":"elsewhere"}`, status: http.StatusCreated, events: []string{"thread.created", "message.created"},
			check: saveThread("th2")},
		{name: "the token cannot post into another thread", as: "echo", method: "POST", path: "/api/v1/threads/{th2.id}/messages",
			header: tok, body: `{"content":"hello"}`, status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"}},
		{name: "nor can another agent post with it", as: "parrot", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			header: tok, body: `{"content":"hello"}`, status: http.StatusUnauthorized, fields: map[string]any{"code": "invocation_token_invalid"}},
		{name: "a bad outcome is refused", as: "echo", method: "POST", path: "/api/v1/runs/{run.id}/finish", header: tok,
			body: `{"outcome":"done"}`, status: http.StatusBadRequest, fields: map[string]any{"field": "outcome"}},
		{name: "the token expires", setup: func(api *chatAPI) { api.clock.Advance(time.Minute) }, as: "echo", method: "POST",
			path: "/api/v1/runs/{run.id}/finish", header: tok, body: `{"outcome":"succeeded"}`,
			status: http.StatusUnauthorized, fields: map[string]any{"code": "invocation_token_expired"}},
		{name: "the agent renews it", as: "echo", method: "POST", path: "/api/v1/runs/{run.id}/token", status: http.StatusOK, save: "tok"},
		{name: "and finishes", as: "echo", method: "POST", path: "/api/v1/runs/{run.id}/finish", header: tok, body: `{"outcome":"succeeded"}`,
			status: http.StatusOK, events: []string{"run.state_changed"}, fields: map[string]any{"status": "succeeded", "ended_at": present}},
		{name: "a run that has ended takes no patch", as: "echo", method: "PATCH", path: "/api/v1/runs/{run.id}", header: tok,
			body: `{"version":3}`, status: http.StatusConflict, fields: map[string]any{"code": "run_ended"}},
		{name: "nor a new token", as: "echo", method: "POST", path: "/api/v1/runs/{run.id}/token",
			status: http.StatusConflict, fields: map[string]any{"code": "run_ended"}},
	}...))
}

// Every code answers the status of its class, whichever module declares it: the one place
// that maps codes is the class.
func TestProblemStatuses(t *testing.T) {
	for code, want := range map[kernel.Code]int{
		kernel.CodeValidation: http.StatusBadRequest, kernel.CodeMalformedRequest: http.StatusBadRequest,
		kernel.CodeCursorInvalid: http.StatusBadRequest, kernel.CodeUnauthenticated: http.StatusUnauthorized,
		kernel.CodeForbidden: http.StatusForbidden, kernel.CodeNotFound: http.StatusNotFound,
		kernel.CodeMethodNotAllowed: http.StatusMethodNotAllowed, kernel.CodeConflict: http.StatusConflict,
		kernel.CodePreconditionFailed: http.StatusPreconditionFailed, kernel.CodePayloadTooLarge: http.StatusRequestEntityTooLarge,
		kernel.CodeRateLimited: http.StatusTooManyRequests, kernel.CodeInternal: http.StatusInternalServerError,
		kernel.CodeUnavailable:       http.StatusServiceUnavailable,
		httpapi.CodeUnsupportedMedia: http.StatusUnsupportedMediaType, httpapi.CodeRequestInProgress: http.StatusConflict,
		httpapi.CodeIdempotencyKeyReuse: http.StatusUnprocessableEntity, httpapi.CodeSetupRequired: http.StatusServiceUnavailable,
		identity.CodeLastOwner: http.StatusConflict, identity.CodeSetupComplete: http.StatusConflict,
		messaging.CodeMessageDeleted: http.StatusGone, messaging.CodeNotInMainThread: http.StatusConflict,
		runs.CodeAlreadyStarted: http.StatusConflict, runs.CodeRunEnded: http.StatusConflict,
		runs.CodeRunVersionConflict: http.StatusConflict, runs.CodeInvocationTokenInvalid: http.StatusUnauthorized,
		runs.CodeInvocationTokenExpired: http.StatusUnauthorized,
	} {
		t.Run(code.String(), func(t *testing.T) {
			rt := httpapi.NewRouter(chatAuthn{"a": {ID: kernel.NewID(), Kind: kernel.KindPerson}}, nil, httpapi.Options{})
			rt.Handle(httpapi.Route{Method: "GET", Pattern: "/x", Action: identity.ActSelfRead, Handler: func(r *httpapi.Request) (int, any, error) {
				return 0, nil, kernel.Errorf(code, "no")
			}})
			req, _ := http.NewRequest("GET", "/x", nil)
			req.Header.Set("Authorization", "Bearer a")
			w := httptest.NewRecorder()
			rt.ServeHTTP(w, req)
			if w.Code != want {
				t.Fatalf("%s answers %d, want %d", code, w.Code, want)
			}
		})
	}
}
