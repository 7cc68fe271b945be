package runs_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/runs"
)

// fakeKeys is the signing key store in memory, with the store's rules: one current key per
// purpose, a rotation conditional on the key it replaces.
type fakeKeys struct {
	mu    sync.Mutex
	keys  []runs.SigningKey
	reads int
}

var _ runs.SigningKeys = (*fakeKeys)(nil)

func (f *fakeKeys) currentLocked(purpose string) (int, bool) {
	for i, k := range f.keys {
		if k.Purpose == purpose && k.RetiredAt == nil {
			return i, true
		}
	}
	return 0, false
}

func (f *fakeKeys) EnsureSigningKey(ctx context.Context, c runs.SigningKey) (runs.SigningKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i, ok := f.currentLocked(c.Purpose); ok {
		return f.keys[i], nil
	}
	f.keys = append(f.keys, c)
	return c, nil
}

func (f *fakeKeys) RotateSigningKey(ctx context.Context, current string, c runs.SigningKey) (runs.SigningKey, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, ok := f.currentLocked(c.Purpose)
	if !ok {
		return runs.SigningKey{}, false, kernel.ErrNotFound
	}
	if f.keys[i].KID != current {
		return f.keys[i], false, nil
	}
	at := c.CreatedAt
	f.keys[i].RetiredAt = &at
	f.keys = append(f.keys, c)
	return c, true, nil
}

func (f *fakeKeys) SigningKeys(ctx context.Context, purpose string, since time.Time) ([]runs.SigningKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	var out []runs.SigningKey
	for _, k := range f.keys {
		if k.Purpose == purpose && (k.RetiredAt == nil || !k.RetiredAt.Before(since)) {
			out = append(out, k)
		}
	}
	return out, nil
}

func (f *fakeKeys) DeleteRetiredSigningKeys(ctx context.Context, purpose string, cutoff time.Time) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	kept := f.keys[:0]
	for _, k := range f.keys {
		if k.Purpose == purpose && k.RetiredAt != nil && k.RetiredAt.Before(cutoff) {
			n++
			continue
		}
		kept = append(kept, k)
	}
	f.keys = kept
	return n, nil
}

// kidOf is the key id in a token's header.
func kidOf(t *testing.T, token string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(raw, &h); err != nil || h.Kid == "" {
		t.Fatalf("header %s: %v", raw, err)
	}
	return h.Kid
}

// keyNode is one api node: a service with a keyring of its own on the shared key store.
type keyNode struct {
	svc  *runs.Service
	keys *runs.Keyring
}

const (
	testRotation = 2 * time.Hour
	testTokenTTL = 10 * time.Minute
)

func mustKeyNode(t *testing.T, f *fixture, store runs.SigningKeys) keyNode {
	t.Helper()
	kr := runs.NewKeyringWith(store, f.clock, runs.KeyringOptions{Rotation: testRotation, TokenTTL: testTokenTTL})
	svc := runs.New(runs.Deps{Store: f.store, Agents: f.agents, Structure: f.structure, UoW: f.db, Events: f.db, Authz: f.authz, Clock: f.clock, Keys: kr, Jobs: f.jobs}, kerneltest.With(runs.DefaultConfig(), func(c *runs.Config) { c.TokenTTL = testTokenTTL }))
	return keyNode{svc: svc, keys: kr}
}

// tokenRun is a run of echo's, enough to sign a token for.
var tokenRun = runs.Run{Summary: runs.Summary{ID: kernel.NewID(), AgentID: echo, ThreadID: kernel.NewID(), ChannelID: kernel.NewID()}}

func (n keyNode) issue(t *testing.T) string {
	t.Helper()
	tok, err := n.svc.IssueToken(bg, tokenRun)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

func (n keyNode) check(token string) error {
	_, err := n.svc.CheckToken(bg, kernel.Actor{ID: echo, Kind: kernel.KindAgent}, token, tokenRun.ID)
	return err
}

func (n keyNode) rotate(t *testing.T) runs.KeyRotation {
	t.Helper()
	r, err := n.svc.RotateSigningKey(bg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantInvalid fails unless err is invocation_token_invalid.
func wantInvalid(t *testing.T, err error) {
	t.Helper()
	if kernel.CodeOf(err) != runs.CodeInvocationTokenInvalid {
		t.Fatalf("err %v, want invocation_token_invalid", err)
	}
}

func TestSigningKeyRotation(t *testing.T) {
	t.Run("a key signs until it is due, then the job makes a new one that signs", func(t *testing.T) {
		f := mustRuns(t)
		a := mustKeyNode(t, f, &fakeKeys{})
		kid1 := kidOf(t, a.issue(t))
		f.clock.Advance(testRotation - time.Second)
		if r := a.rotate(t); r.Rotated {
			t.Fatalf("rotated a key not due: %+v", r)
		}
		if got := kidOf(t, a.issue(t)); got != kid1 {
			t.Fatalf("signed with %s before the rotation, want %s", got, kid1)
		}
		f.clock.Advance(time.Second)
		r := a.rotate(t)
		if !r.Rotated || r.KID == kid1 {
			t.Fatalf("rotation %+v", r)
		}
		if got := kidOf(t, a.issue(t)); got != r.KID {
			t.Fatalf("signed with %s after the rotation, want %s", got, r.KID)
		}
		if again := a.rotate(t); again.Rotated {
			t.Fatalf("rotated twice: %+v", again)
		}
	})

	t.Run("a retired key verifies its tokens for its window, then is refused and deleted", func(t *testing.T) {
		f := mustRuns(t)
		keys := &fakeKeys{}
		a := mustKeyNode(t, f, keys)
		a.issue(t) // makes the first key
		f.clock.Advance(testRotation - time.Minute)
		old := a.issue(t) // expires testTokenTTL - 1m after the rotation
		// A token the old key signed as late as a node may sign with it, valid for long.
		priv, kid1, err := a.keys.Signer(bg)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Minute)
		if r := a.rotate(t); !r.Rotated {
			t.Fatalf("rotation %+v", r)
		}
		retired := f.clock.Now()
		late, err := runs.Issue(priv, kid1, runs.NewInvocationClaims("bothy", tokenRun.Summary, retired.Add(runs.KeyRefresh), 24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(runs.KeyRefresh)
		if err := a.check(old); err != nil {
			t.Fatalf("a token of the retired key before its expiry: %v", err)
		}
		window := a.keys.VerifyWindow()
		if window != testTokenTTL+runs.KeyRefresh+runs.MaxClockSkew {
			t.Fatalf("window %v", window)
		}
		f.clock.Advance(retired.Add(window - time.Second).Sub(f.clock.Now()))
		if err := a.check(late); err != nil {
			t.Fatalf("a token of the retired key within its window: %v", err)
		}
		if r := a.rotate(t); r.Deleted != 0 {
			t.Fatalf("deleted a key within its window: %+v", r)
		}
		f.clock.Advance(time.Second)
		wantInvalid(t, a.check(late))
		f.clock.Advance(time.Second)
		if r := a.rotate(t); r.Deleted != 1 || r.Rotated {
			t.Fatalf("rotation after the window %+v", r)
		}
		if len(keys.keys) != 1 || keys.keys[0].KID == kid1 {
			t.Fatalf("keys left %+v", keys.keys)
		}
		wantInvalid(t, a.check(late))
	})

	t.Run("a token signed with a key another node made verifies at once", func(t *testing.T) {
		f := mustRuns(t)
		keys := &fakeKeys{}
		a, b := mustKeyNode(t, f, keys), mustKeyNode(t, f, keys)
		b.issue(t)
		f.clock.Advance(testRotation)
		kid1 := kidOf(t, b.issue(t)) // b read the keys just now, before a rotated
		r := a.rotate(t)
		if !r.Rotated {
			t.Fatalf("rotation %+v", r)
		}
		tok := a.issue(t)
		if kidOf(t, tok) != r.KID {
			t.Fatalf("node a signs with %s, want %s", kidOf(t, tok), r.KID)
		}
		if err := b.check(tok); err != nil {
			t.Fatalf("node b refused node a's token of the new key: %v", err)
		}
		if got := kidOf(t, b.issue(t)); got != r.KID || got == kid1 {
			t.Fatalf("node b signs with %s after reading the keys again, want %s", got, r.KID)
		}
	})

	t.Run("a node whose key fell due reads the keys again before it signs", func(t *testing.T) {
		f := mustRuns(t)
		keys := &fakeKeys{}
		a, b := mustKeyNode(t, f, keys), mustKeyNode(t, f, keys)
		a.issue(t)
		f.clock.Advance(testRotation - time.Second)
		kid1 := kidOf(t, b.issue(t)) // b read the keys a second before they fell due
		f.clock.Advance(time.Second)
		r := a.rotate(t)
		if !r.Rotated {
			t.Fatalf("rotation %+v", r)
		}
		if got := kidOf(t, b.issue(t)); got != r.KID || got == kid1 {
			t.Fatalf("node b signs with %s, want %s", got, r.KID)
		}
	})

	t.Run("a node learns of a rotation within KeyRefresh", func(t *testing.T) {
		f := mustRuns(t)
		keys := &fakeKeys{}
		a, b := mustKeyNode(t, f, keys), mustKeyNode(t, f, keys)
		a.issue(t)
		f.clock.Advance(testRotation)
		kid1 := kidOf(t, b.issue(t)) // b read the keys when due, before a rotated
		r := a.rotate(t)
		if got := kidOf(t, b.issue(t)); got != kid1 {
			t.Fatalf("node b re-read the keys at once: %s", got)
		}
		f.clock.Advance(runs.KeyRefresh)
		if got := kidOf(t, b.issue(t)); got != r.KID {
			t.Fatalf("node b signs with %s after KeyRefresh, want %s", got, r.KID)
		}
	})

	t.Run("two nodes rotating at once leave one current key", func(t *testing.T) {
		f := mustRuns(t)
		keys := &fakeKeys{}
		a, b := mustKeyNode(t, f, keys), mustKeyNode(t, f, keys)
		a.issue(t)
		b.issue(t)
		f.clock.Advance(testRotation)
		ra, rb := a.rotate(t), b.rotate(t)
		if !ra.Rotated || rb.Rotated {
			t.Fatalf("rotations %+v, %+v", ra, rb)
		}
		if ka, kb := kidOf(t, a.issue(t)), kidOf(t, b.issue(t)); ka != ra.KID || kb != ra.KID {
			t.Fatalf("nodes sign with %s and %s, want %s", ka, kb, ra.KID)
		}
	})

	t.Run("made-up key ids make the keyring read the keys a few times a second, not once each", func(t *testing.T) {
		f := mustRuns(t)
		store := &fakeKeys{}
		a := mustKeyNode(t, f, store)
		a.issue(t)
		_, stranger, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		claims := runs.NewInvocationClaims("bothy", tokenRun.Summary, f.clock.Now(), time.Minute)
		forged := func() string {
			tok, err := runs.Issue(stranger, string(kernel.NewID()), claims)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
		f.clock.Advance(2 * time.Second)
		store.mu.Lock()
		before := store.reads
		store.mu.Unlock()
		for range 50 {
			wantInvalid(t, a.check(forged()))
		}
		store.mu.Lock()
		reads := store.reads - before
		store.mu.Unlock()
		if reads > 3 {
			t.Fatalf("50 made-up key ids within an instant read the keys %d times, want at most 3", reads)
		}
	})

	t.Run("an unknown key id or a forged signature is refused", func(t *testing.T) {
		f := mustRuns(t)
		a := mustKeyNode(t, f, &fakeKeys{})
		kid1 := kidOf(t, a.issue(t))
		_, stranger, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		claims := runs.NewInvocationClaims("bothy", tokenRun.Summary, f.clock.Now(), time.Minute)
		for _, kid := range []string{string(kernel.NewID()), "not-a-key", kid1} {
			tok, err := runs.Issue(stranger, kid, claims)
			if err != nil {
				t.Fatal(err)
			}
			wantInvalid(t, a.check(tok))
		}
	})
}

func TestKeyringPublicKeys(t *testing.T) {
	t.Run("the first read makes the key that signs and lists it alone", func(t *testing.T) {
		f := mustRuns(t)
		a := mustKeyNode(t, f, &fakeKeys{})
		keys, err := a.keys.PublicKeys(bg)
		if err != nil {
			t.Fatal(err)
		}
		priv, kid, err := a.keys.Signer(bg)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 || keys[0].KID != kid || keys[0].RetiredAt != nil || !keys[0].Key.Equal(priv.Public()) {
			t.Fatalf("keys %+v, want the signer %s alone", keys, kid)
		}
	})

	t.Run("a retired key is listed after the current one until its window ends", func(t *testing.T) {
		f := mustRuns(t)
		a := mustKeyNode(t, f, &fakeKeys{})
		_, kid1, err := a.keys.Signer(bg)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(testRotation)
		r := a.rotate(t)
		if !r.Rotated {
			t.Fatalf("rotation %+v", r)
		}
		keys, err := a.keys.PublicKeys(bg)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 2 || keys[0].KID != r.KID || keys[0].RetiredAt != nil || keys[1].KID != kid1 || keys[1].RetiredAt == nil {
			t.Fatalf("keys %+v, want %s then the retired %s", keys, r.KID, kid1)
		}
		f.clock.Advance(a.keys.VerifyWindow() - time.Second)
		if keys, _ := a.keys.PublicKeys(bg); len(keys) != 2 {
			t.Fatalf("a second before the window ends: %d keys, want 2", len(keys))
		}
		f.clock.Advance(time.Second)
		keys, err = a.keys.PublicKeys(bg)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 || keys[0].KID != r.KID {
			t.Fatalf("after the window: keys %+v, want %s alone", keys, r.KID)
		}
	})
}
