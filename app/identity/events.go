package identity

import "bothy.dev/bothy/app/kernel"

// The durable events of identity. user.created and user.updated carry the person (User);
// session.revoked and token.revoked are personal events of the principal whose credential ended.
var (
	EvUserCreated    = kernel.DefineEvent[User]("user.created")
	EvUserUpdated    = kernel.DefineEvent[User]("user.updated")
	EvSessionRevoked = kernel.DefineEvent[SessionRevoked]("session.revoked")
	EvTokenRevoked   = kernel.DefineEvent[TokenRevoked]("token.revoked")
)

// SessionRevoked is the payload of session.revoked: the session that ended (a logout, or all of a
// person's sessions ended by an owner).
type SessionRevoked struct {
	SessionID kernel.ID `json:"session_id"`
}

// TokenRevoked is the payload of token.revoked: the API token that was revoked.
type TokenRevoked struct {
	TokenID kernel.ID `json:"token_id"`
}
