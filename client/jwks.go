package client

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// InvocationClaims are what an invocation token says: agent Subject may act for run RunID in
// thread ThreadID of channel ChannelID until ExpiresAt. A token handed out with an interaction
// names no run (RunID is empty) but the interaction: it is good for answering in the thread only.
type InvocationClaims struct {
	Issuer  string `json:"iss"`
	Subject string `json:"sub"`
	RunID   string `json:"run_id,omitempty"`
	// InteractionID is the interaction a token handed out with interaction.created answers;
	// empty for a run's token.
	InteractionID string `json:"interaction_id,omitempty"`
	ThreadID      string `json:"thread_id"`
	ChannelID     string `json:"channel_id"`
	// IssuedAt and ExpiresAt are seconds since the Unix epoch.
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp"`
	ID        string `json:"jti"`
}

// The reasons KeySet.Verify refuses a token; the error wraps one of them.
var (
	// ErrTokenInvalid: malformed, an algorithm other than EdDSA, a key the instance does not
	// publish, a signature that does not verify, or claims missing.
	ErrTokenInvalid = errors.New("client: invocation token invalid")
	// ErrTokenExpired: a token that verifies but is past its expiry.
	ErrTokenExpired = errors.New("client: invocation token expired")
)

// JWKSPath is where an instance publishes the public keys of its invocation tokens.
const JWKSPath = "/.well-known/jwks.json"

// keySetRefetch is the least time between two fetches of the key set caused by tokens naming a
// key the set does not hold: the instance publishes a new key the moment it signs with it, so one
// fetch finds it, and a stream of tokens with made-up key ids costs a fetch every few seconds,
// not one per token.
const keySetRefetch = 5 * time.Second

// keySetMaxAge is how long a fetched set is used before it is fetched again anyway, so that a
// key the instance stopped publishing (past its window) stops verifying here too.
const keySetMaxAge = 5 * time.Minute

// maxClockSkew is how far in the future a token's issue time may be, for the clocks of the
// instance's nodes and this process.
const maxClockSkew = 30 * time.Second

// KeySet verifies invocation tokens with the keys the instance publishes at JWKSPath, so that a
// program in front of an agent (a proxy, a sandbox that runs tools) can check the token it is
// handed without asking the instance each time. It fetches the set on first use, again after
// keySetMaxAge, and at once (at most every few seconds) when a token names a key it does not
// hold. It is safe for concurrent use.
type KeySet struct {
	c   *Client
	now func() time.Time

	mu        sync.Mutex
	keys      map[string]ed25519.PublicKey
	fetchedAt time.Time
}

// NewKeySet returns a key set for the instance c talks to.
func (c *Client) NewKeySet() *KeySet { return &KeySet{c: c, now: time.Now} }

// Verify checks token's signature with the instance's published keys and its times against the
// clock, and returns its claims. It does not know which agent or run the caller expects: compare
// Subject, RunID and ThreadID (and Issuer, the instance's public URL) yourself. Errors wrap
// ErrTokenInvalid or ErrTokenExpired, or are the fetch's own (an *APIError or a network error).
func (k *KeySet) Verify(ctx context.Context, token string) (InvocationClaims, error) {
	parts := strings.Split(token, ".")
	if len(token) > 8<<10 || len(parts) != 3 {
		return InvocationClaims{}, fmt.Errorf("%w: not a compact JWS", ErrTokenInvalid)
	}
	var h struct {
		Alg  string          `json:"alg"`
		Kid  string          `json:"kid"`
		Crit json.RawMessage `json:"crit"`
	}
	if err := decodeSegment(parts[0], &h); err != nil {
		return InvocationClaims{}, fmt.Errorf("%w: header: %v", ErrTokenInvalid, err)
	}
	// The algorithm is fixed here, never taken from the token ("alg":"none", HMAC with a
	// public key), and an extension this verifier does not know is refused (RFC 7515 4.1.11).
	if h.Alg != "EdDSA" || h.Crit != nil {
		return InvocationClaims{}, fmt.Errorf("%w: algorithm %q", ErrTokenInvalid, h.Alg)
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(parts[2])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return InvocationClaims{}, fmt.Errorf("%w: signature", ErrTokenInvalid)
	}
	pub, err := k.key(ctx, h.Kid)
	if err != nil {
		return InvocationClaims{}, err
	}
	if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		return InvocationClaims{}, fmt.Errorf("%w: the signature does not verify", ErrTokenInvalid)
	}
	var c InvocationClaims
	if err := decodeSegment(parts[1], &c); err != nil {
		return InvocationClaims{}, fmt.Errorf("%w: claims: %v", ErrTokenInvalid, err)
	}
	if c.Issuer == "" || c.Subject == "" || c.ThreadID == "" || c.ChannelID == "" || c.ID == "" || c.ExpiresAt <= c.IssuedAt ||
		(c.RunID == "") == (c.InteractionID == "") {
		return InvocationClaims{}, fmt.Errorf("%w: claims missing", ErrTokenInvalid)
	}
	now := k.now()
	if c.IssuedAt > now.Add(maxClockSkew).Unix() {
		return InvocationClaims{}, fmt.Errorf("%w: issued in the future", ErrTokenInvalid)
	}
	if now.Unix() >= c.ExpiresAt {
		return InvocationClaims{}, ErrTokenExpired
	}
	return c, nil
}

// key returns the public key kid, fetching the set when it is old or does not hold kid.
func (k *KeySet) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	pub, ok := k.keys[kid]
	age := now.Sub(k.fetchedAt)
	if k.keys == nil || age >= keySetMaxAge || (!ok && age >= keySetRefetch) {
		keys, err := k.fetch(ctx)
		if err != nil {
			return nil, err
		}
		k.keys, k.fetchedAt = keys, now
		pub, ok = keys[kid]
	}
	if !ok {
		return nil, fmt.Errorf("%w: the instance publishes no key %q", ErrTokenInvalid, kid)
	}
	return pub, nil
}

// fetch reads the instance's key set, keeping its Ed25519 signing keys.
func (k *KeySet) fetch(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	var set struct {
		Keys []struct {
			KTY string `json:"kty"`
			CRV string `json:"crv"`
			X   string `json:"x"`
			KID string `json:"kid"`
			Alg string `json:"alg"`
			Use string `json:"use"`
		} `json:"keys"`
	}
	if err := k.c.do(ctx, http.MethodGet, JWKSPath, nil, &set); err != nil {
		return nil, err
	}
	keys := make(map[string]ed25519.PublicKey, len(set.Keys))
	for _, j := range set.Keys {
		if j.KTY != "OKP" || j.CRV != "Ed25519" || (j.Alg != "" && j.Alg != "EdDSA") || (j.Use != "" && j.Use != "sig") {
			continue
		}
		x, err := base64.RawURLEncoding.Strict().DecodeString(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize || j.KID == "" {
			continue
		}
		keys[j.KID] = ed25519.PublicKey(x)
	}
	return keys, nil
}

// decodeSegment decodes one base64url segment of a token as a JSON object into v.
func decodeSegment(s string, v any) error {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return err
	}
	if len(raw) == 0 || raw[0] != '{' {
		return errors.New("not a JSON object")
	}
	return json.Unmarshal(raw, v)
}
