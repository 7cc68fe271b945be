package push

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// VAPID (RFC 8292): each push request carries a short JWT signed with the instance's P-256 key,
// and that key's public half, which the browser got as the applicationServerKey when it
// subscribed; the push service delivers only requests signed by the key the subscription names.

// VAPIDKey is the instance's application server key pair. Made by the first node that needs it
// and kept in the database, so that every node signs with the one key the browsers know.
type VAPIDKey struct {
	// Private is the P-256 private scalar, 32 bytes big-endian.
	Private   []byte
	CreatedAt time.Time
}

// NewVAPIDKey makes a key pair.
func NewVAPIDKey(now time.Time) (VAPIDKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return VAPIDKey{}, fmt.Errorf("push: make the VAPID key: %w", err)
	}
	b, err := k.Bytes()
	if err != nil {
		return VAPIDKey{}, fmt.Errorf("push: encode the VAPID key: %w", err)
	}
	return VAPIDKey{Private: b, CreatedAt: now}, nil
}

// signer parses the key.
func (k VAPIDKey) signer() (*ecdsa.PrivateKey, error) {
	p, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), k.Private)
	if err != nil {
		return nil, fmt.Errorf("push: the stored VAPID key: %w", err)
	}
	return p, nil
}

var b64url = base64.RawURLEncoding

// vapidClaims are the claims of the JWT: the push service's origin, the expiry, and whom the
// push service may contact about the sender.
type vapidClaims struct {
	Aud string `json:"aud"`
	Exp int64  `json:"exp"`
	Sub string `json:"sub,omitempty"`
}

// vapidToken returns the JWT for audience, valid until exp, signed ES256 with key.
func vapidToken(key *ecdsa.PrivateKey, audience, subject string, exp time.Time) (string, error) {
	claims, err := json.Marshal(vapidClaims{Aud: audience, Exp: exp.Unix(), Sub: subject})
	if err != nil {
		return "", err
	}
	signing := b64url.EncodeToString([]byte(`{"typ":"JWT","alg":"ES256"}`)) + "." + b64url.EncodeToString(claims)
	digest := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		return "", fmt.Errorf("push: sign the VAPID token: %w", err)
	}
	sig := make([]byte, 64) // JWS ES256: r and s, 32 bytes each (RFC 7518 section 3.4)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + b64url.EncodeToString(sig), nil
}

// Audience is the aud of the VAPID token for endpoint: its origin.
func Audience(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("push: endpoint without an origin")
	}
	return u.Scheme + "://" + u.Host, nil
}

// VAPIDToken is what VerifyVAPID read from an Authorization header.
type VAPIDToken struct {
	// PublicKey is the k= parameter: the sender's key, base64url of the uncompressed point.
	PublicKey string
	Audience  string
	Subject   string
	Expires   time.Time
}

// VerifyVAPID checks an Authorization header of a push request as a push service does: the
// scheme vapid with t= and k=, an ES256 JWT signed by k, aud equal to audience, and exp after
// now and at most 24 hours ahead. The fake push service of the tests uses it.
func VerifyVAPID(authorization, audience string, now time.Time) (VAPIDToken, error) {
	rest, ok := strings.CutPrefix(authorization, "vapid ")
	if !ok {
		return VAPIDToken{}, errors.New("push: not the vapid scheme")
	}
	var tok, k string
	for _, p := range strings.Split(rest, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		switch name {
		case "t":
			tok = value
		case "k":
			k = value
		}
	}
	pubBytes, err := b64url.DecodeString(k)
	if err != nil {
		return VAPIDToken{}, errors.New("push: k is not base64url")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pubBytes)
	if err != nil {
		return VAPIDToken{}, errors.New("push: k is not a P-256 point")
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return VAPIDToken{}, errors.New("push: t is not a JWT")
	}
	head, err1 := b64url.DecodeString(parts[0])
	body, err2 := b64url.DecodeString(parts[1])
	sig, err3 := b64url.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || len(sig) != 64 {
		return VAPIDToken{}, errors.New("push: t is not a JWT")
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(head, &h) != nil || h.Alg != "ES256" {
		return VAPIDToken{}, errors.New("push: the JWT is not ES256")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return VAPIDToken{}, errors.New("push: the JWT's signature does not verify with k")
	}
	var c vapidClaims
	if err := json.Unmarshal(body, &c); err != nil {
		return VAPIDToken{}, errors.New("push: the JWT's claims are not JSON")
	}
	exp := time.Unix(c.Exp, 0)
	switch {
	case c.Aud != audience:
		return VAPIDToken{}, fmt.Errorf("push: aud %q is not %q", c.Aud, audience)
	case !exp.After(now):
		return VAPIDToken{}, errors.New("push: the JWT has expired")
	case exp.After(now.Add(24 * time.Hour)):
		return VAPIDToken{}, errors.New("push: the JWT expires more than 24 hours ahead")
	}
	return VAPIDToken{PublicKey: k, Audience: c.Aud, Subject: c.Sub, Expires: exp}, nil
}
