package identity

import (
	"context"
	"fmt"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
)

func (m *memStore) CreateSession(_ context.Context, s Session) error {
	m.sessions[s.ID] = &memSession{principal: s.PrincipalID, expires: s.ExpiresAt}
	return nil
}

// loginEnv is a people env where alice has a password and every person may log in.
func loginEnv(t *testing.T, cfg Config) *peopleEnv {
	t.Helper()
	e := newPeopleEnv(t)
	e.az.Fn = nil
	e.svc = New(Deps{Store: e.store, UoW: e.tx, Events: e.tx, Authz: e.az, Hasher: e.hasher, Clock: e.clock}, cfg)
	e.store.passwords[e.alice.ID] = "plain:" + alicePassword
	return e
}

const alicePassword = "alice's own password"

// login tries alice's handle (or another) from addr and returns the error code and the
// Retry-After of a refusal.
func (e *peopleEnv) login(handle, password, addr string) (kernel.Code, int) {
	_, err := e.svc.Login(context.Background(), handle, password, addr)
	return kernel.CodeOf(err), int((kernel.RetryAfterOf(err) + time.Second - 1) / time.Second)
}

func TestLoginLimits(t *testing.T) {
	const attacker, home = "198.51.100.7", "203.0.113.9"

	t.Run("wrong guesses from one address do not refuse the right password from another", func(t *testing.T) {
		e := loginEnv(t, DefaultConfig())
		for i := range 10 {
			if code, _ := e.login("alice", fmt.Sprint("guess ", i), attacker); code != kernel.CodeUnauthenticated {
				t.Fatalf("guess %d: %s", i, code)
			}
		}
		if code, _ := e.login("alice", "one more", attacker); code != kernel.CodeRateLimited {
			t.Fatalf("the 11th guess from the same address: %s, want rate_limited", code)
		}
		if code, _ := e.login("alice", alicePassword, home); code != (kernel.Code{}) {
			t.Fatalf("alice from home: %s", code)
		}
		if code, _ := e.login("Alice", alicePassword, "192.0.2.1"); code != (kernel.Code{}) {
			t.Fatalf("alice from a third address: %s", code)
		}
	})

	t.Run("an address that failed too often against a handle is refused even with the right password", func(t *testing.T) {
		e := loginEnv(t, DefaultConfig())
		for i := range 10 {
			e.login("alice", fmt.Sprint("guess ", i), attacker)
		}
		code, retry := e.login("alice", alicePassword, attacker)
		if code != kernel.CodeRateLimited || retry < 1 || retry > 600 {
			t.Fatalf("%s, Retry-After %d", code, retry)
		}
		e.clock.Advance(10*time.Minute + time.Second)
		if code, _ := e.login("alice", alicePassword, attacker); code != (kernel.Code{}) {
			t.Fatalf("after the window: %s", code)
		}
	})

	t.Run("an address is refused after its failures over all handles", func(t *testing.T) {
		e := loginEnv(t, DefaultConfig())
		for i := range 30 {
			if code, _ := e.login(fmt.Sprint("h", i%5), "guess", attacker); code != kernel.CodeUnauthenticated {
				t.Fatalf("guess %d: %s", i, code)
			}
		}
		if code, _ := e.login("alice", alicePassword, attacker); code != kernel.CodeRateLimited {
			t.Fatalf("the 31st attempt: %s, want rate_limited", code)
		}
		if code, _ := e.login("alice", alicePassword, home); code != (kernel.Code{}) {
			t.Fatalf("alice from home: %s", code)
		}
	})

	t.Run("guesses from many addresses slow down the addresses that failed, never a clean one", func(t *testing.T) {
		e := loginEnv(t, DefaultConfig())
		for i := range 10 { // a guess from each of ten addresses: the handle is under attack
			if code, _ := e.login("alice", "guess", fmt.Sprintf("198.51.100.%d", 10+i)); code != kernel.CodeUnauthenticated {
				t.Fatalf("guess %d: %s", i, code)
			}
		}
		if code, _ := e.login("alice", "first guess", attacker); code != kernel.CodeUnauthenticated {
			t.Fatalf("a new address's first guess: %s", code)
		}
		for _, want := range []int{1, 4, 16} {
			code, retry := e.login("alice", alicePassword, attacker)
			if code != kernel.CodeRateLimited || retry != want {
				t.Fatalf("right after a failure: %s with Retry-After %d, want rate_limited after %d", code, retry, want)
			}
			e.clock.Advance(time.Duration(want) * time.Second)
			if code, _ := e.login("alice", "next guess", attacker); code != kernel.CodeUnauthenticated {
				t.Fatalf("after waiting %ds: %s", want, code)
			}
		}
		if code, _ := e.login("alice", alicePassword, home); code != (kernel.Code{}) {
			t.Fatalf("alice from home, where she never failed: %s", code)
		}
	})

	t.Run("the person who mistyped under attack waits a second, not the window", func(t *testing.T) {
		e := loginEnv(t, DefaultConfig())
		for i := range 10 {
			e.login("alice", "guess", fmt.Sprintf("198.51.100.%d", 10+i))
		}
		e.login("alice", "typo", home)
		if code, retry := e.login("alice", alicePassword, home); code != kernel.CodeRateLimited || retry != 1 {
			t.Fatalf("%s, Retry-After %d", code, retry)
		}
		e.clock.Advance(time.Second)
		if code, _ := e.login("alice", alicePassword, home); code != (kernel.Code{}) {
			t.Fatalf("after a second: %s", code)
		}
	})

	t.Run("the addresses of one IPv6 /64 count as one", func(t *testing.T) {
		e := loginEnv(t, DefaultConfig())
		for i := range 10 {
			e.login("alice", "guess", fmt.Sprintf("2001:db8::%x", i+1))
		}
		if code, _ := e.login("alice", alicePassword, "2001:db8::ffff"); code != kernel.CodeRateLimited {
			t.Fatalf("another address of the /64: %s", code)
		}
		if code, _ := e.login("alice", alicePassword, "2001:db8:0:1::1"); code != (kernel.Code{}) {
			t.Fatalf("another /64: %s", code)
		}
	})

	t.Run("the limiter tracks a bounded number of keys", func(t *testing.T) {
		e := loginEnv(t, kerneltest.With(DefaultConfig(), func(c *Config) { c.RateLimitMaxKeys = 50 }))
		for i := range 500 {
			e.login(fmt.Sprint("h", i), "guess", fmt.Sprintf("198.51.%d.%d", i/250, i%250))
		}
		if n := e.svc.Limiter().tracked(); n > 50 {
			t.Fatalf("%d keys tracked", n)
		}
	})

	t.Run("failed logins against a handle do not stop its person changing the password", func(t *testing.T) {
		e := loginEnv(t, DefaultConfig())
		for i := range 10 {
			e.login("alice", "guess", fmt.Sprintf("198.51.100.%d", 10+i))
		}
		for range 10 {
			e.login("alice", "guess", attacker)
		}
		alice := kernel.Actor{ID: e.alice.ID, Kind: kernel.KindPerson, Handle: "alice", SessionID: e.session(e.alice.ID, time.Hour)}
		if err := e.svc.ChangePassword(context.Background(), alice, alicePassword, "a brand new password"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLoginBackoff(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: 0, 1: time.Second, 2: 4 * time.Second, 3: 16 * time.Second,
		5: 256 * time.Second, 6: 10 * time.Minute, 100: 10 * time.Minute} {
		if got := LoginBackoff(failures, 10*time.Minute); got != want {
			t.Errorf("LoginBackoff(%d) = %s, want %s", failures, got, want)
		}
	}
}
