package runs

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/jose"
)

var (
	instanceKey = ed25519.NewKeyFromSeed([]byte(strings.Repeat("i", ed25519.SeedSize)))
	otherKey    = ed25519.NewKeyFromSeed([]byte(strings.Repeat("o", ed25519.SeedSize)))
	issuedAt    = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

func instanceKeys(kid string) (ed25519.PublicKey, bool) {
	if kid == "2026-05" {
		return instanceKey.Public().(ed25519.PublicKey), true
	}
	return nil, false
}

func testInvocation() InvocationClaims {
	return NewInvocationClaims("https://chat.example.org",
		Summary{ID: kernel.NewID(), AgentID: kernel.NewID(), ThreadID: kernel.NewID(), ChannelID: kernel.NewID()}, issuedAt, 10*time.Minute)
}

func mustIssue(tb testing.TB, key ed25519.PrivateKey, kid string, c InvocationClaims) string {
	tb.Helper()
	tok, err := Issue(key, kid, c)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

func TestNewInvocationClaims(t *testing.T) {
	c := testInvocation()
	if c.IssuedAt != issuedAt.Unix() || c.ExpiresAt != issuedAt.Add(10*time.Minute).Unix() {
		t.Fatalf("iat %d exp %d", c.IssuedAt, c.ExpiresAt)
	}
	if _, err := kernel.ParseID(string(c.ID)); err != nil {
		t.Fatalf("jti %q: %v", c.ID, err)
	}
	if testInvocation().ID == c.ID {
		t.Fatal("two tokens with one jti")
	}
}

func TestIssue(t *testing.T) {
	t.Run("writes the claims under their registered and documented names", func(t *testing.T) {
		tok := mustIssue(t, instanceKey, "2026-05", testInvocation())
		payload, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(payload, &m); err != nil {
			t.Fatal(err)
		}
		var names []string
		for k := range m {
			names = append(names, k)
		}
		slices.Sort(names)
		if want := []string{"channel_id", "exp", "iat", "iss", "jti", "run_id", "sub", "thread_id"}; !slices.Equal(names, want) {
			t.Fatalf("claims %v", names)
		}
	})
	for _, tt := range []struct {
		name  string
		edit  func(c *InvocationClaims)
		key   ed25519.PrivateKey
		keyID string
	}{
		{"refuses claims without issuer", func(c *InvocationClaims) { c.Issuer = "" }, instanceKey, "2026-05"},
		{"refuses claims without run", func(c *InvocationClaims) { c.RunID = "" }, instanceKey, "2026-05"},
		{"refuses a thread id that is no UUIDv7", func(c *InvocationClaims) { c.ThreadID = "thread-1" }, instanceKey, "2026-05"},
		{"refuses claims without token id", func(c *InvocationClaims) { c.ID = "" }, instanceKey, "2026-05"},
		{"refuses an expiry at the issue", func(c *InvocationClaims) { c.ExpiresAt = c.IssuedAt }, instanceKey, "2026-05"},
		{"refuses an empty key id", func(c *InvocationClaims) {}, instanceKey, ""},
		{"refuses a short key", func(c *InvocationClaims) {}, instanceKey[:10], "2026-05"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := testInvocation()
			tt.edit(&c)
			tok, err := Issue(tt.key, tt.keyID, c)
			if err == nil {
				t.Fatalf("issued %q", tok)
			}
			if kernel.CodeOf(err) != kernel.CodeInternal {
				t.Fatalf("a fault of the server carries code %s", kernel.CodeOf(err))
			}
		})
	}
}

func TestCheck(t *testing.T) {
	claims := testInvocation()
	valid := mustIssue(t, instanceKey, "2026-05", claims)
	signedRaw := func(edit func(m map[string]any)) string {
		b, _ := json.Marshal(claims)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		edit(m)
		tok, err := jose.Sign(instanceKey, "2026-05", m)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	withClaims := func(edit func(c *InvocationClaims)) InvocationClaims {
		c := claims
		edit(&c)
		return c
	}
	parts := strings.Split(valid, ".")

	tests := []struct {
		name    string
		token   string
		now     time.Time
		wantRun kernel.ID
		code    kernel.Code
		cause   error // the jose reason wrapped for the log, if any
	}{
		{"accepts the token for its run", valid, issuedAt, claims.RunID, kernel.Code{}, nil},
		{"accepts the token a second before expiry", valid, issuedAt.Add(10*time.Minute - time.Second), claims.RunID, kernel.Code{}, nil},
		{"accepts the token for any run when none is asked for", valid, issuedAt, kernel.NilID, kernel.Code{}, nil},
		{"accepts a token issued within the clock skew ahead", valid, issuedAt.Add(-MaxClockSkew), claims.RunID, kernel.Code{}, nil},

		{"refuses the token at its expiry", valid, issuedAt.Add(10 * time.Minute), claims.RunID, CodeInvocationTokenExpired, nil},
		{"refuses the token a day after", valid, issuedAt.Add(24 * time.Hour), claims.RunID, CodeInvocationTokenExpired, nil},
		{"refuses a token issued beyond the clock skew ahead", valid, issuedAt.Add(-MaxClockSkew - time.Second), claims.RunID, CodeInvocationTokenInvalid, nil},
		{"refuses the token for another run", valid, issuedAt, kernel.NewID(), CodeInvocationTokenInvalid, nil},
		{"refuses a token signed by another key", mustIssue(t, otherKey, "2026-05", claims), issuedAt, claims.RunID, CodeInvocationTokenInvalid, jose.ErrSignature},
		{"refuses a token naming an unknown key", mustIssue(t, instanceKey, "2025-01", claims), issuedAt, claims.RunID, CodeInvocationTokenInvalid, jose.ErrUnknownKey},
		{"refuses a token with another run put in", parts[0] + "." + strings.Split(mustIssue(t, instanceKey, "2026-05", withClaims(func(c *InvocationClaims) { c.RunID = kernel.NewID() })), ".")[1] + "." + parts[2], issuedAt, kernel.NilID, CodeInvocationTokenInvalid, jose.ErrSignature},
		{"refuses a token with alg none", "eyJhbGciOiJub25lIiwia2lkIjoiMjAyNi0wNSJ9." + parts[1] + ".", issuedAt, claims.RunID, CodeInvocationTokenInvalid, jose.ErrAlgorithm},
		{"refuses garbage", "not a token", issuedAt, claims.RunID, CodeInvocationTokenInvalid, jose.ErrMalformed},
		{"refuses the empty string", "", issuedAt, claims.RunID, CodeInvocationTokenInvalid, jose.ErrMalformed},
		{"refuses a signed token without run", signedRaw(func(m map[string]any) { delete(m, "run_id") }), issuedAt, kernel.NilID, CodeInvocationTokenInvalid, nil},
		{"refuses a signed token without expiry", signedRaw(func(m map[string]any) { delete(m, "exp") }), issuedAt, claims.RunID, CodeInvocationTokenInvalid, nil},
		{"refuses a signed token with a text expiry", signedRaw(func(m map[string]any) { m["exp"] = "tomorrow" }), issuedAt, claims.RunID, CodeInvocationTokenInvalid, jose.ErrMalformed},
		{"refuses a signed token whose agent is no id", signedRaw(func(m map[string]any) { m["sub"] = "bot" }), issuedAt, claims.RunID, CodeInvocationTokenInvalid, nil},
		{"refuses a signed token without issuer", signedRaw(func(m map[string]any) { delete(m, "iss") }), issuedAt, claims.RunID, CodeInvocationTokenInvalid, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check(tt.token, instanceKeys, tt.now, tt.wantRun)
			if tt.code == (kernel.Code{}) {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, claims) {
					t.Fatalf("claims %+v", got)
				}
				return
			}
			if kernel.CodeOf(err) != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Fatalf("err = %v does not wrap %v", err, tt.cause)
			}
			if got != (InvocationClaims{}) {
				t.Fatalf("claims of a refused token: %+v", got)
			}
		})
	}
	t.Run("keeps the detail out of the message the agent sees", func(t *testing.T) {
		_, err := Check(mustIssue(t, otherKey, "2026-05", claims), instanceKeys, issuedAt, claims.RunID)
		var ke *kernel.Error
		if !errors.As(err, &ke) || strings.Contains(ke.Message, "signature") {
			t.Fatalf("err = %#v", err)
		}
	})
}
