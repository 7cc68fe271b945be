package storage_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// fakeHasher is a fast identity.PasswordHasher whose "parameters" are a version number, so a
// test can make every stored hash weaker by raising it.
type fakeHasher struct {
	version  atomic.Int32
	verifies atomic.Int32
}

var _ identity.PasswordHasher = (*fakeHasher)(nil)

func (h *fakeHasher) Hash(pw string) (string, error) {
	sum := sha256.Sum256([]byte(pw))
	return fmt.Sprintf("fake$%d$%s", h.version.Load(), hex.EncodeToString(sum[:])), nil
}

func (h *fakeHasher) Verify(hash, pw string) (bool, error) {
	h.verifies.Add(1)
	parts := strings.Split(hash, "$")
	if len(parts) != 3 || parts[0] != "fake" {
		return false, fmt.Errorf("malformed")
	}
	sum := sha256.Sum256([]byte(pw))
	return parts[2] == hex.EncodeToString(sum[:]), nil
}

func (h *fakeHasher) NeedsRehash(hash string) bool {
	var v int32
	_, err := fmt.Sscanf(hash, "fake$%d$", &v)
	return err != nil || v < h.version.Load()
}

type idEnv struct {
	db     *storage.DB
	store  *storage.IdentityStore
	id     *identity.Service
	clock  *kernel.ManualClock
	hasher *fakeHasher

	mu       sync.Mutex
	disabled []kernel.ID // UserDisabled as the in-transaction subscriber saw it
}

func newIDEnv(t *testing.T, eng storetest.Engine, cfg identity.Config) *idEnv {
	t.Helper()
	db := eng.Open(t, storage.Options{})
	e := &idEnv{db: db, store: storage.NewIdentityStore(db), hasher: &fakeHasher{},
		clock: kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	e.hasher.version.Store(1)
	az := storage.NewAuthzStore(db)
	bus := kernel.NewTxBus()
	kernel.Subscribe(bus, "test", func(ctx context.Context, ev identity.UserDisabled) error {
		e.mu.Lock()
		e.disabled = append(e.disabled, ev.UserID)
		e.mu.Unlock()
		return nil
	})
	bus.Seal()
	e.id = identity.New(identity.Deps{Store: e.store, UoW: db, Events: db, Authz: authz.New(authz.Deps{Store: az, Structure: az, UoW: db, Events: db, Clock: e.clock}),
		Hasher: e.hasher, Bus: bus, Clock: e.clock}, cfg)
	return e
}

var bg = context.Background()

// owner sets the instance up and returns its first owner, logged in.
func (e *idEnv) owner(t *testing.T) kernel.Actor {
	t.Helper()
	if _, err := e.id.BootstrapOwner(bg, "olga", "Olga", "owner-password"); err != nil {
		t.Fatal(err)
	}
	return e.login(t, "olga", "owner-password")
}

func (e *idEnv) person(t *testing.T, by kernel.Actor, handle string) kernel.Actor {
	t.Helper()
	if _, err := e.id.CreateUser(bg, by, handle, strings.ToUpper(handle[:1])+handle[1:], handle+"-password"); err != nil {
		t.Fatal(err)
	}
	return e.login(t, handle, handle+"-password")
}

func (e *idEnv) login(t *testing.T, handle, pw string) kernel.Actor {
	t.Helper()
	res, err := e.id.Login(bg, handle, pw, "192.0.2.1")
	if err != nil {
		t.Fatalf("login %s: %v", handle, err)
	}
	a, err := e.id.Authenticate(bg, res.Token)
	if err != nil {
		t.Fatalf("authenticate %s: %v", handle, err)
	}
	return a
}

func (e *idEnv) events(t *testing.T) []kernel.LoggedEvent {
	t.Helper()
	evs, err := e.db.EventsAfter(bg, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func wantCode(t *testing.T, err error, code kernel.Code) *kernel.Error {
	t.Helper()
	if kernel.CodeOf(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	ke, _ := err.(*kernel.Error)
	return ke
}

func TestSetup(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("issues a one-time code while no owner exists and a newer code replaces it", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			first, ok, err := e.id.IssueSetupCode(bg)
			if err != nil || !ok || len(first) < 40 {
				t.Fatalf("%q %v %v", first, ok, err)
			}
			second, ok, err := e.id.IssueSetupCode(bg)
			if err != nil || !ok || second == first {
				t.Fatalf("%q %v %v", second, ok, err)
			}
			st, _ := e.store.SetupState(bg)
			if st.CodeHash == "" || strings.Contains(st.CodeHash, second) {
				t.Fatalf("stored %q", st.CodeHash)
			}
			_, err = e.id.Setup(bg, first, "olga", "Olga", "owner-password")
			wantCode(t, err, kernel.CodeForbidden)
			u, err := e.id.Setup(bg, second, "olga", "Olga", "owner-password")
			if err != nil {
				t.Fatal(err)
			}
			if !u.IsOwner || u.Kind != kernel.KindPerson || u.Status != identity.StatusActive || u.Handle != "olga" {
				t.Fatalf("user %+v", u)
			}
		})

		t.Run("completes the setup, clears the code and appends user.created", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			code, _, _ := e.id.IssueSetupCode(bg)
			u, err := e.id.Setup(bg, code, "olga", "Olga", "owner-password")
			if err != nil {
				t.Fatal(err)
			}
			st, _ := e.store.SetupState(bg)
			if !st.Completed || st.CodeHash != "" {
				t.Fatalf("state %+v", st)
			}
			if _, ok, err := e.id.IssueSetupCode(bg); ok || err != nil {
				t.Fatalf("a code after setup: %v %v", ok, err)
			}
			_, err = e.id.Setup(bg, code, "other", "Other", "owner-password")
			wantCode(t, err, identity.CodeSetupComplete)
			evs := e.events(t)
			if len(evs) != 1 || evs[0].Type != identity.EvUserCreated.Name || evs[0].SubjectID != u.ID || evs[0].Scope != (kernel.Scope{}) {
				t.Fatalf("events %+v", evs)
			}
			var p map[string]any
			_ = json.Unmarshal(evs[0].Payload, &p)
			if p["handle"] != "olga" || p["is_owner"] != true || p["password"] != nil || strings.Contains(string(evs[0].Payload), "owner-password") {
				t.Fatalf("payload %s", evs[0].Payload)
			}
		})

		t.Run("a wrong code is forbidden and creates nobody", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			e.id.IssueSetupCode(bg)
			_, err := e.id.Setup(bg, "guess", "olga", "Olga", "owner-password")
			wantCode(t, err, kernel.CodeForbidden)
			_, err = e.id.Setup(bg, "", "olga", "Olga", "owner-password")
			wantCode(t, err, kernel.CodeForbidden)
			if n, _ := e.store.ActiveOwners(bg); n != 0 {
				t.Fatal("an owner was created")
			}
		})

		t.Run("setup without an issued code is forbidden", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			_, err := e.id.Setup(bg, "", "olga", "Olga", "owner-password")
			wantCode(t, err, kernel.CodeForbidden)
		})

		t.Run("setup validates the person", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			code, _, _ := e.id.IssueSetupCode(bg)
			for field, in := range map[string][3]string{
				"handle":       {"no spaces", "Olga", "owner-password"},
				"display_name": {"olga", "", "owner-password"},
				"password":     {"olga", "Olga", "short"},
			} {
				_, err := e.id.Setup(bg, code, in[0], in[1], in[2])
				if ke := wantCode(t, err, kernel.CodeValidation); ke.Field != field {
					t.Errorf("field %q, want %q", ke.Field, field)
				}
			}
		})

		t.Run("bootstrap-owner creates the first owner once", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			u, err := e.id.BootstrapOwner(bg, "olga", "Olga", "owner-password")
			if err != nil || !u.IsOwner {
				t.Fatalf("%+v %v", u, err)
			}
			_, err = e.id.BootstrapOwner(bg, "olga2", "Olga", "owner-password")
			wantCode(t, err, identity.CodeSetupComplete)
		})

		t.Run("concurrent setups create exactly one owner", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			var wg sync.WaitGroup
			var okCount atomic.Int32
			for i := 0; i < 8; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					if _, err := e.id.BootstrapOwner(bg, fmt.Sprintf("owner%d", i), "Owner", "owner-password"); err == nil {
						okCount.Add(1)
					} else if !kernel.IsCode(err, identity.CodeSetupComplete) {
						t.Error(err)
					}
				}(i)
			}
			wg.Wait()
			if n, _ := e.store.ActiveOwners(bg); okCount.Load() != 1 || n != 1 {
				t.Fatalf("%d succeeded, %d owners", okCount.Load(), n)
			}
		})
	})
}

func TestLogin(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("opens a session that authenticates as the person", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			e.owner(t)
			res, err := e.id.Login(bg, "OLGA", "owner-password", "192.0.2.1")
			if err != nil {
				t.Fatal(err)
			}
			if !res.ExpiresAt.Equal(e.clock.Now().Add(720*time.Hour)) || res.User.Handle != "olga" || len(res.Token) != 43 {
				t.Fatalf("result %+v", res)
			}
			a, err := e.id.Authenticate(bg, res.Token)
			if err != nil {
				t.Fatal(err)
			}
			if a.ID != res.User.ID || !a.IsOwner || a.Kind != kernel.KindPerson || a.Handle != "olga" || a.SessionID.IsZero() || !a.TokenID.IsZero() {
				t.Fatalf("actor %+v", a)
			}
		})

		t.Run("an unknown handle and a wrong password answer the same error and both hash", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			e.owner(t)
			before := e.hasher.verifies.Load()
			_, errUnknown := e.id.Login(bg, "nobody", "owner-password", "192.0.2.1")
			_, errWrong := e.id.Login(bg, "olga", "wrong-password", "192.0.2.1")
			wantCode(t, errUnknown, kernel.CodeUnauthenticated)
			wantCode(t, errWrong, kernel.CodeUnauthenticated)
			if errUnknown.Error() != errWrong.Error() || errWrong.Error() != "unauthenticated: invalid handle or password" {
				t.Fatalf("%v / %v", errUnknown, errWrong)
			}
			if got := e.hasher.verifies.Load() - before; got != 2 {
				t.Fatalf("%d verifications, want 2", got)
			}
		})

		t.Run("a disabled person cannot log in", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			alice := e.person(t, owner, "alice")
			if _, err := e.id.DisableUser(bg, owner, alice.ID); err != nil {
				t.Fatal(err)
			}
			_, err := e.id.Login(bg, "alice", "alice-password", "192.0.2.1")
			wantCode(t, err, kernel.CodeUnauthenticated)
		})

		t.Run("failures against a handle from other addresses never refuse its right password", func(t *testing.T) {
			e := newIDEnv(t, eng, kerneltest.With(identity.DefaultConfig(), func(c *identity.Config) {
				c.LoginFailuresPerHandle, c.LoginFailuresPerIP, c.LoginFailureWindow = 3, 100, 10*time.Minute
			}))
			e.owner(t)
			for i := 0; i < 5; i++ {
				_, err := e.id.Login(bg, "olga", "wrong-password", fmt.Sprintf("192.0.2.%d", i+10))
				wantCode(t, err, kernel.CodeUnauthenticated)
				e.clock.Advance(time.Minute)
			}
			if _, err := e.id.Login(bg, "Olga", "owner-password", "198.51.100.7"); err != nil {
				t.Fatalf("the right password from a clean address: %v", err)
			}
		})

		t.Run("limits failures per handle from one address and says when to retry", func(t *testing.T) {
			e := newIDEnv(t, eng, kerneltest.With(identity.DefaultConfig(), func(c *identity.Config) {
				c.LoginFailuresPerHandle, c.LoginFailuresPerIP, c.LoginFailureWindow = 3, 100, 10*time.Minute
			}))
			e.owner(t)
			for i := 0; i < 3; i++ {
				_, err := e.id.Login(bg, "olga", "wrong-password", "192.0.2.10")
				wantCode(t, err, kernel.CodeUnauthenticated)
				e.clock.Advance(time.Minute)
			}
			verifies := e.hasher.verifies.Load()
			_, err := e.id.Login(bg, "Olga", "owner-password", "192.0.2.10")
			if wantCode(t, err, kernel.CodeRateLimited); kernel.RetryAfterOf(err) != 7*time.Minute {
				t.Fatalf("retry after %s", kernel.RetryAfterOf(err))
			}
			if e.hasher.verifies.Load() != verifies {
				t.Fatal("a refused attempt still hashed")
			}
			e.clock.Advance(7 * time.Minute)
			if _, err := e.id.Login(bg, "olga", "owner-password", "192.0.2.10"); err != nil {
				t.Fatalf("after the window: %v", err)
			}
		})

		t.Run("limits failures per client IP across handles", func(t *testing.T) {
			e := newIDEnv(t, eng, kerneltest.With(identity.DefaultConfig(), func(c *identity.Config) {
				c.LoginFailuresPerHandle, c.LoginFailuresPerIP, c.LoginFailureWindow = 100, 2, time.Minute
			}))
			e.owner(t)
			e.id.Login(bg, "a", "wrong-password", "203.0.113.5")
			e.id.Login(bg, "b", "wrong-password", "203.0.113.5")
			_, err := e.id.Login(bg, "olga", "owner-password", "203.0.113.5")
			if wantCode(t, err, kernel.CodeRateLimited); kernel.RetryAfterOf(err) != time.Minute {
				t.Fatalf("retry after %s", kernel.RetryAfterOf(err))
			}
			if _, err := e.id.Login(bg, "olga", "owner-password", "203.0.113.6"); err != nil {
				t.Fatalf("another IP: %v", err)
			}
		})

		t.Run("successful logins do not count as failures", func(t *testing.T) {
			e := newIDEnv(t, eng, kerneltest.With(identity.DefaultConfig(), func(c *identity.Config) { c.LoginFailuresPerHandle, c.LoginFailuresPerIP = 1, 1 }))
			e.owner(t)
			for i := 0; i < 5; i++ {
				if _, err := e.id.Login(bg, "olga", "owner-password", "192.0.2.1"); err != nil {
					t.Fatalf("login %d: %v", i, err)
				}
			}
		})

		t.Run("replaces a hash made with weaker parameters at the next login", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			e.owner(t)
			_, old, _ := e.store.LoginCredential(bg, "olga")
			e.hasher.version.Store(2)
			e.login(t, "olga", "owner-password")
			_, now, _ := e.store.LoginCredential(bg, "olga")
			if !strings.HasPrefix(old, "fake$1$") || !strings.HasPrefix(now, "fake$2$") {
				t.Fatalf("hash %q → %q", old, now)
			}
			e.login(t, "olga", "owner-password") // and the new hash verifies
		})
	})
}

func TestAuthenticate(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("refuses garbage without touching the store", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			for _, b := range []string{"", "nope", "bothy_nope", strings.Repeat("x", 300)} {
				_, err := e.id.Authenticate(bg, b)
				wantCode(t, err, kernel.CodeUnauthenticated)
			}
		})

		t.Run("a session ends at logout and says so to its person", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			e.owner(t)
			res, _ := e.id.Login(bg, "olga", "owner-password", "")
			a, _ := e.id.Authenticate(bg, res.Token)
			ctx, log := kernel.WithCheckLog(bg)
			if err := e.id.Logout(ctx, a); err != nil {
				t.Fatal(err)
			}
			if !log.Checked(identity.ActLogout) {
				t.Fatal("logout not checked")
			}
			_, err := e.id.Authenticate(bg, res.Token)
			wantCode(t, err, kernel.CodeUnauthenticated)
			evs := e.events(t)
			last := evs[len(evs)-1]
			if last.Type != identity.EvSessionRevoked.Name || last.Scope != (kernel.Scope{PrincipalID: a.ID}) || last.SubjectID != a.SessionID {
				t.Fatalf("event %+v", last)
			}
		})

		t.Run("a session expires after its TTL", func(t *testing.T) {
			e := newIDEnv(t, eng, kerneltest.With(identity.DefaultConfig(), func(c *identity.Config) { c.SessionTTL = time.Hour }))
			e.owner(t)
			res, _ := e.id.Login(bg, "olga", "owner-password", "")
			e.clock.Advance(59 * time.Minute)
			if _, err := e.id.Authenticate(bg, res.Token); err != nil {
				t.Fatalf("before expiry: %v", err)
			}
			e.clock.Advance(time.Minute)
			_, err := e.id.Authenticate(bg, res.Token)
			wantCode(t, err, kernel.CodeUnauthenticated)
		})

		t.Run("a disabled person's sessions and tokens stop at once", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			e.person(t, owner, "alice")
			res, _ := e.id.Login(bg, "alice", "alice-password", "")
			alice, _ := e.id.Authenticate(bg, res.Token)
			_, token, err := e.id.CreateToken(bg, alice, "bot")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.id.Authenticate(bg, token); err != nil {
				t.Fatal(err)
			}
			if _, err := e.id.DisableUser(bg, owner, alice.ID); err != nil {
				t.Fatal(err)
			}
			for _, b := range []string{res.Token, token} {
				_, err := e.id.Authenticate(bg, b)
				wantCode(t, err, kernel.CodeUnauthenticated)
			}
		})

		t.Run("a status change alone stops a credential", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			e.person(t, owner, "alice")
			res, _ := e.id.Login(bg, "alice", "alice-password", "")
			storage.ExecInTest(t, e.db, `UPDATE principals SET status = 'disabled' WHERE handle_key = 'alice'`)
			_, err := e.id.Authenticate(bg, res.Token)
			wantCode(t, err, kernel.CodeUnauthenticated)
		})
	})
}

func TestTokens(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("a token is shown once, stored hashed and authenticates as its holder", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			tok, value, err := e.id.CreateToken(bg, owner, "  ci bot ")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(value, "bothy_") || len(value) != len("bothy_")+43 || tok.Name != "ci bot" || tok.TokenHash != "" {
				t.Fatalf("%+v %q", tok, value)
			}
			a, err := e.id.Authenticate(bg, value)
			if err != nil {
				t.Fatal(err)
			}
			if a.ID != owner.ID || a.TokenID != tok.ID || !a.SessionID.IsZero() || !a.IsOwner {
				t.Fatalf("actor %+v", a)
			}
			list, err := e.id.ListTokens(bg, owner)
			if err != nil || len(list) != 1 || list[0].ID != tok.ID || list[0].TokenHash != "" {
				t.Fatalf("%+v %v", list, err)
			}
		})

		t.Run("records the last use at most once per interval", func(t *testing.T) {
			e := newIDEnv(t, eng, kerneltest.With(identity.DefaultConfig(), func(c *identity.Config) { c.TokenTouchInterval = time.Minute }))
			owner := e.owner(t)
			_, value, _ := e.id.CreateToken(bg, owner, "bot")
			lastUsed := func() *time.Time {
				list, _ := e.id.ListTokens(bg, owner)
				return list[0].LastUsedAt
			}
			if lastUsed() != nil {
				t.Fatal("used before use")
			}
			e.id.Authenticate(bg, value)
			first := lastUsed()
			if first == nil || !first.Equal(e.clock.Now()) {
				t.Fatalf("last used %v", first)
			}
			e.clock.Advance(30 * time.Second)
			e.id.Authenticate(bg, value)
			if !lastUsed().Equal(*first) {
				t.Fatal("touched within the interval")
			}
			e.clock.Advance(31 * time.Second)
			e.id.Authenticate(bg, value)
			if !lastUsed().Equal(e.clock.Now()) {
				t.Fatal("not touched after the interval")
			}
		})

		t.Run("a revoked token stops working and another's token is not found", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			alice := e.person(t, owner, "alice")
			tok, value, _ := e.id.CreateToken(bg, alice, "bot")
			err := e.id.RevokeToken(bg, owner, tok.ID)
			wantCode(t, err, kernel.CodeNotFound)
			err = e.id.RevokeToken(bg, alice, kernel.NewID())
			wantCode(t, err, kernel.CodeNotFound)
			if err := e.id.RevokeToken(bg, alice, tok.ID); err != nil {
				t.Fatal(err)
			}
			evs := e.events(t)
			if last := evs[len(evs)-1]; last.Type != identity.EvTokenRevoked.Name || last.Scope != (kernel.Scope{PrincipalID: alice.ID}) || last.SubjectID != tok.ID {
				t.Fatalf("event %+v", last)
			}
			_, err = e.id.Authenticate(bg, value)
			wantCode(t, err, kernel.CodeUnauthenticated)
			err = e.id.RevokeToken(bg, alice, tok.ID)
			wantCode(t, err, kernel.CodeNotFound)
			if list, _ := e.id.ListTokens(bg, alice); len(list) != 0 {
				t.Fatalf("revoked token listed: %+v", list)
			}
		})

		t.Run("a token name is required and bounded", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			for _, n := range []string{"", "  ", strings.Repeat("n", 65), "a\nb"} {
				_, _, err := e.id.CreateToken(bg, owner, n)
				if ke := wantCode(t, err, kernel.CodeValidation); ke.Field != "name" {
					t.Fatalf("field %q", ke.Field)
				}
			}
		})

		t.Run("the anonymous actor has no tokens", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			_, _, err := e.id.CreateToken(bg, kernel.Anonymous, "bot")
			wantCode(t, err, kernel.CodeUnauthenticated)
			err = e.id.RevokeToken(bg, kernel.Anonymous, kernel.NewID())
			wantCode(t, err, kernel.CodeUnauthenticated)
		})
	})
}

func TestUsers(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("an owner creates people and user.created is appended", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			ctx, log := kernel.WithCheckLog(bg)
			u, err := e.id.CreateUser(ctx, owner, "Alice", " Alice A. ", "alice-password")
			if err != nil {
				t.Fatal(err)
			}
			if !log.Checked(identity.ActUserCreate) || u.IsOwner || u.DisplayName != "Alice A." || u.Handle != "Alice" {
				t.Fatalf("%+v", u)
			}
			evs := e.events(t)
			last := evs[len(evs)-1]
			if last.Type != identity.EvUserCreated.Name || last.SubjectID != u.ID || last.ActorID != owner.ID {
				t.Fatalf("event %+v", last)
			}
			e.login(t, "alice", "alice-password")
		})

		t.Run("handles are unique without regard to case", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			_, err := e.id.CreateUser(bg, owner, "OLGA", "Another Olga", "some-password")
			if ke := wantCode(t, err, kernel.CodeConflict); ke.Field != "handle" {
				t.Fatalf("field %q", ke.Field)
			}
		})

		t.Run("a person who is no owner may not create people", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			alice := e.person(t, owner, "alice")
			_, err := e.id.CreateUser(bg, alice, "bob", "Bob", "bob-password")
			wantCode(t, err, kernel.CodeForbidden)
			_, err = e.id.CreateUser(bg, kernel.Anonymous, "bob", "Bob", "bob-password")
			wantCode(t, err, kernel.CodeUnauthenticated)
		})

		t.Run("any person lists people page by page and reads itself", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			alice := e.person(t, owner, "alice")
			e.person(t, owner, "bob")
			page1, err := e.id.ListUsers(bg, alice, "", 2)
			if err != nil || len(page1) != 2 || page1[0].Handle != "olga" || page1[1].Handle != "alice" {
				t.Fatalf("%+v %v", page1, err)
			}
			page2, err := e.id.ListUsers(bg, alice, page1[1].ID, 2)
			if err != nil || len(page2) != 1 || page2[0].Handle != "bob" {
				t.Fatalf("%+v %v", page2, err)
			}
			me, err := e.id.Me(bg, alice)
			if err != nil || me.ID != alice.ID || me.DisplayName != "Alice" {
				t.Fatalf("%+v %v", me, err)
			}
			_, err = e.id.ListUsers(bg, kernel.Anonymous, "", 0)
			wantCode(t, err, kernel.CodeUnauthenticated)
		})
	})
}

func TestDisableUser(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("disables a person, revokes its credentials and tells the subscribers", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			alice := e.person(t, owner, "alice")
			ctx, log := kernel.WithCheckLog(bg)
			u, err := e.id.DisableUser(ctx, owner, alice.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !log.Checked(identity.ActUserDisable) || u.Status != identity.StatusDisabled || u.DisabledAt == nil {
				t.Fatalf("%+v", u)
			}
			if len(e.disabled) != 1 || e.disabled[0] != alice.ID {
				t.Fatalf("subscriber saw %v", e.disabled)
			}
			evs := e.events(t)
			last := evs[len(evs)-1]
			var p map[string]any
			_ = json.Unmarshal(last.Payload, &p)
			if last.Type != identity.EvUserUpdated.Name || last.SubjectID != alice.ID || p["status"] != "disabled" {
				t.Fatalf("event %+v %s", last, last.Payload)
			}
			// Disabling again changes nothing.
			n := len(e.events(t))
			if _, err := e.id.DisableUser(bg, owner, alice.ID); err != nil || len(e.events(t)) != n {
				t.Fatalf("second disable: %v, %d events", err, len(e.events(t))-n)
			}
		})

		t.Run("the last active owner cannot be disabled, a second one can", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			_, err := e.id.DisableUser(bg, owner, owner.ID)
			wantCode(t, err, identity.CodeLastOwner)
			e.person(t, owner, "alice")
			storage.ExecInTest(t, e.db, `UPDATE principals SET is_owner = 1 WHERE handle_key = 'alice'`)
			alice := e.login(t, "alice", "alice-password")
			if _, err := e.id.DisableUser(bg, alice, owner.ID); err != nil {
				t.Fatal(err)
			}
			_, err = e.id.DisableUser(bg, alice, alice.ID)
			wantCode(t, err, identity.CodeLastOwner)
		})

		t.Run("a person who is no owner may not disable, an unknown id is not found", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			alice := e.person(t, owner, "alice")
			_, err := e.id.DisableUser(bg, alice, owner.ID)
			wantCode(t, err, kernel.CodeForbidden)
			_, err = e.id.DisableUser(bg, owner, kernel.NewID())
			wantCode(t, err, kernel.CodeNotFound)
			_, err = e.id.DisableUser(bg, kernel.Anonymous, owner.ID)
			wantCode(t, err, kernel.CodeUnauthenticated)
		})

		t.Run("a vetoing subscriber rolls the disable back", func(t *testing.T) {
			db := eng.Open(t, storage.Options{})
			store := storage.NewIdentityStore(db)
			az := storage.NewAuthzStore(db)
			bus := kernel.NewTxBus()
			kernel.Subscribe(bus, "veto", func(ctx context.Context, ev identity.UserDisabled) error {
				return kernel.Errorf(kernel.CodeConflict, "vetoed")
			})
			bus.Seal()
			svc := identity.New(identity.Deps{Store: store, UoW: db, Events: db, Authz: authz.New(authz.Deps{Store: az, Structure: az, UoW: db, Events: db}), Hasher: &fakeHasher{}, Bus: bus}, identity.DefaultConfig())
			o, _ := svc.BootstrapOwner(bg, "olga", "Olga", "owner-password")
			owner := kernel.Actor{ID: o.ID, Kind: kernel.KindPerson, IsOwner: true}
			u, _ := svc.CreateUser(bg, owner, "alice", "Alice", "alice-password")
			if _, err := svc.DisableUser(bg, owner, u.ID); err == nil {
				t.Fatal("the veto was ignored")
			}
			if got, _ := store.Principal(bg, u.ID); got.Status != identity.StatusActive {
				t.Fatal("the disable committed despite the veto")
			}
		})
	})
}

// BenchmarkAuthenticate measures the per-request read of a session and of an API token.
func BenchmarkAuthenticate(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, eng storetest.Engine) {
		db := eng.Open(b, storage.Options{})
		az := storage.NewAuthzStore(db)
		svc := identity.New(identity.Deps{Store: storage.NewIdentityStore(db), UoW: db, Events: db,
			Authz: authz.New(authz.Deps{Store: az, Structure: az, UoW: db, Events: db}), Hasher: &fakeHasher{}}, identity.DefaultConfig())
		if _, err := svc.BootstrapOwner(bg, "olga", "Olga", "owner-password"); err != nil {
			b.Fatal(err)
		}
		res, err := svc.Login(bg, "olga", "owner-password", "")
		if err != nil {
			b.Fatal(err)
		}
		a, _ := svc.Authenticate(bg, res.Token)
		_, token, _ := svc.CreateToken(bg, a, "bench")
		for name, bearer := range map[string]string{"session": res.Token, "api token": token} {
			b.Run(name, func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := svc.Authenticate(bg, bearer); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	})
}
