package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// rawRouter has a Cookie route that streams its body, and two Serve routes, one of which forgets
// to authorize.
func rawRouter(t *testing.T) *Router {
	t.Helper()
	rt := NewRouter(fakeAuth{}, nil, Options{MaxBodyBytes: 16, MaxJSONDepth: 4, SessionCookieName: "bothy_session",
		SessionCSRF: func(token string) string { return "csrf-of-" + token }})
	rt.Handle(
		Route{Method: "POST", Pattern: "/api/v1/upload", Action: chat.ActSpaceCreate, Stream: true, Cookie: true, Handler: func(r *Request) (int, any, error) {
			kernel.RecordCheck(r.Context(), chat.ActSpaceCreate)
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return 0, nil, err
			}
			return 201, map[string]any{"bytes": len(b), "actor": r.Actor.Handle}, nil
		}},
		Route{Method: "GET", Pattern: "/api/v1/bytes", Action: chat.ActSpaceRead, Cookie: true, Serve: func(w http.ResponseWriter, r *Request) error {
			kernel.RecordCheck(r.Context(), chat.ActSpaceRead)
			if r.URL.Query().Get("missing") != "" {
				return kernel.ErrNotFound
			}
			_, err := io.WriteString(w, "the bytes")
			return err
		}},
		Route{Method: "GET", Pattern: "/api/v1/unchecked", Action: chat.ActSpaceRead, Serve: func(w http.ResponseWriter, r *Request) error {
			_, err := io.WriteString(w, "secret")
			return err
		}},
	)
	return rt
}

func rawDo(rt *Router, method, path, body string, set func(*http.Request)) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if set != nil {
		set(req)
	}
	w := httptest.NewRecorder()
	rt.ServeHTTP(w, req)
	return w
}

func TestStreamAndCookieRoutes(t *testing.T) {
	rt := rawRouter(t)
	cookie := func(token string) func(*http.Request) {
		return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "bothy_session", Value: token}) }
	}
	t.Run("a stream route reads a body past the JSON limit", func(t *testing.T) {
		w := rawDo(rt, "POST", "/api/v1/upload", strings.Repeat("x", 1000), func(r *http.Request) { r.Header.Set("Authorization", "Bearer alice") })
		if w.Code != 201 || !strings.Contains(w.Body.String(), `"bytes":1000`) {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
	t.Run("the session cookie needs its CSRF header on a post", func(t *testing.T) {
		if w := rawDo(rt, "POST", "/api/v1/upload", "x", cookie("alice")); w.Code != 403 {
			t.Fatalf("no header: %d %s", w.Code, w.Body)
		}
		wrong := func(r *http.Request) { cookie("alice")(r); r.Header.Set(CSRFHeader, "csrf-of-bob") }
		if w := rawDo(rt, "POST", "/api/v1/upload", "x", wrong); w.Code != 403 {
			t.Fatalf("another session's token: %d %s", w.Code, w.Body)
		}
		right := func(r *http.Request) { cookie("alice")(r); r.Header.Set(CSRFHeader, "csrf-of-alice") }
		if w := rawDo(rt, "POST", "/api/v1/upload", "x", right); w.Code != 201 || !strings.Contains(w.Body.String(), `"actor":"alice"`) {
			t.Fatalf("with its token: %d %s", w.Code, w.Body)
		}
		bad := func(r *http.Request) { cookie("mallory")(r); r.Header.Set(CSRFHeader, "csrf-of-mallory") }
		if w := rawDo(rt, "POST", "/api/v1/upload", "x", bad); w.Code != 401 {
			t.Fatalf("a session that is no one's: %d %s", w.Code, w.Body)
		}
	})
	t.Run("a GET takes the cookie alone; a route without Cookie does not", func(t *testing.T) {
		if w := rawDo(rt, "GET", "/api/v1/bytes", "", cookie("alice")); w.Code != 200 || w.Body.String() != "the bytes" {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		if w := rawDo(rt, "GET", "/api/v1/unchecked", "", cookie("alice")); w.Code != 401 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
	t.Run("a serve route's error before any byte is problem+json", func(t *testing.T) {
		w := rawDo(rt, "GET", "/api/v1/bytes?missing=1", "", cookie("alice"))
		if w.Code != 404 || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Fatalf("%d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
		}
	})
	t.Run("a serve route that checked nothing answers 500, not its bytes", func(t *testing.T) {
		w := rawDo(rt, "GET", "/api/v1/unchecked", "", func(r *http.Request) { r.Header.Set("Authorization", "Bearer alice") })
		if w.Code != 500 || strings.Contains(w.Body.String(), "secret") {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
}
