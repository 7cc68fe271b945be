package storage_test

import (
	"testing"

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/storetest"
)

// The owner's people actions of the console and the API, on both engines with the real authz.
func TestEnableAndResetPassword(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("a person enabled again signs in, with the sessions of before still ended", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			e.person(t, owner, "alice")
			res, _ := e.id.Login(bg, "alice", "alice-password", "")
			alice, _ := e.id.Authenticate(bg, res.Token)
			if _, err := e.id.DisableUser(bg, owner, alice.ID); err != nil {
				t.Fatal(err)
			}
			_, err := e.id.Login(bg, "alice", "alice-password", "")
			wantCode(t, err, kernel.CodeUnauthenticated)
			u, err := e.id.EnableUser(bg, owner, alice.ID)
			if err != nil || u.Status != identity.StatusActive {
				t.Fatalf("%+v %v", u, err)
			}
			_, err = e.id.Authenticate(bg, res.Token)
			wantCode(t, err, kernel.CodeUnauthenticated)
			e.login(t, "alice", "alice-password")
			evs := e.events(t)
			if last := evs[len(evs)-1]; last.Type != identity.EvUserUpdated.Name || last.SubjectID != alice.ID {
				t.Fatalf("last event %+v", last)
			}
		})

		t.Run("only an owner enables or resets", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			bob := e.person(t, owner, "bob")
			alice := e.person(t, owner, "alice")
			_, err := e.id.EnableUser(bg, bob, alice.ID)
			wantCode(t, err, kernel.CodeForbidden)
			_, err = e.id.ResetPassword(bg, bob, alice.ID, "bob knows best")
			wantCode(t, err, kernel.CodeForbidden)
		})

		t.Run("a new password works, the old one does not, and the person's sessions end", func(t *testing.T) {
			e := newIDEnv(t, eng, identity.DefaultConfig())
			owner := e.owner(t)
			e.person(t, owner, "alice")
			res, _ := e.id.Login(bg, "alice", "alice-password", "")
			start := e.db.Head()
			u, err := e.id.ResetPassword(bg, owner, u0(t, e, "alice"), "a brand new password")
			if err != nil || u.Handle != "alice" {
				t.Fatalf("%+v %v", u, err)
			}
			_, err = e.id.Authenticate(bg, res.Token)
			wantCode(t, err, kernel.CodeUnauthenticated)
			_, err = e.id.Login(bg, "alice", "alice-password", "")
			wantCode(t, err, kernel.CodeUnauthenticated)
			e.login(t, "alice", "a brand new password")
			var revoked int
			for _, ev := range e.events(t) {
				if ev.Seq > start && ev.Type == identity.EvSessionRevoked.Name && ev.Scope.PrincipalID == u.ID {
					revoked++
				}
			}
			if revoked != 2 { // the test's own login of alice and res
				t.Fatalf("%d session.revoked, want 2", revoked)
			}
			e.login(t, "olga", "owner-password") // the owner's sessions are untouched
		})
	})
}

// u0 is the id of the person with handle.
func u0(t *testing.T, e *idEnv, handle string) kernel.ID {
	t.Helper()
	u, _, err := e.store.LoginCredential(bg, identity.HandleKey(handle))
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}
