package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"bothy.dev/bothy/app/kernel"
)

func TestHandleJSONRPC(t *testing.T) {
	rt := NewRouter(fakeAuth{}, nil, Options{MaxBodyBytes: 64, MaxJSONDepth: 4})
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	rt.HandleJSONRPC("/rpc", 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), "wait") {
			entered <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"actor": kernel.ActorFrom(r.Context()).Handle, "body": string(body)})
	}))
	srv := httptest.NewServer(rt)
	defer srv.Close()

	send := func(method, token, contentType, body string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+"/rpc", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	wantProblem := func(t *testing.T, resp *http.Response, out map[string]any, status int, code string) {
		t.Helper()
		if resp.StatusCode != status || out["code"] != code || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
			t.Fatalf("got %d %v (%s), want %d %s", resp.StatusCode, out, resp.Header.Get("Content-Type"), status, code)
		}
	}

	t.Run("hands the handler the actor of the token and the body", func(t *testing.T) {
		resp, out := send(http.MethodPost, "alice", "application/json", `{"id":1}`)
		if resp.StatusCode != 200 || out["actor"] != "alice" || out["body"] != `{"id":1}` {
			t.Fatalf("got %d %v", resp.StatusCode, out)
		}
	})
	t.Run("answers 401 without a token or with a bad one, before the handler", func(t *testing.T) {
		resp, out := send(http.MethodPost, "", "application/json", `{}`)
		wantProblem(t, resp, out, 401, "unauthenticated")
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatal("no WWW-Authenticate")
		}
		resp, out = send(http.MethodPost, "mallory", "application/json", `{}`)
		wantProblem(t, resp, out, 401, "unauthenticated")
	})
	t.Run("guards the body as the JSON routes do", func(t *testing.T) {
		resp, out := send(http.MethodPost, "alice", "text/plain", `{}`)
		wantProblem(t, resp, out, 415, "unsupported_media_type")
		resp, out = send(http.MethodPost, "alice", "application/json", `{"a":"`+strings.Repeat("x", 80)+`"}`)
		wantProblem(t, resp, out, 413, "payload_too_large")
		resp, out = send(http.MethodPost, "alice", "application/json", `{"a":`)
		wantProblem(t, resp, out, 400, "malformed_request")
		resp, out = send(http.MethodPost, "alice", "application/json", `{"a":1,"a":2}`)
		if resp.StatusCode != 400 {
			t.Fatalf("a duplicate key: %d %v", resp.StatusCode, out)
		}
	})
	t.Run("answers 405 to another method", func(t *testing.T) {
		resp, out := send(http.MethodGet, "alice", "", "")
		wantProblem(t, resp, out, 405, "method_not_allowed")
		if resp.Header.Get("Allow") != "POST" {
			t.Fatalf("Allow %q", resp.Header.Get("Allow"))
		}
	})
	t.Run("bounds the requests of one principal under way, not those of another", func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(http.MethodPost, "alice", "application/json", `{"m":"wait"}`)
		}()
		<-entered
		resp, out := send(http.MethodPost, "alice", "application/json", `{}`)
		wantProblem(t, resp, out, 429, "rate_limited")
		if resp, out := send(http.MethodPost, "bob", "application/json", `{}`); resp.StatusCode != 200 || out["actor"] != "bob" {
			t.Fatalf("bob got %d %v", resp.StatusCode, out)
		}
		close(release)
		wg.Wait()
		if resp, _ := send(http.MethodPost, "alice", "application/json", `{}`); resp.StatusCode != 200 {
			t.Fatalf("alice after her request ended: %d", resp.StatusCode)
		}
	})
}
