package identity

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
)

// memStore is an in-memory identity.Store with just enough behaviour for the people use cases:
// principals, passwords and sessions. The token methods are not used here and fail loudly.
type memStore struct {
	Store // nil: a method the test does not expect panics

	users     map[kernel.ID]User
	passwords map[kernel.ID]string
	sessions  map[kernel.ID]*memSession
}

type memSession struct {
	principal kernel.ID
	expires   time.Time
	revoked   bool
}

var _ Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{users: map[kernel.ID]User{}, passwords: map[kernel.ID]string{}, sessions: map[kernel.ID]*memSession{}}
}

func (m *memStore) Principal(_ context.Context, id kernel.ID) (User, error) {
	u, ok := m.users[id]
	if !ok {
		return User{}, kernel.ErrNotFound
	}
	return u, nil
}

func (m *memStore) ActiveOwners(context.Context) (int, error) {
	n := 0
	for _, u := range m.users {
		if u.IsOwner && u.Status == StatusActive {
			n++
		}
	}
	return n, nil
}

func (m *memStore) setStatus(id kernel.ID, status string, at time.Time) error {
	u, ok := m.users[id]
	if !ok {
		return kernel.ErrNotFound
	}
	u.Status, u.UpdatedAt = status, at
	u.DisabledAt = nil
	if status == StatusDisabled {
		u.DisabledAt = &at
	}
	m.users[id] = u
	return nil
}

func (m *memStore) DisablePrincipal(_ context.Context, id kernel.ID, at time.Time) error {
	return m.setStatus(id, StatusDisabled, at)
}

func (m *memStore) EnablePrincipal(_ context.Context, id kernel.ID, at time.Time) error {
	return m.setStatus(id, StatusActive, at)
}

func (m *memStore) SetPassword(_ context.Context, id kernel.ID, hash string, _ time.Time) error {
	m.passwords[id] = hash
	return nil
}

func (m *memStore) LiveSessions(_ context.Context, id kernel.ID, now time.Time) ([]kernel.ID, error) {
	var out []kernel.ID
	for sid, s := range m.sessions {
		if s.principal == id && !s.revoked && s.expires.After(now) {
			out = append(out, sid)
		}
	}
	return out, nil
}

func (m *memStore) RevokeSessions(_ context.Context, id kernel.ID, _ time.Time) error {
	for _, s := range m.sessions {
		if s.principal == id {
			s.revoked = true
		}
	}
	return nil
}

func (m *memStore) RevokeTokens(context.Context, kernel.ID, time.Time) error { return nil }

// plainHasher "hashes" by prefixing, and counts its calls: the tests check that a refused
// caller never makes the service hash.
type plainHasher struct{ hashes int }

func (h *plainHasher) Hash(pw string) (string, error)       { h.hashes++; return "plain:" + pw, nil }
func (h *plainHasher) Verify(hash, pw string) (bool, error) { return hash == "plain:"+pw, nil }
func (h *plainHasher) NeedsRehash(string) bool              { return false }

type peopleEnv struct {
	store  *memStore
	tx     *kerneltest.Tx
	az     *kerneltest.Authz
	hasher *plainHasher
	clock  *kernel.ManualClock
	svc    *Service
	owner  kernel.Actor
	alice  User
}

// newPeopleEnv holds an owner and a disabled-able person, alice; only owners are allowed by
// the fake authorizer, as authz's rules decide the owner actions.
func newPeopleEnv(t *testing.T) *peopleEnv {
	t.Helper()
	e := &peopleEnv{store: newMemStore(), tx: &kerneltest.Tx{}, hasher: &plainHasher{},
		clock: kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	e.az = &kerneltest.Authz{Fn: func(actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
		if !actor.IsOwner {
			return &kernel.Error{Code: kernel.CodeForbidden, Message: "not allowed"}
		}
		return nil
	}}
	e.svc = New(Deps{Store: e.store, UoW: e.tx, Events: e.tx, Authz: e.az, Hasher: e.hasher, Clock: e.clock}, DefaultConfig())
	now := e.clock.Now()
	o := User{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "olga", DisplayName: "Olga", Status: StatusActive, IsOwner: true, CreatedAt: now, UpdatedAt: now}
	e.alice = User{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "alice", DisplayName: "Alice", Status: StatusActive, CreatedAt: now, UpdatedAt: now}
	e.store.users[o.ID], e.store.users[e.alice.ID] = o, e.alice
	e.owner = kernel.Actor{ID: o.ID, Kind: kernel.KindPerson, Handle: "olga", IsOwner: true}
	return e
}

func (e *peopleEnv) session(principal kernel.ID, ttl time.Duration) kernel.ID {
	id := kernel.NewID()
	e.store.sessions[id] = &memSession{principal: principal, expires: e.clock.Now().Add(ttl)}
	return id
}

func TestEnableUser(t *testing.T) {
	ctx := context.Background()

	t.Run("enables a disabled person and appends user.updated with the new status", func(t *testing.T) {
		e := newPeopleEnv(t)
		if _, err := e.svc.DisableUser(ctx, e.owner, e.alice.ID); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		u, err := e.svc.EnableUser(ctx, e.owner, e.alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Status != StatusActive || u.DisabledAt != nil || !u.UpdatedAt.Equal(e.clock.Now()) {
			t.Fatalf("answer %+v", u)
		}
		if got := e.store.users[e.alice.ID]; got.Status != StatusActive || got.DisabledAt != nil {
			t.Fatalf("stored %+v", got)
		}
		evs := e.tx.Events()
		last := evs[len(evs)-1]
		if last.Type != EvUserUpdated.Name || last.SubjectID != e.alice.ID || last.ActorID != e.owner.ID ||
			last.Payload.(User).Status != StatusActive {
			t.Fatalf("event %+v", last)
		}
		if c := e.az.Last(); c.Action != ActUserEnable || c.Resource.ID != e.alice.ID {
			t.Fatalf("decided %+v", c)
		}
	})

	t.Run("enabling an active person changes nothing and appends nothing", func(t *testing.T) {
		e := newPeopleEnv(t)
		u, err := e.svc.EnableUser(ctx, e.owner, e.alice.ID)
		if err != nil || u.Status != StatusActive || len(e.tx.Events()) != 0 {
			t.Fatalf("%+v %v, %d events", u, err, len(e.tx.Events()))
		}
	})

	t.Run("a person who is not an owner is refused and nothing changes", func(t *testing.T) {
		e := newPeopleEnv(t)
		_ = e.store.setStatus(e.alice.ID, StatusDisabled, e.clock.Now())
		bob := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "bob"}
		_, err := e.svc.EnableUser(ctx, bob, e.alice.ID)
		if kernel.CodeOf(err) != kernel.CodeForbidden || e.store.users[e.alice.ID].Status != StatusDisabled {
			t.Fatalf("%v, alice %s", err, e.store.users[e.alice.ID].Status)
		}
	})

	t.Run("an unknown id and an agent are not found; the anonymous actor is unauthenticated", func(t *testing.T) {
		e := newPeopleEnv(t)
		agent := User{ID: kernel.NewID(), Kind: kernel.KindAgent, Handle: "bot", Status: StatusDisabled}
		e.store.users[agent.ID] = agent
		for _, id := range []kernel.ID{kernel.NewID(), agent.ID} {
			if _, err := e.svc.EnableUser(ctx, e.owner, id); kernel.CodeOf(err) != kernel.CodeNotFound {
				t.Fatalf("%s: %v", id, err)
			}
		}
		e.az.Fn = func(actor kernel.Actor, _ kernel.Action, _ kernel.Resource) error {
			if !actor.Authenticated() {
				return &kernel.Error{Code: kernel.CodeUnauthenticated, Message: "authentication required"}
			}
			return nil
		}
		if _, err := e.svc.EnableUser(ctx, kernel.Anonymous, e.alice.ID); kernel.CodeOf(err) != kernel.CodeUnauthenticated {
			t.Fatal(err)
		}
	})
}

func TestResetPassword(t *testing.T) {
	ctx := context.Background()

	t.Run("stores the new hash and ends every live session of the person, each with session.revoked", func(t *testing.T) {
		e := newPeopleEnv(t)
		s1, s2 := e.session(e.alice.ID, time.Hour), e.session(e.alice.ID, time.Hour)
		expired := e.session(e.alice.ID, -time.Minute)
		ownerSession := e.session(e.owner.ID, time.Hour)
		u, err := e.svc.ResetPassword(ctx, e.owner, e.alice.ID, "a new long password")
		if err != nil {
			t.Fatal(err)
		}
		if u.ID != e.alice.ID || e.store.passwords[e.alice.ID] != "plain:a new long password" {
			t.Fatalf("%+v, stored %q", u, e.store.passwords[e.alice.ID])
		}
		for _, sid := range []kernel.ID{s1, s2, expired} {
			if !e.store.sessions[sid].revoked {
				t.Errorf("session %s still live", sid)
			}
		}
		if e.store.sessions[ownerSession].revoked {
			t.Error("the owner's session ended too")
		}
		revoked := map[kernel.ID]bool{}
		for _, ev := range e.tx.Events() {
			if ev.Type != EvSessionRevoked.Name || ev.Scope.PrincipalID != e.alice.ID {
				t.Fatalf("event %+v", ev)
			}
			revoked[ev.SubjectID] = true
		}
		if len(revoked) != 2 || !revoked[s1] || !revoked[s2] {
			t.Fatalf("session.revoked for %v, want the two live sessions", revoked)
		}
		if c := e.az.Last(); c.Action != ActUserPasswordReset {
			t.Fatalf("decided %+v", c)
		}
	})

	t.Run("a refused caller or a bad password costs no hash and changes nothing", func(t *testing.T) {
		e := newPeopleEnv(t)
		bob := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "bob"}
		if _, err := e.svc.ResetPassword(ctx, bob, e.alice.ID, "a new long password"); kernel.CodeOf(err) != kernel.CodeForbidden {
			t.Fatal(err)
		}
		for _, pw := range []string{"short", strings.Repeat("p", MaxPasswordBytes+1)} {
			_, err := e.svc.ResetPassword(ctx, e.owner, e.alice.ID, pw)
			if ke, ok := err.(*kernel.Error); !ok || ke.Code != kernel.CodeValidation || ke.Field != "password" {
				t.Fatalf("%d bytes: %v", len(pw), err)
			}
		}
		if _, err := e.svc.ResetPassword(ctx, e.owner, kernel.NewID(), "a new long password"); kernel.CodeOf(err) != kernel.CodeNotFound {
			t.Fatal(err)
		}
		if e.hasher.hashes != 0 || len(e.store.passwords) != 0 || len(e.tx.Events()) != 0 {
			t.Fatalf("%d hashes, %d passwords, %d events", e.hasher.hashes, len(e.store.passwords), len(e.tx.Events()))
		}
	})
}

func TestDisableUserKeepsTheLastOwner(t *testing.T) {
	e := newPeopleEnv(t)
	_, err := e.svc.DisableUser(context.Background(), e.owner, e.owner.ID)
	if kernel.CodeOf(err) != CodeLastOwner || e.store.users[e.owner.ID].Status != StatusActive {
		t.Fatalf("%v", err)
	}
}

func (m *memStore) RevokeSession(_ context.Context, id kernel.ID, _ time.Time) error {
	if s := m.sessions[id]; s != nil {
		s.revoked = true
	}
	return nil
}

func (m *memStore) LoginCredential(_ context.Context, key string) (User, string, error) {
	for id, u := range m.users {
		if HandleKey(u.Handle) == key {
			return u, m.passwords[id], nil
		}
	}
	return User{}, "", kernel.ErrNotFound
}

func TestChangePassword(t *testing.T) {
	ctx := context.Background()
	env := func(t *testing.T) (*peopleEnv, kernel.Actor, kernel.ID, kernel.ID) {
		e := newPeopleEnv(t)
		e.az.Fn = nil // every person may change their own
		e.store.passwords[e.alice.ID] = "plain:the old password"
		here, other := e.session(e.alice.ID, time.Hour), e.session(e.alice.ID, time.Hour)
		return e, kernel.Actor{ID: e.alice.ID, Kind: kernel.KindPerson, Handle: "alice", SessionID: here}, here, other
	}

	t.Run("with the current password it stores the new one and ends the other sessions only", func(t *testing.T) {
		e, alice, here, other := env(t)
		if err := e.svc.ChangePassword(ctx, alice, "the old password", "a brand new password"); err != nil {
			t.Fatal(err)
		}
		if e.store.passwords[e.alice.ID] != "plain:a brand new password" {
			t.Fatalf("stored %q", e.store.passwords[e.alice.ID])
		}
		if e.store.sessions[here].revoked || !e.store.sessions[other].revoked {
			t.Fatalf("this session revoked %v, the other %v", e.store.sessions[here].revoked, e.store.sessions[other].revoked)
		}
		evs := e.tx.Events()
		if len(evs) != 1 || evs[0].Type != EvSessionRevoked.Name || evs[0].SubjectID != other {
			t.Fatalf("events %+v", evs)
		}
		if c := e.az.Last(); c.Action != ActSelfPassword || c.Resource.ID != e.alice.ID {
			t.Fatalf("decided %+v", c)
		}
	})

	t.Run("a wrong current password changes nothing, and too many are limited", func(t *testing.T) {
		e, alice, here, _ := env(t)
		err := e.svc.ChangePassword(ctx, alice, "not it", "a brand new password")
		if code, field := kernel.CodeOf(err), fieldOf(err); code != kernel.CodeValidation || field != "current_password" {
			t.Fatalf("err %v", err)
		}
		if e.store.passwords[e.alice.ID] != "plain:the old password" || e.store.sessions[here].revoked || len(e.tx.Events()) != 0 {
			t.Fatal("a refused change changed something")
		}
		limited := false
		for range 20 {
			if kernel.IsCode(e.svc.ChangePassword(ctx, alice, "not it", "a brand new password"), kernel.CodeRateLimited) {
				limited = true
				break
			}
		}
		if !limited {
			t.Fatal("wrong current passwords were never limited")
		}
	})

	t.Run("a new password that is too short is refused before anything is checked", func(t *testing.T) {
		e, alice, _, _ := env(t)
		if err := e.svc.ChangePassword(ctx, alice, "the old password", "short"); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("err %v", err)
		}
		if e.hasher.hashes != 0 {
			t.Fatal("a refused password was hashed")
		}
	})
}

func fieldOf(err error) string {
	var ke *kernel.Error
	if errors.As(err, &ke) {
		return ke.Field
	}
	return ""
}
