package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestLoginRateLimit guesses passwords until the server says 429 with Retry-After.
func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		anon := as(in.srv, "")
		const maxAttempts = 50
		for i := 1; i <= maxAttempts; i++ {
			r := anon.do(t, http.MethodPost, api("auth", "login"), map[string]any{"handle": "owner", "password": "guess " + strconv.Itoa(i)})
			switch r.status {
			case http.StatusUnauthorized:
				if r.code() != "unauthenticated" {
					t.Fatalf("%s: code %q", r, r.code())
				}
				continue
			case http.StatusTooManyRequests:
				t.Run("the limit answers rate_limited with a Retry-After in seconds", func(t *testing.T) {
					if r.code() != "rate_limited" {
						t.Errorf("%s: code %q", r, r.code())
					}
					if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
						t.Errorf("Retry-After %q, want whole seconds ≥ 1", r.header.Get("Retry-After"))
					}
				})
				t.Run("the limit holds for the next guess too", func(t *testing.T) {
					anon.do(t, http.MethodPost, api("auth", "login"), map[string]any{"handle": "owner", "password": "one more"}).
						want(t, http.StatusTooManyRequests)
				})
				t.Run("a logged-in session is not affected", func(t *testing.T) {
					in.owner.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK)
				})
				return
			default:
				t.Fatalf("%s: want 401 or 429", r)
			}
		}
		t.Fatalf("%d wrong passwords in a row were never answered 429", maxAttempts)
	})
}

// from is an HTTP client whose connections leave from the loopback address local (Linux
// routes all of 127.0.0.0/8 to the loopback), so a test can be several clients.
func from(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// loginFrom logs in over hc and returns the status and the Retry-After header.
func loginFrom(t *testing.T, srv *server, hc *http.Client, handle, password string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"handle": handle, "password": password})
	resp, err := hc.Post(srv.public+api("auth", "login"), "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("login of %s: %v", handle, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestLoginLockout holds that guessing a person's password cannot lock the person out: the
// limits refuse the address that guessed, and guesses from many addresses only slow down the
// addresses that failed, API and console alike.
func TestLoginLockout(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		const pw = "carol's long password"
		in.owner.do(t, http.MethodPost, api("users"), map[string]any{"handle": "carol", "display_name": "Carol", "password": pw}).
			want(t, http.StatusCreated)
		attacker := from("127.0.0.2")

		t.Run("ten wrong guesses from one address refuse that address", func(t *testing.T) {
			for i := range 10 {
				if st, _ := loginFrom(t, in.srv, attacker, "carol", "guess "+strconv.Itoa(i)); st != http.StatusUnauthorized {
					t.Fatalf("guess %d: %d", i, st)
				}
			}
			if st, ra := loginFrom(t, in.srv, attacker, "carol", pw); st != http.StatusTooManyRequests || ra == "" {
				t.Fatalf("the right password from the guessing address: %d (Retry-After %q), want 429", st, ra)
			}
		})

		t.Run("the right password from another address still signs the person in", func(t *testing.T) {
			if st, _ := loginFrom(t, in.srv, from("127.0.0.3"), "carol", pw); st != http.StatusOK {
				t.Fatalf("status %d, want 200", st)
			}
		})

		t.Run("the console's sign-in from another address still signs the person in", func(t *testing.T) {
			b := newBrowser(t, in.srv.public)
			b.hc.Transport = from("127.0.0.4").Transport
			b.get("/console/signin").want(t, http.StatusOK)
			b.post("/console/signin", url.Values{"handle": {"carol"}, "password": {pw}}).want(t, http.StatusSeeOther)
		})

		t.Run("guesses from many addresses slow down an address that failed, not a clean one", func(t *testing.T) {
			for i := range 10 {
				if st, _ := loginFrom(t, in.srv, from("127.0.1."+strconv.Itoa(10+i)), "carol", "spread guess"); st != http.StatusUnauthorized {
					t.Fatalf("guess from address %d: %d", i, st)
				}
			}
			next := from("127.0.2.1")
			if st, _ := loginFrom(t, in.srv, next, "carol", "first guess"); st != http.StatusUnauthorized {
				t.Fatalf("a new address's first guess: %d", st)
			}
			if st, ra := loginFrom(t, in.srv, next, "carol", "second guess"); st != http.StatusTooManyRequests || ra != "1" {
				t.Fatalf("its second guess at once: %d (Retry-After %q), want 429 after 1", st, ra)
			}
			if st, _ := loginFrom(t, in.srv, from("127.0.2.2"), "carol", pw); st != http.StatusOK {
				t.Fatalf("the right password from a clean address: %d, want 200", st)
			}
		})
	})
}
