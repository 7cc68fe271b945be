package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
)

// loginVia sends a failing login over hc with the forwarding headers h and returns the status.
func loginVia(t *testing.T, srv *server, hc *http.Client, h http.Header, handle string) int {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"handle": handle, "password": "a wrong password"})
	req, err := http.NewRequest(http.MethodPost, srv.public+api("auth", "login"), bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range h {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("login of %s: %v", handle, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func xff(v string) http.Header { return http.Header{"X-Forwarded-For": {v}} }

// TestTrustedProxies holds that the login limiter counts the failures of the client a trusted
// proxy names (server.trusted_proxies), and of the TCP peer when the peer is not a trusted
// proxy, whatever its forwarding headers claim. Each guess is against a handle of its own, so
// that only the limit per address can answer 429. The rule is in the router, the same on both
// engines, so one engine is enough.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	srv := mustStart(t, sqliteEngine, "--set", "server.trusted_proxies=127.0.0.9, 127.0.5.0/24",
		"--set", "auth.login_max_failures_per_address=3")
	proxy := from("127.0.0.9")
	n := 0
	handle := func() string { n++; return "nobody" + strconv.Itoa(n) }

	t.Run("behind a trusted proxy the limit is the named client's", func(t *testing.T) {
		for i := range 3 {
			if st := loginVia(t, srv, proxy, xff("203.0.113.5"), handle()); st != http.StatusUnauthorized {
				t.Fatalf("guess %d of the client behind the proxy: %d, want 401", i, st)
			}
		}
		if st := loginVia(t, srv, proxy, xff("203.0.113.5"), handle()); st != http.StatusTooManyRequests {
			t.Fatalf("the fourth guess of the client: %d, want 429", st)
		}
		if st := loginVia(t, srv, proxy, http.Header{"Forwarded": {`for="203.0.113.5:4711";proto=https`}}, handle()); st != http.StatusTooManyRequests {
			t.Errorf("the same client named in Forwarded: %d, want 429", st)
		}
		if st := loginVia(t, srv, proxy, xff("203.0.113.6, 203.0.113.5"), handle()); st != http.StatusTooManyRequests {
			t.Errorf("the client with a forged address on the left: %d, want 429", st)
		}
		if st := loginVia(t, srv, proxy, xff("203.0.113.5, 127.0.5.7"), handle()); st != http.StatusTooManyRequests {
			t.Errorf("the client through a second trusted proxy: %d, want 429", st)
		}
		if st := loginVia(t, srv, proxy, xff("203.0.113.6"), handle()); st != http.StatusUnauthorized {
			t.Errorf("another client behind the same proxy: %d, want 401", st)
		}
		if st := loginVia(t, srv, proxy, nil, handle()); st != http.StatusUnauthorized {
			t.Errorf("the proxy itself: %d, want 401", st)
		}
	})

	t.Run("an untrusted peer is the client, whatever its headers say", func(t *testing.T) {
		peer := from("127.0.0.2")
		for i := range 3 {
			h := xff("198.51.100." + strconv.Itoa(i+1))
			h.Set("Forwarded", "for=198.51.100.9")
			if st := loginVia(t, srv, peer, h, handle()); st != http.StatusUnauthorized {
				t.Fatalf("guess %d: %d, want 401", i, st)
			}
		}
		if st := loginVia(t, srv, peer, xff("198.51.100.4"), handle()); st != http.StatusTooManyRequests {
			t.Fatalf("the fourth guess with yet another forged address: %d, want 429", st)
		}
		// The addresses it claimed were never counted.
		if st := loginVia(t, srv, proxy, xff("198.51.100.1"), handle()); st != http.StatusUnauthorized {
			t.Errorf("a forged address, named by the trusted proxy: %d, want 401", st)
		}
		if st := loginVia(t, srv, from("127.0.0.3"), nil, handle()); st != http.StatusUnauthorized {
			t.Errorf("another peer: %d, want 401", st)
		}
	})
}
