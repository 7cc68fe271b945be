package tests

import (
	"net/http"
	"strconv"
	"testing"
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
