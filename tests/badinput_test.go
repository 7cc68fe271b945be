package tests

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
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
// that the log did not move: bad input gets a clear error and changes nothing.
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

// rawPost sends a POST to the public listener by hand: the header with Content-Length length
// (a JSON body, or a form under /console/), then the pieces of body with pause between them,
// and then, when hangUp is set, closes its side of the connection. It returns the status of
// the answer (0 when none came within wait) and when it came, counted from the header.
func rawPost(t *testing.T, srv *server, path, token string, length int, pieces []string, pause time.Duration, hangUp bool, wait time.Duration) (int, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.public, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ct := "application/json"
	if strings.HasPrefix(path, "/console/") {
		ct = "application/x-www-form-urlencoded"
	}
	head := "POST " + path + " HTTP/1.1\r\nHost: bothy\r\nContent-Type: " + ct + "\r\n" +
		"Content-Length: " + strconv.Itoa(length) + "\r\n"
	if token != "" {
		head += "Authorization: Bearer " + token + "\r\n"
	}
	start := time.Now()
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	for _, p := range pieces {
		select {
		case st := <-answered:
			return st, time.Since(start)
		case <-time.After(pause):
		}
		if _, err := io.WriteString(conn, p); err != nil {
			break // the server gave up on the body and closed the connection
		}
	}
	if hangUp {
		_ = conn.(*net.TCPConn).CloseWrite()
	}
	select {
	case st := <-answered:
		return st, time.Since(start)
	case <-time.After(wait):
		return 0, time.Since(start)
	}
}

// TestBodiesAreBounded holds what a hostile client may do with a request body: it cannot make
// an anonymous request's body be read, cannot trickle a body for longer than
// http.body_read_timeout (API and console alike), cannot send a large body where no
// credentials are needed, and cannot make the server log an error by hanging up mid-body.
func TestBodiesAreBounded(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng, "--set", "http.body_read_timeout=1s")
		trickle := strings.Split(strings.Repeat("x", 60), "")

		t.Run("an anonymous request is refused before its body is sent", func(t *testing.T) {
			st, took := rawPost(t, in.srv, api("spaces"), "", 1<<20, nil, 0, false, 5*time.Second)
			if st != http.StatusUnauthorized {
				t.Fatalf("status %d after %s, want 401 without the body", st, took)
			}
		})

		t.Run("a body trickled in is cut off at the body read timeout", func(t *testing.T) {
			st, took := rawPost(t, in.srv, api("spaces"), in.owner.token, 100, trickle, 200*time.Millisecond, false, 10*time.Second)
			if st != http.StatusRequestTimeout || took > 5*time.Second {
				t.Fatalf("status %d after %s, want 408 after about 1s", st, took)
			}
		})

		t.Run("a login body trickled in is cut off too", func(t *testing.T) {
			st, took := rawPost(t, in.srv, api("auth", "login"), "", 100, trickle, 200*time.Millisecond, false, 10*time.Second)
			if st != http.StatusRequestTimeout || took > 5*time.Second {
				t.Fatalf("status %d after %s, want 408 after about 1s", st, took)
			}
		})

		t.Run("a console form trickled in is cut off too", func(t *testing.T) {
			st, took := rawPost(t, in.srv, "/console/signin", "", 100, trickle, 200*time.Millisecond, false, 10*time.Second)
			if st != http.StatusBadRequest || took > 5*time.Second {
				t.Fatalf("status %d after %s, want the console's 400 after about 1s", st, took)
			}
		})

		t.Run("a client that hangs up mid-body gets a 400 and leaves no error in the log", func(t *testing.T) {
			st, _ := rawPost(t, in.srv, api("tokens"), in.owner.token, 100, []string{`{"name":"cut`}, 10*time.Millisecond, true, 5*time.Second)
			if st != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", st)
			}
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(in.srv.logs.String(), `route=/api/v1/tokens status=400`) {
				if time.Now().After(deadline) {
					t.Fatalf("no access log line of the cut request:\n%s", in.srv.logs)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if strings.Contains(in.srv.logs.String(), "level=ERROR") {
				t.Fatalf("the server logged an error:\n%s", in.srv.logs)
			}
		})

		t.Run("a login body over 16 KiB is too large", func(t *testing.T) {
			r := as(in.srv, "").do(t, http.MethodPost, api("auth", "login"),
				map[string]any{"handle": "owner", "password": strings.Repeat("p", 20<<10)}, breaksDocument())
			if r.status != http.StatusRequestEntityTooLarge || r.code() != "payload_too_large" {
				t.Fatalf("%s", r)
			}
		})

		t.Run("a console sign-in form over 16 KiB cannot be read", func(t *testing.T) {
			b := newBrowser(t, in.srv.public)
			b.get("/console/signin").want(t, http.StatusOK)
			b.post("/console/signin", url.Values{"handle": {"owner"}, "password": {strings.Repeat("p", 20<<10)}}).
				want(t, http.StatusBadRequest)
		})

		t.Run("a body read in time is served, and the handler is not cut off after it", func(t *testing.T) {
			st, _ := rawPost(t, in.srv, api("spaces"), in.owner.token, len(`{"name":"in time"}`),
				[]string{`{"name":`, `"in time"}`}, 300*time.Millisecond, false, 10*time.Second)
			if st != http.StatusCreated {
				t.Fatalf("status %d, want 201", st)
			}
		})
	})
}
