package kernel

import "context"

// PrincipalKind says what kind of principal acts.
type PrincipalKind string

const (
	KindAnonymous PrincipalKind = ""
	KindPerson    PrincipalKind = "person"
	KindAgent     PrincipalKind = "agent"
	KindApp       PrincipalKind = "app"
)

// Actor is the principal of a request, as the authenticator found it. It is read once per
// request from the database, so a disabled principal or a revoked token stops at once.
type Actor struct {
	ID      ID
	Kind    PrincipalKind
	Handle  string
	IsOwner bool
	// SessionID is set when the actor came with a session token; TokenID with an API token.
	SessionID ID
	TokenID   ID
}

// Anonymous is the actor of a request without credentials.
var Anonymous = Actor{}

// Authenticated reports whether the actor is a principal.
func (a Actor) Authenticated() bool { return !a.ID.IsZero() }

type actorKey struct{}

// WithActor puts the actor of the request into ctx.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor of the request, or Anonymous.
func ActorFrom(ctx context.Context) Actor {
	a, _ := ctx.Value(actorKey{}).(Actor)
	return a
}
