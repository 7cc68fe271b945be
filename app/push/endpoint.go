package push

import (
	"crypto/ecdh"
	"net/url"
	"strings"
	"unicode/utf8"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/publicaddr"
)

// Limits of a subscription's fields: browsers' endpoints are a few hundred bytes, the keys 87
// and 22 characters of base64url.
const (
	MaxEndpointBytes = 2048
	maxKeyChars      = 200
)

// ValidateEndpoint refuses an endpoint the server must not send to: anything but an absolute
// https URL whose host may name a public server (publicaddr.Host; nothing is resolved), without
// user info or fragment, of at most MaxEndpointBytes. allowPrivate (push.allow_private_endpoints,
// for a push service of one's own on the local network or a test's fake) also takes http and any
// host. Errors: push_endpoint_refused, naming the field endpoint.
func ValidateEndpoint(endpoint string, allowPrivate bool) error {
	refuse := func(why string) error {
		return &kernel.Error{Code: CodeEndpointRefused, Field: "endpoint", Message: "endpoint " + why}
	}
	if endpoint == "" {
		return refuse("is required")
	}
	if len(endpoint) > MaxEndpointBytes || !utf8.ValidString(endpoint) {
		return refuse("must be a URL of at most 2048 bytes")
	}
	u, err := url.Parse(endpoint)
	if err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "" {
		return refuse("must be an absolute URL")
	}
	if u.User != nil || u.Fragment != "" || strings.ContainsAny(endpoint, " \t\r\n") {
		return refuse("must not hold user info, a fragment or spaces")
	}
	if allowPrivate {
		if u.Scheme != "https" && u.Scheme != "http" {
			return refuse("must be an http or https URL")
		}
		return nil
	}
	if u.Scheme != "https" {
		return refuse("must be an https URL")
	}
	if !publicaddr.Host(u.Hostname()) {
		return refuse("must name a public host: not an address of a private, loopback or link-local network, not localhost, not a name without a dot")
	}
	return nil
}

// ParseKeys decodes a subscription's keys as the browser's PushSubscription.toJSON() gives
// them: p256dh, base64url of an uncompressed P-256 point that lies on the curve, and auth,
// base64url of 16 bytes (padding is taken and dropped). Errors: push_keys_invalid, naming the
// field.
func ParseKeys(p256dh, auth string) (pub, secret []byte, err error) {
	pub, ok := decodeKey(p256dh)
	if !ok || len(pub) != PublicKeyBytes || pub[0] != 4 {
		return nil, nil, &kernel.Error{Code: CodeKeysInvalid, Field: "keys.p256dh",
			Message: "keys.p256dh must be the base64url of an uncompressed P-256 public key (65 bytes)"}
	}
	if _, err := ecdh.P256().NewPublicKey(pub); err != nil {
		return nil, nil, &kernel.Error{Code: CodeKeysInvalid, Field: "keys.p256dh", Message: "keys.p256dh is not a point of P-256"}
	}
	secret, ok = decodeKey(auth)
	if !ok || len(secret) != AuthSecretBytes {
		return nil, nil, &kernel.Error{Code: CodeKeysInvalid, Field: "keys.auth", Message: "keys.auth must be the base64url of 16 bytes"}
	}
	return pub, secret, nil
}

func decodeKey(s string) ([]byte, bool) {
	if s == "" || len(s) > maxKeyChars {
		return nil, false
	}
	b, err := b64url.DecodeString(strings.TrimRight(s, "="))
	return b, err == nil
}
