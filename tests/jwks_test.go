package tests

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// The instance publishes the keys of its invocation tokens, and an adapter verifies a token it is
// handed with them alone: a fresh one verifies with its claims, a forged one does not.
func TestJWKS(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		a, _ := w.in.mustCreateAgent(t, "verified")
		w.in.owner.mustGrant(t, w.shared.ID, a.ID, "view")
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		b := mustStartBot(t, "verified", w.in.srv.public, a.Token, botclient.WithCursor(w.in.owner.mustHead(t)))
		th := w.sharedTh.Thread.ID
		mid, _ := postedMessage(t, w.alice, th, "@verified check this")
		inv := b.waitEvent(t, "agent.invocation", func(d map[string]any) bool { return d["message_id"] == mid })
		token, _ := inv["invocation_token"].(string)
		ctx := context.Background()
		keys := botclient.New(w.in.srv.public, "").NewKeySet()

		t.Run("anyone reads the key set: Ed25519 keys with their ids, cacheable", func(t *testing.T) {
			r := as(w.in.srv, "").do(t, http.MethodGet, "/.well-known/jwks.json", nil).want(t, http.StatusOK)
			var set struct {
				Keys []map[string]string `json:"keys"`
			}
			r.decode(t, &set)
			if len(set.Keys) != 1 {
				t.Fatalf("keys %v, want the one that signs", set.Keys)
			}
			k := set.Keys[0]
			if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" || k["use"] != "sig" || k["kid"] == "" {
				t.Fatalf("key %v", k)
			}
			if cc := r.header.Get("Cache-Control"); !strings.HasPrefix(cc, "public, max-age=") {
				t.Fatalf("Cache-Control %q", cc)
			}
		})

		t.Run("the token of an invocation verifies with the published keys and names its run", func(t *testing.T) {
			c, err := keys.Verify(ctx, token)
			if err != nil {
				t.Fatal(err)
			}
			if c.Subject != a.ID || c.RunID != inv["run_id"] || c.ThreadID != th || c.ChannelID != w.shared.ID || c.Issuer == "" ||
				time.Unix(c.ExpiresAt, 0).Before(time.Now()) {
				t.Fatalf("claims %+v of invocation %v", c, inv)
			}
		})

		t.Run("a token forged under the instance's key id is refused", func(t *testing.T) {
			parts := strings.Split(token, ".")
			_, other, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			// The same header and claims, another run, signed with a key of the forger's own.
			raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var claims map[string]any
			if err := json.Unmarshal(raw, &claims); err != nil {
				t.Fatal(err)
			}
			claims["run_id"] = "0190a0a0-0000-7000-8000-000000000000"
			body, _ := json.Marshal(claims)
			in := parts[0] + "." + base64.RawURLEncoding.EncodeToString(body)
			forged := in + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(other, []byte(in)))
			if _, err := keys.Verify(ctx, forged); !errors.Is(err, botclient.ErrTokenInvalid) {
				t.Fatalf("forged token: %v, want ErrTokenInvalid", err)
			}
			// The instance refuses it as well.
			a2 := as(w.in.srv, a.Token)
			a2.do(t, http.MethodPost, api("runs", inv["run_id"].(string), "start"), nil,
				header("Invocation-Token", forged)).want(t, http.StatusUnauthorized)
		})
	})
}
