package identity

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// credStore answers SessionCredential from the people env's sessions by token digest, and counts
// its reads; during, when set, runs inside a read (a revocation that commits meanwhile).
type credStore struct {
	*memStore
	tokens map[string]kernel.ID // digest → session id
	reads  int
	during func()
}

func (s *credStore) SessionCredential(_ context.Context, hash string, now time.Time) (Credential, error) {
	s.reads++
	if s.during != nil {
		s.during()
	}
	id, ok := s.tokens[hash]
	ss := s.sessions[id]
	if !ok || ss == nil || ss.revoked || !now.Before(ss.expires) || s.users[ss.principal].Status != StatusActive {
		return Credential{}, kernel.ErrNotFound
	}
	u := s.users[ss.principal]
	exp := ss.expires
	return Credential{Actor: kernel.Actor{ID: u.ID, Kind: u.Kind, Handle: u.Handle, IsOwner: u.IsOwner, SessionID: id}, ExpiresAt: &exp}, nil
}

type credEnv struct {
	*peopleEnv
	store *credStore
}

func newCredEnv(t *testing.T, ttl time.Duration) *credEnv {
	t.Helper()
	e := newPeopleEnv(t)
	st := &credStore{memStore: e.store, tokens: map[string]kernel.ID{}}
	cfg := DefaultConfig()
	cfg.CredentialCacheTTL = ttl
	e.az.Fn = nil
	e.svc = New(Deps{Store: st, UoW: e.tx, Events: e.tx, Authz: e.az, Hasher: e.hasher, Clock: e.clock}, cfg)
	return &credEnv{peopleEnv: e, store: st}
}

// login makes a session of alice lasting ttl and returns its bearer token.
func (e *credEnv) login(ttl time.Duration) string {
	tok := randomToken(tokenBytes)
	e.store.tokens[digest(tok)] = e.session(e.alice.ID, ttl)
	return tok
}

// committed hands the events the units appended since from to the service, as the writer's
// OnCommit does, and returns how many there were.
func (e *credEnv) committed(from int) int {
	evs := e.tx.Events()[from:]
	logged := make([]kernel.LoggedEvent, len(evs))
	for i, ev := range evs {
		logged[i] = kernel.LoggedEvent{Type: ev.Type, Scope: ev.Scope, SubjectID: ev.SubjectID, ActorID: ev.ActorID}
	}
	e.svc.ObserveCommitted(logged)
	return len(evs)
}

func (e *credEnv) authenticate(t *testing.T, tok string) kernel.Code {
	t.Helper()
	_, err := e.svc.Authenticate(context.Background(), tok)
	return kernel.CodeOf(err)
}

func TestCredentialCache(t *testing.T) {
	ctx := context.Background()

	t.Run("a session is read once, then served from memory until the cache's time ends", func(t *testing.T) {
		e := newCredEnv(t, 5*time.Second)
		tok := e.login(time.Hour)
		for range 3 {
			if code := e.authenticate(t, tok); code != (kernel.Code{}) {
				t.Fatal(code)
			}
		}
		if e.store.reads != 1 {
			t.Fatalf("%d reads for three requests, want 1", e.store.reads)
		}
		e.clock.Advance(5 * time.Second)
		e.authenticate(t, tok)
		if e.store.reads != 2 {
			t.Fatalf("%d reads after the cache's time, want 2", e.store.reads)
		}
	})

	t.Run("a session is never served past its expiry", func(t *testing.T) {
		e := newCredEnv(t, time.Minute)
		tok := e.login(2 * time.Second)
		if code := e.authenticate(t, tok); code != (kernel.Code{}) {
			t.Fatal(code)
		}
		e.clock.Advance(2 * time.Second)
		if code := e.authenticate(t, tok); code != kernel.CodeUnauthenticated {
			t.Fatalf("an expired session: %v", code)
		}
	})

	t.Run("logging out ends the session at the next request, from the committed session.revoked", func(t *testing.T) {
		e := newCredEnv(t, time.Minute)
		tok := e.login(time.Hour)
		actor, err := e.svc.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		from := len(e.tx.Events())
		if err := e.svc.Logout(ctx, actor); err != nil {
			t.Fatal(err)
		}
		if n := e.committed(from); n != 1 {
			t.Fatalf("logout appended %d events", n)
		}
		if code := e.authenticate(t, tok); code != kernel.CodeUnauthenticated {
			t.Fatalf("after logout: %v", code)
		}
	})

	t.Run("disabling a person drops their sessions, by user.updated and by ForgetPrincipal", func(t *testing.T) {
		e := newCredEnv(t, time.Minute)
		tok := e.login(time.Hour)
		e.authenticate(t, tok)
		from := len(e.tx.Events())
		if _, err := e.svc.DisableUser(ctx, e.owner, e.alice.ID); err != nil {
			t.Fatal(err)
		}
		e.committed(from)
		if code := e.authenticate(t, tok); code != kernel.CodeUnauthenticated {
			t.Fatalf("after user.updated: %v", code)
		}

		// An agent's disabling comes from its own module: the permission cache tells identity.
		e = newCredEnv(t, time.Minute)
		tok = e.login(time.Hour)
		e.authenticate(t, tok)
		e.store.users[e.alice.ID] = User{ID: e.alice.ID, Kind: kernel.KindPerson, Handle: "alice", Status: StatusDisabled}
		e.svc.ForgetPrincipal(e.alice.ID)
		if code := e.authenticate(t, tok); code != kernel.CodeUnauthenticated {
			t.Fatalf("after ForgetPrincipal: %v", code)
		}
	})

	t.Run("a read that a revocation overtook does not put the credential back", func(t *testing.T) {
		e := newCredEnv(t, time.Minute)
		tok := e.login(time.Hour)
		e.store.during = func() { e.svc.ForgetPrincipal(e.alice.ID) } // it read before the revoke's COMMIT
		if code := e.authenticate(t, tok); code != (kernel.Code{}) {
			t.Fatal(code)
		}
		e.store.during = nil
		e.authenticate(t, tok)
		if e.store.reads != 2 {
			t.Fatalf("%d reads: the overtaken read was cached", e.store.reads)
		}
	})

	t.Run("a time of 0 turns the cache off", func(t *testing.T) {
		e := newCredEnv(t, 0)
		tok := e.login(time.Hour)
		e.authenticate(t, tok)
		e.authenticate(t, tok)
		if e.store.reads != 2 {
			t.Fatalf("%d reads, want one per request", e.store.reads)
		}
	})
}
