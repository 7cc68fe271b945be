package tests

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// nested is a body whose "name" value is nested depth levels deep in arrays.
func nested(depth int) []byte {
	return []byte(`{"name":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
}

// TestBadInputChangesNothing sends what the server must refuse and checks the clear error and
// that the log did not move (DESIGN §2.6).
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Bad input")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		p := newPlay(in.srv)
		p.clients["owner"] = in.owner
		p.clients["stranger"] = as(in.srv, "bothy_not-a-real-token")
		p.vars["sp"] = map[string]any{"id": sp.ID}
		p.vars["ch"] = map[string]any{"id": ch.ID, "main": ch.MainThreadID}
		big := bytes.Repeat([]byte("a"), 1<<20+10)
		bad := breaksDocument()
		p.run(t, []scenario{
			{
				name: "a body over 1 MiB is too large", as: "owner", method: "POST", path: api("spaces"),
				opts:   []reqOption{rawBody(append(append([]byte(`{"name":"`), big...), '"', '}')), bad},
				status: http.StatusRequestEntityTooLarge, fields: map[string]any{"code": "payload_too_large"},
			},
			{
				name: "a body over 1 MiB without a Content-Length is too large", as: "owner", method: "POST", path: api("threads", "{ch.main}", "messages"),
				opts:   []reqOption{rawBody(append(append([]byte(`{"content":"`), big...), '"', '}')), chunked(), bad},
				status: http.StatusRequestEntityTooLarge, fields: map[string]any{"code": "payload_too_large"},
			},
			{
				name: "nesting deeper than 32 levels is refused", as: "owner", method: "POST", path: api("spaces"),
				opts: []reqOption{rawBody(nested(33)), bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "malformed_request"},
			},
			{
				name: "a repeated key is refused", as: "owner", method: "POST", path: api("spaces"),
				opts: []reqOption{rawBody([]byte(`{"name":"a","name":"b"}`)), bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "malformed_request"},
			},
			{
				name: "invalid UTF-8 is refused", as: "owner", method: "POST", path: api("spaces"),
				opts: []reqOption{rawBody([]byte("{\"name\":\"caf\xe9\"}")), bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "malformed_request"},
			},
			{
				name: "a body that is not JSON is refused", as: "owner", method: "POST", path: api("spaces"),
				opts: []reqOption{rawBody([]byte(`{"name":`)), bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "malformed_request"},
			},
			{
				name: "two JSON values are refused", as: "owner", method: "POST", path: api("spaces"),
				opts: []reqOption{rawBody([]byte(`{"name":"a"} {"name":"b"}`)), bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "malformed_request"},
			},
			{
				name: "a wrong type names the field", as: "owner", method: "POST", path: api("spaces"),
				body: map[string]any{"name": 42}, opts: []reqOption{bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "validation_failed", "field": "name"},
			},
			{
				name: "an unknown field names the field", as: "owner", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "x", "colour": "red"}, opts: []reqOption{bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "validation_failed", "field": "colour"},
			},
			{
				name: "a key that differs from a member only in case is an unknown field", as: "owner", method: "POST", path: api("spaces"),
				opts: []reqOption{rawBody([]byte(`{"name":"a","NAME":"b"}`)), bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "validation_failed", "field": "NAME"},
			},
			{
				name: "a capitalised member is an unknown field", as: "owner", method: "POST", path: api("spaces"),
				opts: []reqOption{rawBody([]byte(`{"Name":"x"}`)), bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "validation_failed", "field": "Name"},
			},
			{
				name: "a login with the handle twice in two cases signs nobody in", method: "POST", path: api("auth", "login"),
				opts:   []reqOption{rawBody([]byte(`{"handle":"nobody","HANDLE":"owner","password":"` + ownerPassword + `"}`)), bad},
				status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed", "field": "HANDLE"},
			},
			{
				name: "an array instead of an object is refused", as: "owner", method: "POST", path: api("spaces"),
				opts: []reqOption{rawBody([]byte(`["x"]`)), bad}, status: http.StatusBadRequest,
			},
			{
				name: "an empty message is refused", as: "owner", method: "POST", path: api("threads", "{ch.main}", "messages"),
				body: map[string]any{"content": ""}, opts: []reqOption{bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "validation_failed", "field": "content"},
			},
			{
				name: "a grant level outside view, post, invoke and manage is refused", as: "owner", method: "POST", path: api("channels", "{ch.id}", "grants"),
				body: map[string]any{"principal_id": in.me.ID, "level": "root"}, opts: []reqOption{bad}, status: http.StatusBadRequest,
				fields: map[string]any{"code": "validation_failed", "field": "level"},
			},
			{
				name: "a body that is not application/json is refused", as: "owner", method: "POST", path: api("spaces"),
				opts:   []reqOption{rawBody([]byte(`{"name":"x"}`)), header("Content-Type", "text/plain"), bad},
				status: http.StatusUnsupportedMediaType, fields: map[string]any{"code": "unsupported_media_type"},
			},
			{
				name: "an unknown route is a not_found problem", as: "owner", method: "GET", path: api("nowhere"),
				opts: []reqOption{bad}, status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "a wrong method is a method_not_allowed problem that lists the allowed ones", as: "owner", method: "DELETE", path: api("spaces"),
				opts: []reqOption{bad}, status: http.StatusMethodNotAllowed, fields: map[string]any{"code": "method_not_allowed"},
				check: func(t *testing.T, p *play, r *response) {
					if a := r.header.Get("Allow"); !strings.Contains(a, "GET") || !strings.Contains(a, "POST") {
						t.Errorf("Allow %q, want GET and POST", a)
					}
				},
			},
			{
				name: "a request without a token is unauthenticated", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "anon"}, opts: []reqOption{bad}, status: http.StatusUnauthorized,
				fields: map[string]any{"code": "unauthenticated"},
				check: func(t *testing.T, p *play, r *response) {
					if r.header.Get("WWW-Authenticate") == "" {
						t.Errorf("no WWW-Authenticate header")
					}
				},
			},
			{
				name: "a request with an unknown token is unauthenticated", as: "stranger", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "anon"}, status: http.StatusUnauthorized, fields: map[string]any{"code": "unauthenticated"},
			},
			{
				name: "a token of another scheme is unauthenticated", method: "GET", path: api("me"),
				opts: []reqOption{header("Authorization", "Basic b3duZXI6cGFzc3dvcmQ="), bad}, status: http.StatusUnauthorized,
				fields: map[string]any{"code": "unauthenticated"},
			},
			{
				name: "a malformed bearer token is unauthenticated", method: "GET", path: api("me"),
				opts: []reqOption{header("Authorization", "Bearer !! not a token !!")}, status: http.StatusUnauthorized,
				fields: map[string]any{"code": "unauthenticated"},
			},
			{
				name: "a malformed id in the path is not found", as: "owner", method: "GET", path: api("channels", "not-an-id"),
				opts: []reqOption{bad}, status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "an id nobody has is not found", as: "owner", method: "GET", path: api("channels", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"),
				status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "posting into a thread nobody has is not found", as: "owner", method: "POST", path: api("threads", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "messages"),
				body: map[string]any{"content": "lost"}, status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "a negative event cursor is refused", as: "owner", method: "GET", path: "/api/v1/events?after=-1",
				opts: []reqOption{bad}, status: http.StatusBadRequest,
			},
			{
				name: "an event cursor that is not a number is refused", as: "owner", method: "GET", path: "/api/v1/events?after=abc",
				opts: []reqOption{bad}, status: http.StatusBadRequest,
			},
			{
				name: "a page limit of 0 is refused", as: "owner", method: "GET", path: api("threads", "{ch.main}", "messages") + "?limit=0",
				opts: []reqOption{bad}, status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed", "field": "limit"},
			},
			{
				name: "before and after together are refused", as: "owner", method: "GET",
				path:   api("threads", "{ch.main}", "messages") + "?before={ch.main}&after={ch.main}",
				status: http.StatusBadRequest,
			},
		})

		t.Run("a gateway identify whose token differs from the member only in case is a decode error", func(t *testing.T) {
			rc := mustDialGateway(t, in.srv.public, dialOptions{})
			rc.mustWrite(t, websocket.MessageText, []byte(`{"op":"identify","d":{"token":"not-a-token","TOKEN":"`+in.owner.token+`"}}`))
			if code, frames := rc.closeCode(10 * time.Second); code != 4002 {
				ops := make([]string, len(frames))
				for i, f := range frames {
					ops[i] = f.Op
				}
				t.Fatalf("close code %d after the frames %v, want 4002", code, ops)
			}
		})
	})
}
