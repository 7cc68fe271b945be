package runs

import (
	"context"
	"crypto/ed25519"
	"sync"
	"time"
)

// verifiedTokens remembers the invocation tokens whose signature and claims this node has
// verified, so that an agent streaming its answer (a patch every few tens of milliseconds, each
// with the same token) pays the Ed25519 verification once per token, not once per patch: it was
// a fifth of the server's time in a patch. Only what the signature proves is kept; the times, the
// run, the agent and the key's window are checked again at every use, so a hit decides exactly as
// a verification would. A token is kept until it expires.
type verifiedTokens struct {
	mu     sync.Mutex
	tokens map[string]verifiedToken
}

// verifiedToken is what a verified token said: its claims and the key that signed it.
type verifiedToken struct {
	claims InvocationClaims
	kid    string
}

// maxVerifiedTokens bounds the tokens a node remembers. Only tokens the instance signed get in,
// one per run or interaction an agent is busy with and per renewal, so the bound is reached only
// by an instance with thousands of agents at work; then the expired ones go, or all.
const maxVerifiedTokens = 4096

// get returns what token said when it was verified.
func (v *verifiedTokens) get(token string) (verifiedToken, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.tokens[token]
	return t, ok
}

// put remembers a token that verified, dropping the expired ones (or, when none has expired,
// all) when the bound is reached.
func (v *verifiedTokens) put(token string, t verifiedToken, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.tokens == nil {
		v.tokens = make(map[string]verifiedToken)
	}
	if len(v.tokens) >= maxVerifiedTokens {
		for k, old := range v.tokens {
			if now.Unix() >= old.claims.ExpiresAt {
				delete(v.tokens, k)
			}
		}
		if len(v.tokens) >= maxVerifiedTokens {
			clear(v.tokens)
		}
	}
	v.tokens[token] = t
}

// verifiedClaims returns the claims of token when a key of the instance that may still verify
// signed it: from the tokens this node verified before, or by verifying it (and then remembering
// it until it expires). The token names its key (kid): the current one or a retired one within its
// window; a key past its window refuses a token remembered earlier too. A failed read of the keys
// is the server's fault, not the token's: it is returned as it is.
func (s *Service) verifiedClaims(ctx context.Context, token string) (InvocationClaims, error) {
	if v, ok := s.verified.get(token); ok {
		_, valid, err := s.keys.publicKey(ctx, v.kid)
		if err != nil {
			return InvocationClaims{}, err
		}
		if valid {
			return v.claims, nil
		}
	}
	var readErr error
	keyFor := func(kid string) (ed25519.PublicKey, bool) {
		pub, ok, err := s.keys.publicKey(ctx, kid)
		readErr = err
		return pub, ok
	}
	c, kid, err := verifyToken(token, keyFor)
	if readErr != nil {
		return InvocationClaims{}, readErr
	}
	if err != nil {
		return InvocationClaims{}, err
	}
	if now := s.clock.Now(); now.Unix() < c.ExpiresAt {
		s.verified.put(token, verifiedToken{claims: c, kid: kid}, now)
	}
	return c, nil
}
