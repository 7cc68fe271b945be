package client_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"bothy.dev/bothy/client"
)

// jwksServer publishes a key set that a test changes, counting the fetches.
type jwksServer struct {
	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	fetches atomic.Int32
}

func (s *jwksServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != client.JWKSPath {
		http.NotFound(w, r)
		return
	}
	s.fetches.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out struct {
		Keys []map[string]string `json:"keys"`
	}
	out.Keys = []map[string]string{}
	for kid, pub := range s.keys {
		out.Keys = append(out.Keys, map[string]string{"kty": "OKP", "crv": "Ed25519", "kid": kid, "alg": "EdDSA", "use": "sig",
			"x": base64.RawURLEncoding.EncodeToString(pub)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

func (s *jwksServer) publish(kid string, pub ed25519.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]ed25519.PublicKey{}
	}
	s.keys[kid] = pub
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// signToken signs claims as the instance does: a compact JWS with EdDSA, naming kid.
func signToken(t *testing.T, key ed25519.PrivateKey, header map[string]string, claims any) string {
	t.Helper()
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	in := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	return in + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(in)))
}

func freshClaims(now time.Time) client.InvocationClaims {
	return client.InvocationClaims{Issuer: "http://chat.example", Subject: "agent-1", RunID: "run-1", ThreadID: "thread-1",
		ChannelID: "channel-1", IssuedAt: now.Unix(), ExpiresAt: now.Add(15 * time.Minute).Unix(), ID: "jti-1"}
}

func TestKeySetVerify(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*jwksServer, *client.KeySet, ed25519.PrivateKey) {
		srv := &jwksServer{}
		key := newKey(t)
		srv.publish("k1", key.Public().(ed25519.PublicKey))
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		return srv, client.New(hs.URL, "").NewKeySet(), key
	}
	eddsa := map[string]string{"alg": "EdDSA", "typ": "JWT", "kid": "k1"}

	t.Run("a fresh token signed with a published key verifies and tells its claims", func(t *testing.T) {
		_, ks, key := setup(t)
		want := freshClaims(time.Now())
		got, err := ks.Verify(ctx, signToken(t, key, eddsa, want))
		if err != nil || got != want {
			t.Fatalf("Verify = %+v, %v; want %+v", got, err, want)
		}
	})

	t.Run("a token signed with another key under a published key id is refused", func(t *testing.T) {
		_, ks, _ := setup(t)
		_, err := ks.Verify(ctx, signToken(t, newKey(t), eddsa, freshClaims(time.Now())))
		if !errors.Is(err, client.ErrTokenInvalid) {
			t.Fatalf("forged: %v, want ErrTokenInvalid", err)
		}
	})

	t.Run("a token whose claims were changed after signing is refused", func(t *testing.T) {
		_, ks, key := setup(t)
		tok := signToken(t, key, eddsa, freshClaims(time.Now()))
		other := freshClaims(time.Now())
		other.RunID = "run-2"
		c, _ := json.Marshal(other)
		parts := strings.Split(tok, ".")
		parts[1] = base64.RawURLEncoding.EncodeToString(c)
		if _, err := ks.Verify(ctx, strings.Join(parts, ".")); !errors.Is(err, client.ErrTokenInvalid) {
			t.Fatalf("changed claims: %v, want ErrTokenInvalid", err)
		}
	})

	t.Run("the algorithm is EdDSA whatever the token says", func(t *testing.T) {
		_, ks, key := setup(t)
		for _, alg := range []string{"none", "HS256", ""} {
			h := map[string]string{"alg": alg, "kid": "k1"}
			if _, err := ks.Verify(ctx, signToken(t, key, h, freshClaims(time.Now()))); !errors.Is(err, client.ErrTokenInvalid) {
				t.Errorf("alg %q: %v, want ErrTokenInvalid", alg, err)
			}
		}
	})

	t.Run("an interaction's token names the interaction instead of a run; one naming both or neither is refused", func(t *testing.T) {
		_, ks, key := setup(t)
		c := freshClaims(time.Now())
		c.RunID, c.InteractionID = "", "interaction-1"
		got, err := ks.Verify(ctx, signToken(t, key, eddsa, c))
		if err != nil || got.InteractionID != "interaction-1" || got.RunID != "" {
			t.Fatalf("Verify = %+v, %v", got, err)
		}
		c.RunID = "run-1"
		if _, err := ks.Verify(ctx, signToken(t, key, eddsa, c)); !errors.Is(err, client.ErrTokenInvalid) {
			t.Fatalf("both: %v, want ErrTokenInvalid", err)
		}
		c.RunID, c.InteractionID = "", ""
		if _, err := ks.Verify(ctx, signToken(t, key, eddsa, c)); !errors.Is(err, client.ErrTokenInvalid) {
			t.Fatalf("neither: %v, want ErrTokenInvalid", err)
		}
	})

	t.Run("an expired token is told apart from an invalid one", func(t *testing.T) {
		_, ks, key := setup(t)
		c := freshClaims(time.Now().Add(-time.Hour))
		if _, err := ks.Verify(ctx, signToken(t, key, eddsa, c)); !errors.Is(err, client.ErrTokenExpired) {
			t.Fatalf("expired: %v, want ErrTokenExpired", err)
		}
	})

	t.Run("a key published after the set was fetched is found by fetching again", func(t *testing.T) {
		srv, ks, key := setup(t)
		if _, err := ks.Verify(ctx, signToken(t, key, eddsa, freshClaims(time.Now()))); err != nil {
			t.Fatal(err)
		}
		next := newKey(t)
		srv.publish("k2", next.Public().(ed25519.PublicKey))
		tok := signToken(t, next, map[string]string{"alg": "EdDSA", "kid": "k2"}, freshClaims(time.Now()))
		// Right after a fetch the set is not fetched again for an unknown key: a stream of made-up
		// key ids must not cost a fetch each.
		if _, err := ks.Verify(ctx, tok); !errors.Is(err, client.ErrTokenInvalid) {
			t.Fatalf("unknown key right after a fetch: %v, want ErrTokenInvalid", err)
		}
		if n := srv.fetches.Load(); n != 1 {
			t.Fatalf("%d fetches, want 1", n)
		}
		client.SetKeySetClock(ks, func() time.Time { return time.Now().Add(6 * time.Second) })
		if _, err := ks.Verify(ctx, tok); err != nil {
			t.Fatalf("new key after the refetch pause: %v", err)
		}
		if n := srv.fetches.Load(); n != 2 {
			t.Fatalf("%d fetches, want 2", n)
		}
	})
}
