package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
)

type fakeAuth struct{}

func (fakeAuth) Authenticate(ctx context.Context, token string) (kernel.Actor, error) {
	switch token {
	case "alice":
		return kernel.Actor{ID: "01900000-0000-7000-8000-000000000001", Kind: kernel.KindPerson, Handle: "alice"}, nil
	case "bob":
		return kernel.Actor{ID: "01900000-0000-7000-8000-000000000002", Kind: kernel.KindPerson, Handle: "bob"}, nil
	}
	return kernel.Actor{}, kernel.Errorf(kernel.CodeUnauthenticated, "bad token")
}

// memUOW runs units inline; memIdem keeps records in a map. Enough for the HTTP stage.
type memUOW struct{ mu sync.Mutex }

func (u *memUOW) Do(ctx context.Context, fn func(context.Context) error) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return fn(ctx)
}

type memIdem struct {
	recs map[string]kernel.IdempotencyRecord
}

func (m *memIdem) LookupIdempotency(_ context.Context, p kernel.ID, key string) (kernel.IdempotencyRecord, bool, error) {
	r, ok := m.recs[string(p)+"|"+key]
	return r, ok, nil
}
func (m *memIdem) SaveIdempotency(_ context.Context, p kernel.ID, key string, r kernel.IdempotencyRecord) error {
	m.recs[string(p)+"|"+key] = r
	return nil
}

func testRouter(t *testing.T) (*Router, *int) {
	t.Helper()
	calls := 0
	rt := NewRouter(fakeAuth{}, NewIdempotency(&memUOW{}, &memIdem{recs: map[string]kernel.IdempotencyRecord{}}), Options{MaxBodyBytes: 1024, MaxJSONDepth: 4})
	rt.Handle(
		Route{Method: "POST", Pattern: "/api/v1/things", Action: chat.ActSpaceCreate, Handler: func(r *Request) (int, any, error) {
			var in struct {
				Name  string `json:"name"`
				Count int    `json:"count"`
			}
			if err := r.Decode(&in); err != nil {
				return 0, nil, err
			}
			kernel.RecordCheck(r.Context(), chat.ActSpaceCreate)
			calls++
			return 201, map[string]any{"name": in.Name, "n": calls}, nil
		}},
		Route{Method: "GET", Pattern: "/api/v1/things", Action: chat.ActSpaceRead, Handler: func(r *Request) (int, any, error) {
			return 200, map[string]any{"items": []string{}}, nil // forgets to authorize
		}},
		Route{Method: "GET", Pattern: "/api/v1/boom", Action: chat.ActSpaceRead, Handler: func(r *Request) (int, any, error) {
			panic("secret internals")
		}},
		Route{Method: "GET", Pattern: "/api/v1/denied", Action: chat.ActSpaceRead, Handler: func(r *Request) (int, any, error) {
			return 0, nil, kernel.ErrNotFound // errors pass without a check
		}},
	)
	return rt, &calls
}

func do(t *testing.T, h http.Handler, method, path, token, body string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func problemCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q, body %s", ct, w.Body)
	}
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.CorrelationID == "" || p.CorrelationID != w.Header().Get("Correlation-Id") {
		t.Fatalf("correlation id %q vs header %q", p.CorrelationID, w.Header().Get("Correlation-Id"))
	}
	return p.Code
}

func TestRouterGuards(t *testing.T) {
	rt, calls := testRouter(t)
	cases := []struct {
		name, method, path, token, body string
		hdr                             map[string]string
		status                          int
		code                            string
	}{
		{"answers 500 when a 2xx route did not authorize its action", "GET", "/api/v1/things", "alice", "", nil, 500, "internal_error"},
		{"answers 401 without a token", "POST", "/api/v1/things", "", `{"name":"a"}`, nil, 401, "unauthenticated"},
		{"answers 401 for a bad token", "POST", "/api/v1/things", "mallory", `{"name":"a"}`, nil, 401, "unauthenticated"},
		{"answers 404 problem for an unknown path", "GET", "/api/v1/nothing", "alice", "", nil, 404, "not_found"},
		{"answers 405 problem for a wrong method", "DELETE", "/api/v1/things", "alice", "", nil, 405, "method_not_allowed"},
		{"refuses a body over the limit", "POST", "/api/v1/things", "alice", `{"name":"` + strings.Repeat("x", 2000) + `"}`, nil, 413, "payload_too_large"},
		{"refuses duplicate keys", "POST", "/api/v1/things", "alice", `{"name":"a","name":"b"}`, nil, 400, "malformed_request"},
		{"refuses escaped duplicate keys", "POST", "/api/v1/things", "alice", `{"name":"a","na\u006de":"b"}`, nil, 400, "malformed_request"},
		{"refuses nesting deeper than the limit", "POST", "/api/v1/things", "alice", `{"name":[[[[["x"]]]]]}`, nil, 400, "malformed_request"},
		{"refuses invalid UTF-8", "POST", "/api/v1/things", "alice", "{\"name\":\"\xff\"}", nil, 400, "malformed_request"},
		{"refuses wrong types naming the field", "POST", "/api/v1/things", "alice", `{"name":"a","count":"x"}`, nil, 400, "validation_failed"},
		{"refuses unknown fields", "POST", "/api/v1/things", "alice", `{"name":"a","extra":1}`, nil, 400, "validation_failed"},
		{"refuses a key that differs from a member only in case", "POST", "/api/v1/things", "alice", `{"name":"a","NAME":"b"}`, nil, 400, "validation_failed"},
		{"refuses a capitalised member as an unknown field", "POST", "/api/v1/things", "alice", `{"Name":"a"}`, nil, 400, "validation_failed"},
		{"refuses trailing data", "POST", "/api/v1/things", "alice", `{"name":"a"} {}`, nil, 400, "malformed_request"},
		{"refuses a non-JSON media type", "POST", "/api/v1/things", "alice", `{"name":"a"}`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
		{"answers a panic with 500 and no stack", "GET", "/api/v1/boom", "alice", "", nil, 500, "internal_error"},
		{"lets errors through without a check", "GET", "/api/v1/denied", "alice", "", nil, 404, "not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := *calls
			w := do(t, rt, c.method, c.path, c.token, c.body, c.hdr)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			if got := problemCode(t, w); got != c.code {
				t.Fatalf("code %q, want %q", got, c.code)
			}
			if strings.Contains(w.Body.String(), "secret internals") || strings.Contains(w.Body.String(), "goroutine") {
				t.Fatalf("internals leaked: %s", w.Body)
			}
			if *calls != before {
				t.Fatal("a refused request reached the use case")
			}
		})
	}
	t.Run("sets Allow on 405", func(t *testing.T) {
		w := do(t, rt, "DELETE", "/api/v1/things", "alice", "", nil)
		if w.Header().Get("Allow") != "GET, POST" {
			t.Fatalf("Allow = %q", w.Header().Get("Allow"))
		}
	})
}

func TestIdempotencyKey(t *testing.T) {
	rt, calls := testRouter(t)
	key := map[string]string{"Idempotency-Key": "k-1"}
	first := do(t, rt, "POST", "/api/v1/things", "alice", `{"name":"a"}`, key)
	if first.Code != 201 {
		t.Fatalf("first: %d %s", first.Code, first.Body)
	}
	t.Run("replays the stored answer without a second effect", func(t *testing.T) {
		again := do(t, rt, "POST", "/api/v1/things", "alice", `{"name":"a"}`, key)
		if again.Code != 201 || again.Body.String() != first.Body.String() || *calls != 1 {
			t.Fatalf("replay: %d %s calls=%d", again.Code, again.Body, *calls)
		}
		if again.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatal("no Idempotent-Replayed header")
		}
	})
	t.Run("answers 422 for the same key with another body", func(t *testing.T) {
		w := do(t, rt, "POST", "/api/v1/things", "alice", `{"name":"b"}`, key)
		if w.Code != 422 || problemCode(t, w) != "idempotency_key_reuse" || *calls != 1 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
	t.Run("never gives another principal the first answer", func(t *testing.T) {
		w := do(t, rt, "POST", "/api/v1/things", "bob", `{"name":"a"}`, key)
		if w.Code != 201 || *calls != 2 || w.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("%d %s calls=%d", w.Code, w.Body, *calls)
		}
	})
	t.Run("refuses a malformed key", func(t *testing.T) {
		w := do(t, rt, "POST", "/api/v1/things", "alice", `{"name":"a"}`, map[string]string{"Idempotency-Key": "has space"})
		if w.Code != 400 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
}

type allowAll struct{}

func (allowAll) Authorize(ctx context.Context, _ kernel.Actor, a kernel.Action, _ kernel.Resource) error {
	kernel.RecordCheck(ctx, a)
	return nil
}

func TestHandleRaw(t *testing.T) {
	rt, _ := testRouter(t)
	rt.HandleRaw("/raw/hijack", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("the raw handler cannot hijack: %v", err)
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		brw.Flush()
	}))
	rt.HandleRaw("/raw/panic", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") }))
	srv := httptest.NewServer(rt)
	defer srv.Close()

	t.Run("gets the outer chain and may hijack", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/raw/hijack")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("got %d %q", resp.StatusCode, b)
		}
	})
	t.Run("is guarded against panics with a correlation id", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/raw/panic")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 500 || resp.Header.Get("Correlation-Id") == "" {
			t.Fatalf("got %d, correlation id %q", resp.StatusCode, resp.Header.Get("Correlation-Id"))
		}
	})
	t.Run("is not listed as a route", func(t *testing.T) {
		for _, r := range rt.Routes() {
			if strings.HasPrefix(r.Pattern, "/raw") {
				t.Fatalf("Routes lists %s", r.Pattern)
			}
		}
	})
}

// post writes a POST header with Content-Length length to addr, then body, then waits for the
// answer's status (0 for none within wait); hangUp closes the client's side after body.
func post(t *testing.T, addr, path, token, contentType string, length int, body string, hangUp bool, wait time.Duration) (int, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n", path, contentType, length)
	if token != "" {
		head += "Authorization: Bearer " + token + "\r\n"
	}
	start := time.Now()
	if _, err := io.WriteString(conn, head+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	if hangUp {
		_ = conn.(*net.TCPConn).CloseWrite()
	}
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, time.Since(start)
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

func TestRequestBodies(t *testing.T) {
	const timeout = 300 * time.Millisecond
	logs := &kerneltest.Buffer{}
	rt := NewRouter(fakeAuth{}, nil, Options{MaxBodyBytes: 1 << 20, BodyReadTimeout: timeout, PublicForms: []string{"/form"},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	decodeName := func(r *Request) (int, any, error) {
		var in struct {
			Name string `json:"name"`
		}
		if err := r.Decode(&in); err != nil {
			return 0, nil, err
		}
		kernel.RecordCheck(r.Context(), chat.ActSpaceCreate)
		return 201, map[string]any{"name": in.Name}, nil
	}
	rt.Handle(
		Route{Method: "POST", Pattern: "/api/v1/things", Action: chat.ActSpaceCreate, Handler: decodeName},
		Route{Method: "POST", Pattern: "/api/v1/login", Action: chat.ActSpaceCreate, Public: true, Handler: decodeName},
		Route{Method: "POST", Pattern: "/api/v1/slow", Action: chat.ActSpaceCreate, Handler: func(r *Request) (int, any, error) {
			time.Sleep(3 * timeout) // works long after its body came
			if err := r.Context().Err(); err != nil {
				return 0, nil, err
			}
			return decodeName(r)
		}},
	)
	rt.HandleRaw("/form", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	srv := httptest.NewServer(rt)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	const js, form = "application/json", "application/x-www-form-urlencoded"

	t.Run("answers 401 before the body of an anonymous request is sent", func(t *testing.T) {
		if st, took := post(t, addr, "/api/v1/things", "", js, 1<<20, "", false, 5*time.Second); st != 401 {
			t.Fatalf("status %d after %s", st, took)
		}
	})
	t.Run("answers 408 when a body stalls past the body read timeout", func(t *testing.T) {
		st, took := post(t, addr, "/api/v1/things", "alice", js, 100, `{"name":`, false, 5*time.Second)
		if st != http.StatusRequestTimeout || took > 10*timeout {
			t.Fatalf("status %d after %s", st, took)
		}
	})
	t.Run("answers 400 and logs no error when the client hangs up mid-body", func(t *testing.T) {
		if st, _ := post(t, addr, "/api/v1/things", "alice", js, 100, `{"name":`, true, 5*time.Second); st != 400 {
			t.Fatalf("status %d", st)
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Fatalf("logged an error:\n%s", logs)
		}
	})
	t.Run("caps the body of a public route", func(t *testing.T) {
		body := `{"name":"` + strings.Repeat("x", DefaultMaxPublicBodyBytes) + `"}`
		if st, _ := post(t, addr, "/api/v1/login", "", js, len(body), body, false, 5*time.Second); st != 413 {
			t.Fatalf("status %d", st)
		}
		body = `{"name":"` + strings.Repeat("x", 2*DefaultMaxPublicBodyBytes) + `"}`
		if st, _ := post(t, addr, "/api/v1/things", "alice", js, len(body), body, false, 5*time.Second); st != 201 {
			t.Fatalf("an authenticated body of the same size: status %d", st)
		}
	})
	t.Run("caps the body of a public form of a raw handler", func(t *testing.T) {
		body := "a=" + strings.Repeat("x", DefaultMaxPublicBodyBytes)
		if st, _ := post(t, addr, "/form", "", form, len(body), body, false, 5*time.Second); st != 400 {
			t.Fatalf("status %d", st)
		}
		if st, _ := post(t, addr, "/form", "", form, 3, "a=b", false, 5*time.Second); st != 200 {
			t.Fatalf("a small form: status %d", st)
		}
	})
	t.Run("bounds the body of a raw handler in time too", func(t *testing.T) {
		st, took := post(t, addr, "/form", "", form, 100, "a=", false, 5*time.Second)
		if st != 400 || took > 10*timeout {
			t.Fatalf("status %d after %s", st, took)
		}
	})
	t.Run("lifts the deadline once the body is read, for a handler that works long", func(t *testing.T) {
		if st, _ := post(t, addr, "/api/v1/slow", "alice", js, len(`{"name":"a"}`), `{"name":"a"}`, false, 5*time.Second); st != 201 {
			t.Fatalf("status %d", st)
		}
	})
}
