package runs_test

import (
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// A token this node verified before decides exactly as a verification would: the times, the run,
// the agent and the signing key's window are checked again at every use.
func TestRememberedTokens(t *testing.T) {
	echoActor := kernel.Actor{ID: echo, Kind: kernel.KindAgent}

	t.Run("a token checked again is still refused for another run or agent", func(t *testing.T) {
		f := mustRuns(t)
		a := mustKeyNode(t, f, &fakeKeys{})
		tok := a.issue(t)
		for range 2 {
			if err := a.check(tok); err != nil {
				t.Fatal(err)
			}
		}
		_, err := a.svc.CheckToken(bg, echoActor, tok, kernel.NewID())
		wantInvalid(t, err)
		_, err = a.svc.CheckToken(bg, kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindAgent}, tok, tokenRun.ID)
		wantInvalid(t, err)
	})

	t.Run("a remembered token expires", func(t *testing.T) {
		f := mustRuns(t)
		a := mustKeyNode(t, f, &fakeKeys{})
		tok := a.issue(t)
		if err := a.check(tok); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(testTokenTTL)
		if err := a.check(tok); kernel.CodeOf(err) != runs.CodeInvocationTokenExpired {
			t.Fatalf("err %v, want invocation_token_expired", err)
		}
	})

	t.Run("a remembered token is refused once its key left its window", func(t *testing.T) {
		f := mustRuns(t)
		keys := &fakeKeys{}
		a := mustKeyNode(t, f, keys)
		a.issue(t)
		f.clock.Advance(testRotation - time.Minute)
		// A token that outlives its key's window: it claims a long life, signed by the key.
		priv, kid, err := a.keys.Signer(bg)
		if err != nil {
			t.Fatal(err)
		}
		long := runs.NewInvocationClaims("http://test", tokenRun.Summary, f.clock.Now(), 24*time.Hour)
		tok, err := runs.Issue(priv, kid, long)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.check(tok); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Minute)
		if r := a.rotate(t); !r.Rotated {
			t.Fatalf("rotation %+v", r)
		}
		if err := a.check(tok); err != nil {
			t.Fatalf("within the retired key's window: %v", err)
		}
		f.clock.Advance(a.keys.VerifyWindow())
		wantInvalid(t, a.check(tok))
	})
}
