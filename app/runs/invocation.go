package runs

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/jose"
)

// InvocationClaims are the claims of an invocation token: the server's signed statement that
// agent Subject may act for run RunID in thread ThreadID until ExpiresAt. The agent sends the
// token back with Invocation-Token to read the thread's context, patch and finish the run and
// post its answer; the server re-checks the agent's permissions as well, so the token narrows
// what the agent may do and never widens it.
type InvocationClaims struct {
	// Issuer is the instance that signed the token (its public URL).
	Issuer  string    `json:"iss"`
	Subject kernel.ID `json:"sub"` // the agent
	// RunID is the run the token acts for. A token delivered with interaction.created has none
	// and names its InteractionID instead: it lets the agent answer in the thread, never act for
	// a run. Exactly one of the two is set.
	RunID         kernel.ID `json:"run_id,omitempty"`
	InteractionID kernel.ID `json:"interaction_id,omitempty"`
	ThreadID      kernel.ID `json:"thread_id"`
	ChannelID     kernel.ID `json:"channel_id"`
	// IssuedAt and ExpiresAt are seconds since the Unix epoch (RFC 7519 NumericDate).
	IssuedAt  int64 `json:"iat"`
	ExpiresAt int64 `json:"exp"`
	// ID is the token's own id, so that one token can be told apart from its renewal in logs.
	ID kernel.ID `json:"jti"`
}

// MaxClockSkew is how far in the future a token's IssuedAt may be. Several api nodes sign and
// check tokens with their own clocks; without it a token signed by a node a second ahead would
// be refused for a moment by the others. Expiry gets no such allowance: tokens are short-lived
// and renewable, and a late refusal is cheaper than a late acceptance.
const MaxClockSkew = 30 * time.Second

// NewInvocationClaims returns the claims of a new token for r's agent, valid from now for ttl,
// with a fresh token id.
func NewInvocationClaims(issuer string, r Summary, now time.Time, ttl time.Duration) InvocationClaims {
	return InvocationClaims{
		Issuer:    issuer,
		Subject:   r.AgentID,
		RunID:     r.ID,
		ThreadID:  r.ThreadID,
		ChannelID: r.ChannelID,
		IssuedAt:  now.Unix(),
		ExpiresAt: now.Add(ttl).Unix(),
		ID:        kernel.NewID(),
	}
}

// Issue signs claims into an invocation token with key, named kid in the token's header.
// Claims that Check would refuse (an id missing or malformed, an expiry not after the issue)
// are refused here too, as a plain error: they are a fault of the server, not of a request.
func Issue(key ed25519.PrivateKey, kid string, claims InvocationClaims) (string, error) {
	if err := claims.check(); err != nil {
		return "", fmt.Errorf("runs: invocation token: %w", err)
	}
	return jose.Sign(key, kid, claims)
}

// Check verifies an invocation token and returns its claims. keyFor looks up the instance's
// public key by key id. wantRun is the run the request acts on; NilID skips that comparison,
// for a request that names no run (posting the answer names the thread: the caller compares
// ThreadID itself).
//
// Errors: invocation_token_expired when the token is past its expiry at now;
// invocation_token_invalid for every other refusal (malformed, unknown key, bad signature, not
// yet valid, claims missing, another run). The detail is wrapped for the log, not for the
// caller: the message says only what the agent can act on.
func Check(token string, keyFor func(kid string) (ed25519.PublicKey, bool), now time.Time, wantRun kernel.ID) (InvocationClaims, error) {
	c, _, err := verifyToken(token, keyFor)
	if err != nil {
		return InvocationClaims{}, err
	}
	if err := c.validAt(now, wantRun); err != nil {
		return InvocationClaims{}, err
	}
	return c, nil
}

// verifyToken checks what a token's signature proves once and for all: that a key of the
// instance signed these claims, and that they say what every token must. It returns the claims
// and the key id that signed them; the times and the run are validAt's.
func verifyToken(token string, keyFor func(kid string) (ed25519.PublicKey, bool)) (InvocationClaims, string, error) {
	var c InvocationClaims
	var kid string
	named := func(k string) (ed25519.PublicKey, bool) {
		kid = k
		return keyFor(k)
	}
	if err := jose.Verify(token, named, &c); err != nil {
		return InvocationClaims{}, "", invalidToken("the invocation token is not valid", err)
	}
	if err := c.check(); err != nil {
		return InvocationClaims{}, "", invalidToken("the invocation token is not valid", err)
	}
	return c, kid, nil
}

// validAt is what Check asks of verified claims at now for run wantRun (NilID: any run).
func (c InvocationClaims) validAt(now time.Time, wantRun kernel.ID) error {
	if c.IssuedAt > now.Add(MaxClockSkew).Unix() {
		return invalidToken("the invocation token is not valid yet", nil)
	}
	if now.Unix() >= c.ExpiresAt {
		if c.RunID == kernel.NilID {
			return kernel.Errorf(CodeInvocationTokenExpired, "the invocation token of interaction %s has expired", c.InteractionID)
		}
		return kernel.Errorf(CodeInvocationTokenExpired, "the invocation token has expired; renew it for run %s", c.RunID)
	}
	if wantRun != kernel.NilID && c.RunID == kernel.NilID {
		return invalidToken("the invocation token is for an interaction, not a run", nil)
	}
	if wantRun != kernel.NilID && c.RunID != wantRun {
		return invalidToken("the invocation token is for another run", nil)
	}
	return nil
}

// invalidToken is invocation_token_invalid with message, wrapping cause (if any) for the log.
func invalidToken(message string, cause error) error {
	e := &kernel.Error{Code: CodeInvocationTokenInvalid, Message: message}
	if cause == nil {
		return e
	}
	return fmt.Errorf("%w: %w", e, cause)
}

// check holds what every invocation token must say.
func (c InvocationClaims) check() error {
	if c.Issuer == "" {
		return errors.New("no issuer")
	}
	// A token acts for a run or answers an interaction, never both and never neither.
	ref := struct {
		name string
		id   kernel.ID
	}{"run_id", c.RunID}
	switch {
	case c.RunID != kernel.NilID && c.InteractionID != kernel.NilID:
		return errors.New("both run_id and interaction_id")
	case c.RunID == kernel.NilID && c.InteractionID != kernel.NilID:
		ref.name, ref.id = "interaction_id", c.InteractionID
	}
	for _, claim := range []struct {
		name string
		id   kernel.ID
	}{{"sub", c.Subject}, ref, {"thread_id", c.ThreadID}, {"channel_id", c.ChannelID}, {"jti", c.ID}} {
		// The id's own validation_failed is not wrapped: a bad claim is no fault of a request.
		if _, err := kernel.ParseID(string(claim.id)); err != nil {
			return fmt.Errorf("claim %s is not a UUIDv7", claim.name)
		}
	}
	if c.ExpiresAt <= c.IssuedAt {
		return errors.New("expiry not after issue")
	}
	return nil
}
