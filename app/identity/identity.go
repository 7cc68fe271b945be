// Package identity holds the principals (people, and the principals of agents, which the agents
// module creates through CreateAgentPrincipal), the local passwords and login sessions of people,
// the API tokens of every principal, the first-owner setup, and the authentication of every
// request.
//
// It must not import storage or net/http, must never store a password, a session token or an API
// token in clear (only argon2id hashes and SHA-256 digests), and must never put one in an error,
// an event or a log line.
package identity

import (
	"context"
	"strings"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/names"
)

// Principal statuses.
const (
	StatusActive   = "active"
	StatusDisabled = "disabled"
)

// User is a principal as the API shows it. It is also the payload of user.created and
// user.updated.
type User struct {
	ID          kernel.ID            `json:"id"`
	Kind        kernel.PrincipalKind `json:"kind"`
	Handle      string               `json:"handle"`
	DisplayName string               `json:"display_name"`
	Status      string               `json:"status"`
	IsOwner     bool                 `json:"is_owner"`
	CreatedAt   time.Time            `json:"created_at"`
	UpdatedAt   time.Time            `json:"updated_at"`
	DisabledAt  *time.Time           `json:"disabled_at,omitempty"`
}

// Session is a login session; the token itself is never stored, only its digest.
type Session struct {
	ID          kernel.ID
	PrincipalID kernel.ID
	TokenHash   string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// Token is an API token as listed: never its value.
type Token struct {
	ID          kernel.ID
	PrincipalID kernel.ID
	Name        string
	TokenHash   string // set on create only; never shown
	CreatedAt   time.Time
	LastUsedAt  *time.Time
}

// Credential is what a session or token digest resolves to.
type Credential struct {
	Actor kernel.Actor
	// LastUsedAt is the stored last use of an API token (nil for sessions or a fresh token).
	LastUsedAt *time.Time
	// ExpiresAt is when a session ends (nil for an API token, which does not).
	ExpiresAt *time.Time
}

// SetupState is the instance's first-owner setup.
type SetupState struct {
	CodeHash  string // SHA-256 hex of the pending setup code, "" when none
	Completed bool
}

// UserDisabled is the in-transaction event published when a person is disabled; subscribers
// run inside the same Unit of Work (kernel.TxBus).
type UserDisabled struct{ UserID kernel.ID }

// Store is the identity repository port (implemented in storage/identity.go). Writes must run
// inside a Unit of Work; reads outside one use the read pool.
type Store interface {
	// SetupState reads the instance row.
	SetupState(ctx context.Context) (SetupState, error)
	// SetSetupCode stores the digest of a new setup code, replacing an older one.
	SetSetupCode(ctx context.Context, hash string) error
	// CompleteSetup sets setup_completed_at and clears the setup code.
	CompleteSetup(ctx context.Context, at time.Time) error
	// ActiveOwners counts the active owners.
	ActiveOwners(ctx context.Context) (int, error)

	// CreatePrincipal inserts u; handleKey is the case-folded handle. Errors: conflict (handle).
	CreatePrincipal(ctx context.Context, u User, handleKey string) error
	// SetPassword stores (or replaces) the password hash of a principal.
	SetPassword(ctx context.Context, principalID kernel.ID, hash string, at time.Time) error
	// Principal returns the principal with id. Errors: not_found.
	Principal(ctx context.Context, id kernel.ID) (User, error)
	// People lists people in id order after the id after (exclusive), at most limit.
	People(ctx context.Context, after kernel.ID, limit int) ([]User, error)
	// DisablePrincipal sets status disabled. Errors: not_found.
	DisablePrincipal(ctx context.Context, id kernel.ID, at time.Time) error
	// EnablePrincipal sets status active and clears disabled_at. Errors: not_found.
	EnablePrincipal(ctx context.Context, id kernel.ID, at time.Time) error
	// LoginCredential returns the principal with the case-folded handle and its password hash.
	// Errors: not_found (no such handle or no local password).
	LoginCredential(ctx context.Context, handleKey string) (User, string, error)

	// CreateSession inserts s.
	CreateSession(ctx context.Context, s Session) error
	// RevokeSession marks the session revoked; revoking a revoked one is a no-op.
	RevokeSession(ctx context.Context, id kernel.ID, at time.Time) error
	// RevokeSessions revokes every live session of a principal.
	RevokeSessions(ctx context.Context, principalID kernel.ID, at time.Time) error
	// LiveSessions lists the ids of the sessions of a principal that are neither revoked nor
	// expired at now, in id order. Errors: only the database's.
	LiveSessions(ctx context.Context, principalID kernel.ID, now time.Time) ([]kernel.ID, error)
	// SessionCredential resolves a session digest to its actor when the session is neither
	// revoked nor expired at now and its principal is active. Errors: not_found.
	SessionCredential(ctx context.Context, hash string, now time.Time) (Credential, error)

	// CreateToken inserts t (with its TokenHash).
	CreateToken(ctx context.Context, t Token) error
	// Tokens lists the live tokens of a principal, in id order.
	Tokens(ctx context.Context, principalID kernel.ID) ([]Token, error)
	// Token returns a live token. Errors: not_found (also when revoked).
	Token(ctx context.Context, id kernel.ID) (Token, error)
	// RevokeToken marks a token revoked. Errors: not_found.
	RevokeToken(ctx context.Context, id kernel.ID, at time.Time) error
	// RevokeTokens revokes every live token of a principal.
	RevokeTokens(ctx context.Context, principalID kernel.ID, at time.Time) error
	// TouchToken sets last_used_at.
	TouchToken(ctx context.Context, id kernel.ID, at time.Time) error
	// TokenCredential resolves an API token digest to its actor when the token is live and its
	// principal is active. Errors: not_found.
	TokenCredential(ctx context.Context, hash string) (Credential, error)
}

// PasswordHasher hashes and checks passwords (implemented by appliance/passwords, argon2id).
// Hash and Verify are deliberately slow; never call them inside a Unit of Work.
type PasswordHasher interface {
	// Hash returns an encoded hash of password with a fresh salt.
	Hash(password string) (string, error)
	// Verify reports whether password matches hash; an error means hash is unreadable.
	Verify(hash, password string) (bool, error)
	// NeedsRehash reports that hash was made with weaker parameters than the current ones.
	NeedsRehash(hash string) bool
}

// Limits of the input, in characters; the names' limits are those of app/kernel/names.
const (
	MaxHandleLen      = names.MaxHandle
	MaxDisplayNameLen = names.MaxDisplayName
	MinPasswordBytes  = 8
	MaxPasswordBytes  = 1024
	MaxTokenNameLen   = names.MaxTokenName
)

// HandleKey is the case-folded handle that uniqueness and login use.
func HandleKey(handle string) string { return strings.ToLower(handle) }

// ValidateHandle checks 1–32 characters of [a-z0-9_.-] (upper-case letters are accepted and
// compared case-insensitively): names.Handle.
func ValidateHandle(h string) error { return names.Handle(h) }

// ValidateDisplayName checks a display name of 1–64 characters by the rule of every name
// (names.Name: NFC, no control, bidirectional or invisible characters) and returns it as it
// is kept, without surrounding white space.
func ValidateDisplayName(n string) (string, error) {
	return names.Name("display_name", n, names.MaxDisplayName)
}

// ValidatePassword checks 8–1024 bytes.
func ValidatePassword(p string) error {
	if len(p) < MinPasswordBytes || len(p) > MaxPasswordBytes {
		return kernel.Invalid("password", "password must be %d to %d bytes", MinPasswordBytes, MaxPasswordBytes)
	}
	return nil
}
