// Package jose builds and verifies compact JWS (RFC 7515) signed with EdDSA over Ed25519
// (RFC 8037): the tokens the server signs for itself, such as the invocation token of a run.
//
// It uses the standard library only and knows nothing of keys' storage or rotation: the caller
// hands in the private key to sign with and a lookup from key id to public key to verify with.
// Verification is deliberately narrow. It accepts one algorithm, one encoding (base64url without
// padding, canonical), JSON without duplicate members, and tokens of at most MaxTokenBytes: every
// freedom a verifier allows is a way for two parsers to disagree about what was signed.
//
// It must not grow other algorithms by configuration: a verifier that takes the algorithm from
// the token is the classic JWS hole ("alg":"none", or an HMAC keyed with a public key).
package jose

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxTokenBytes bounds the length of a token, so that a hostile header or payload costs little
// to refuse. The server's own tokens are a few hundred bytes.
const MaxTokenBytes = 8 << 10

// Algorithm is the one value of the header member "alg" that Verify accepts.
const Algorithm = "EdDSA"

// tokenType is the header member "typ" that Sign writes; Verify accepts it or its absence.
const tokenType = "JWT"

// The reasons a token is refused. Verify wraps exactly one of them, so that callers can map a
// refusal with errors.Is and log the detail that follows it.
var (
	// ErrMalformed: not three base64url segments of JSON objects within the bounds, or a header
	// or claims that break the rules of the package comment.
	ErrMalformed = errors.New("jose: malformed token")
	// ErrAlgorithm: the header names an algorithm other than EdDSA, or none.
	ErrAlgorithm = errors.New("jose: algorithm not accepted")
	// ErrUnknownKey: the header's key id names no key the caller knows.
	ErrUnknownKey = errors.New("jose: unknown key")
	// ErrSignature: the signature does not verify with the named key.
	ErrSignature = errors.New("jose: signature does not verify")
)

// header is the protected header Sign writes; the field order is the order in the token.
type header struct {
	Alg string `json:"alg"`
	Typ string `json:"typ"`
	Kid string `json:"kid"`
}

var b64 = base64.RawURLEncoding.Strict()

// Sign returns the compact JWS of claims, signed with key and naming kid in its header. claims
// must marshal to a JSON object. It refuses what Verify would refuse, so that the server never
// hands out a token it will not take back.
func Sign(key ed25519.PrivateKey, kid string, claims any) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("jose: private key has %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	if kid == "" {
		return "", errors.New("jose: empty key id")
	}
	h, err := json.Marshal(header{Alg: Algorithm, Typ: tokenType, Kid: kid})
	if err != nil {
		return "", fmt.Errorf("jose: header: %w", err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("jose: claims: %w", err)
	}
	if err := checkObject(payload); err != nil {
		return "", fmt.Errorf("jose: claims: %w", err)
	}
	signingInput := b64.EncodeToString(h) + "." + b64.EncodeToString(payload)
	sig := ed25519.Sign(key, []byte(signingInput))
	token := signingInput + "." + b64.EncodeToString(sig)
	if len(token) > MaxTokenBytes {
		return "", fmt.Errorf("jose: token of %d bytes exceeds %d", len(token), MaxTokenBytes)
	}
	return token, nil
}

// Verify checks token and decodes its claims into claims (a pointer, as for json.Unmarshal; nil
// skips decoding). keyFor returns the public key of a key id and whether it is known. The error
// wraps ErrMalformed, ErrAlgorithm, ErrUnknownKey or ErrSignature. The claims are only read after
// the signature verified; their meaning (expiry, audience, scope) is the caller's to check.
func Verify(token string, keyFor func(kid string) (ed25519.PublicKey, bool), claims any) error {
	if len(token) > MaxTokenBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxTokenBytes)
	}
	if strings.Count(token, ".") != 2 {
		return fmt.Errorf("%w: not three segments", ErrMalformed)
	}
	segments := strings.Split(token, ".")
	signingInput := token[:len(segments[0])+1+len(segments[1])]
	// The header first, so that a token with "alg":"none" (and so no signature) is refused for
	// its algorithm rather than for its empty third segment.
	rawHeader, err := decodeSegment(segments[0], "header")
	if err != nil {
		return err
	}
	kid, err := readHeader(rawHeader)
	if err != nil {
		return err
	}
	rawPayload, err := decodeSegment(segments[1], "payload")
	if err != nil {
		return err
	}
	sig, err := decodeSegment(segments[2], "signature")
	if err != nil {
		return err
	}
	pub, ok := keyFor(kid)
	// A key of the wrong length would make ed25519.Verify panic; it is as good as unknown.
	if !ok || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: %q", ErrUnknownKey, kid)
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, []byte(signingInput), sig) {
		return ErrSignature
	}

	if err := checkObject(rawPayload); err != nil {
		return fmt.Errorf("%w: claims: %w", ErrMalformed, err)
	}
	if claims == nil {
		return nil
	}
	if err := json.Unmarshal(rawPayload, claims); err != nil {
		return fmt.Errorf("%w: claims: %w", ErrMalformed, err)
	}
	return nil
}

// readHeader checks the protected header and returns its key id. "crit" is refused: this
// verifier understands no extension, and RFC 7515 section 4.1.11 says to refuse what it does
// not understand there.
func readHeader(raw []byte) (kid string, err error) {
	if err := checkObject(raw); err != nil {
		return "", fmt.Errorf("%w: header: %w", ErrMalformed, err)
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(raw, &h); err != nil {
		return "", fmt.Errorf("%w: header: %w", ErrMalformed, err)
	}
	var alg string
	if a, ok := h["alg"]; !ok || json.Unmarshal(a, &alg) != nil || alg != Algorithm {
		// Compared exactly: "none", "eddsa", "Ed25519" and a non-string are all refused here.
		return "", fmt.Errorf("%w: alg %s", ErrAlgorithm, h["alg"])
	}
	if _, ok := h["crit"]; ok {
		return "", fmt.Errorf("%w: header: crit is not supported", ErrMalformed)
	}
	if t, ok := h["typ"]; ok {
		var typ string
		if json.Unmarshal(t, &typ) != nil || typ != tokenType {
			return "", fmt.Errorf("%w: header: typ %s", ErrMalformed, t)
		}
	}
	k, ok := h["kid"]
	if !ok || json.Unmarshal(k, &kid) != nil || kid == "" {
		return "", fmt.Errorf("%w: header: kid must be a non-empty string", ErrMalformed)
	}
	return kid, nil
}

// decodeSegment decodes one base64url segment. The alphabet is checked first because the
// standard decoder skips CR and LF, which would let two different strings carry one token; the
// strict decoder then refuses padding and non-zero trailing bits, so each value has one encoding.
func decodeSegment(s, what string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: empty %s", ErrMalformed, what)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return nil, fmt.Errorf("%w: %s is not base64url without padding", ErrMalformed, what)
		}
	}
	b, err := b64.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
	}
	return b, nil
}

// checkObject holds that data is exactly one JSON object in valid UTF-8, with no member name
// twice in any object at any depth and nothing after it. encoding/json alone would keep the last
// of two equal names and replace invalid UTF-8 silently, where another parser may do otherwise.
func checkObject(data []byte) error {
	if !utf8.Valid(data) {
		return errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	// One frame per open container: the member names seen so far, or nil for an array.
	type frame struct {
		names     map[string]bool
		expectKey bool
	}
	stack := []frame{{names: map[string]bool{}, expectKey: true}}
	for len(stack) > 0 {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		top := &stack[len(stack)-1]
		if top.names != nil && top.expectKey {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				continue
			}
			name, ok := tok.(string)
			if !ok {
				return errors.New("object member without a name")
			}
			if top.names[name] {
				return fmt.Errorf("duplicate member %q", name)
			}
			top.names[name] = true
			top.expectKey = false
			continue
		}
		if top.names != nil {
			top.expectKey = true // the value of a member follows; the next token is a name again
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{names: map[string]bool{}, expectKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}
