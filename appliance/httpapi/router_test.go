package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"bothy.dev/bothy/app/kernel"
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
		Route{Method: "POST", Pattern: "/api/v1/things", Action: kernel.ActSpaceCreate, Handler: func(r *Request) (int, any, error) {
			var in struct {
				Name  string `json:"name"`
				Count int    `json:"count"`
			}
			if err := r.Decode(&in); err != nil {
				return 0, nil, err
			}
			kernel.RecordCheck(r.Context(), kernel.ActSpaceCreate)
			calls++
			return 201, map[string]any{"name": in.Name, "n": calls}, nil
		}},
		Route{Method: "GET", Pattern: "/api/v1/things", Action: kernel.ActSpaceRead, Handler: func(r *Request) (int, any, error) {
			return 200, map[string]any{"items": []string{}}, nil // forgets to authorize
		}},
		Route{Method: "GET", Pattern: "/api/v1/boom", Action: kernel.ActSpaceRead, Handler: func(r *Request) (int, any, error) {
			panic("secret internals")
		}},
		Route{Method: "GET", Pattern: "/api/v1/denied", Action: kernel.ActSpaceRead, Handler: func(r *Request) (int, any, error) {
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
