package wstransport_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/ui"
)

// dialWith connects with the given headers and reads hello; it returns nil and the answer's
// status when the upgrade is refused.
func (s *server) dialWith(t *testing.T, h http.Header) (*wsClient, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, s.ws, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if resp == nil {
			t.Fatalf("dial: %v", err)
		}
		return nil, resp.StatusCode
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	w := &wsClient{t: t, c: c}
	if f := w.next(); f.Op != "hello" {
		t.Fatalf("first frame %s, want hello", f.Op)
	}
	return w, http.StatusSwitchingProtocols
}

// TestCookieIdentify is the console script's way in: an identify without a token identifies
// with the session cookie of the upgrade, from the instance's own origin only, and only while
// the session holds.
func TestCookieIdentify(t *testing.T) {
	engines(t, func(t *testing.T, eng engine.Name) {
		s := mustStart(t, eng, nil)
		owner := s.mustOwner(t)
		origin := s.base
		cookie := func(tok string) http.Header {
			return http.Header{"Cookie": {"bothy_session=" + tok}, "Origin": {origin}}
		}

		t.Run("an identify without a token identifies with the session cookie", func(t *testing.T) {
			w, _ := s.dialWith(t, cookie(owner.token))
			w.send(map[string]any{"op": "identify", "d": map[string]any{}})
			f := w.next()
			var ready struct {
				Principal struct {
					ID string `json:"id"`
				} `json:"principal"`
			}
			if f.Op != "ready" || json.Unmarshal(f.D, &ready) != nil || ready.Principal.ID != owner.ID {
				t.Fatalf("got %s %s, want ready for %s", f.Op, f.D, owner.ID)
			}
			w.catchUp()
		})

		t.Run("a token in identify wins over the cookie", func(t *testing.T) {
			w, _ := s.dialWith(t, cookie(owner.token))
			w.send(map[string]any{"op": "identify", "d": map[string]any{"token": "bothy_not-a-token"}})
			w.expectClose(4004)
		})

		t.Run("an upgrade with the cookie from another origin is refused", func(t *testing.T) {
			h := cookie(owner.token)
			h.Set("Origin", "https://evil.example")
			if w, status := s.dialWith(t, h); w != nil || status != http.StatusForbidden {
				t.Fatalf("cross-origin upgrade answered %d", status)
			}
		})

		t.Run("without a cookie or a token identify fails", func(t *testing.T) {
			w, _ := s.dialWith(t, http.Header{"Origin": {origin}})
			w.send(map[string]any{"op": "identify", "d": map[string]any{}})
			w.expectClose(4004)
		})

		t.Run("a logged-out session's cookie is refused and its connection closed", func(t *testing.T) {
			tok := s.mustLogin(t, "owner", ownerPassword)
			live, _ := s.dialWith(t, cookie(tok))
			live.send(map[string]any{"op": "identify", "d": map[string]any{}})
			if f := live.next(); f.Op != "ready" {
				t.Fatalf("got %s", f.Op)
			}
			live.catchUp()
			s.must(t, http.StatusNoContent, "POST", "/api/v1/auth/logout", tok, nil, nil)
			live.expectClose(4004)
			w, _ := s.dialWith(t, cookie(tok))
			w.send(map[string]any{"op": "identify", "d": map[string]any{}})
			w.expectClose(4004)
		})

		t.Run("a cookie that is no token is refused", func(t *testing.T) {
			w, _ := s.dialWith(t, cookie(strings.Repeat("x", 43)))
			w.send(map[string]any{"op": "identify", "d": map[string]any{}})
			w.expectClose(4004)
		})
	})
}

// TestCookieIdentifyBehindHTTPS: behind an https server.public_url the console names its
// session cookie with the __Host- prefix, which no sibling host can plant; the gateway takes that
// cookie and not one of the plain name.
func TestCookieIdentifyBehindHTTPS(t *testing.T) {
	const publicURL = "https://chat.example"
	engines(t, func(t *testing.T, eng engine.Name) {
		s := mustStart(t, eng, func(c *config.Config) { c.Server.PublicURL = publicURL })
		owner := s.mustOwner(t)
		dial := func(name string) *wsClient {
			w, _ := s.dialWith(t, http.Header{"Cookie": {name + "=" + owner.token}, "Origin": {s.base}})
			w.send(map[string]any{"op": "identify", "d": map[string]any{}})
			return w
		}

		t.Run("the console's __Host- session cookie identifies", func(t *testing.T) {
			name := ui.SessionCookieName(publicURL)
			if name != "__Host-bothy_session" {
				t.Fatalf("the console names its cookie %q behind https", name)
			}
			w := dial(name)
			if f := w.next(); f.Op != "ready" {
				t.Fatalf("got %s %s, want ready", f.Op, f.D)
			}
			w.catchUp()
		})

		t.Run("a cookie of the plain name is not taken", func(t *testing.T) {
			dial("bothy_session").expectClose(4004)
		})
	})
}
