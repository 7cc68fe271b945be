package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// PublicKeySource lists the keys that verify invocation tokens; *runs.Keyring implements it.
type PublicKeySource interface {
	PublicKeys(ctx context.Context) ([]runs.PublicKey, error)
}

var _ PublicKeySource = (*runs.Keyring)(nil)

// JWKSPath is where the instance publishes its JSON Web Key Set (RFC 8414's well-known prefix, the
// path OpenID providers use, so that JWT libraries find it by default).
const JWKSPath = "/.well-known/jwks.json"

// JWKSMaxAge is how long a client may keep the key set. A key signs from the moment it is made, so
// a client that meets a token with an unknown kid fetches the set again at once rather than
// waiting for this; it only spares the instance a fetch for every token.
const JWKSMaxAge = 5 * time.Minute

// JWKSRoutes publish the public keys of invocation tokens to anyone, so that an adapter in front of
// an agent verifies the tokens it is handed without calling the instance for each: discovery needs
// no credentials, but it still goes through the one decision point (instance.discovery.read).
func JWKSRoutes(az kernel.Authorizer, keys PublicKeySource) []Route {
	rt := jwksRoutes{az: az, keys: keys}
	return []Route{
		{Method: http.MethodGet, Pattern: JWKSPath, Action: instance.ActDiscoveryRead, Public: true, Handler: rt.keySet},
	}
}

// jwksRoutes holds the handler of JWKSRoutes.
type jwksRoutes struct {
	az   kernel.Authorizer
	keys PublicKeySource
}

// JWK is one key of the set (RFC 8037: an Ed25519 key is of type OKP, its public key in x).
type JWK struct {
	KTY string `json:"kty"`
	CRV string `json:"crv"`
	X   string `json:"x"`
	KID string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKSet is the answer of GET /.well-known/jwks.json (RFC 7517 section 5).
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

func (rt jwksRoutes) keySet(r *Request) (int, any, error) {
	if err := rt.az.Authorize(r.Context(), r.Actor, instance.ActDiscoveryRead, kernel.Resource{Kind: kernel.ResInstance}); err != nil {
		return 0, nil, err
	}
	keys, err := rt.keys.PublicKeys(r.Context())
	if err != nil {
		return 0, nil, err
	}
	set := JWKSet{Keys: make([]JWK, 0, len(keys))}
	for _, k := range keys {
		set.Keys = append(set.Keys, JWK{KTY: "OKP", CRV: "Ed25519", X: base64.RawURLEncoding.EncodeToString(k.Key),
			KID: k.KID, Alg: runs.AlgorithmEdDSA, Use: "sig"})
	}
	r.ResponseHeader().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(JWKSMaxAge/time.Second)))
	return http.StatusOK, set, nil
}
