package identity

import (
	"context"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// The principals of agents. The agents module owns agents (their description, who made them,
// their events); identity owns every principal and API token. So agents creates an agent's
// principal and token, and switches its status, through the two methods below, inside its own
// Unit of Work. They authorize nothing (the caller has decided agent.create, agent.disable or
// agent.enable) and append no event: agents appends agent.created and agent.updated, which carry
// the principal's public fields, never the token.

// AgentTokenName is the name of the API token an agent is created with.
const AgentTokenName = "agent"

// CreateAgentPrincipal inserts a principal of kind agent and its first API token, in the Unit of
// Work of ctx. It returns the principal and the token's value (bothy_ and 32 random bytes), shown
// once: only its digest is stored. Handles share one namespace with people.
// Errors: validation_failed (handle, display_name), conflict (handle taken).
func (s *Service) CreateAgentPrincipal(ctx context.Context, handle, displayName string) (User, string, error) {
	if err := ValidateHandle(handle); err != nil {
		return User{}, "", err
	}
	name, err := ValidateDisplayName(displayName)
	if err != nil {
		return User{}, "", err
	}
	// At the precision the store keeps, so that the answer equals a later read.
	now := s.clock.Now().UTC().Truncate(time.Microsecond)
	u := User{ID: kernel.NewID(), Kind: kernel.KindAgent, Handle: handle, DisplayName: name, Status: StatusActive,
		CreatedAt: now, UpdatedAt: now}
	value := APITokenPrefix + randomToken(tokenBytes)
	t := Token{ID: kernel.NewID(), PrincipalID: u.ID, Name: AgentTokenName, TokenHash: digest(value), CreatedAt: now}
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		if err := s.store.CreatePrincipal(ctx, u, HandleKey(u.Handle)); err != nil {
			if kernel.IsCode(err, kernel.CodeConflict) {
				return errHandleTaken
			}
			return err
		}
		return s.store.CreateToken(ctx, t)
	})
	if err != nil {
		return User{}, "", err
	}
	return u, value, nil
}

// SetAgentStatus makes an agent's principal active or disabled (StatusActive, StatusDisabled) in
// the Unit of Work of ctx and returns it as stored. Its API tokens stay: authentication reads the
// principal's status at every request, so they stop at once while it is disabled and work again
// once it is enabled (an agent has no login session to end). Setting the status it already has
// changes nothing. Errors: not_found (no agent with this id), validation_failed (status).
func (s *Service) SetAgentStatus(ctx context.Context, id kernel.ID, status string) (User, error) {
	if status != StatusActive && status != StatusDisabled {
		return User{}, kernel.Invalid("status", "status must be active or disabled")
	}
	var out User
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		u, err := s.store.Principal(ctx, id)
		if err != nil {
			return err
		}
		if u.Kind != kernel.KindAgent {
			return kernel.ErrNotFound
		}
		if u.Status == status {
			out = u
			return nil
		}
		now := s.clock.Now().UTC().Truncate(time.Microsecond)
		if status == StatusDisabled {
			err = s.store.DisablePrincipal(ctx, id, now)
			u.DisabledAt = &now
		} else {
			err = s.store.EnablePrincipal(ctx, id, now)
			u.DisabledAt = nil
		}
		if err != nil {
			return err
		}
		u.Status, u.UpdatedAt = status, now
		out = u
		return nil
	})
	return out, err
}

// ResetAgentToken revokes every live API token of the agent id and makes a new one, in the Unit
// of Work of ctx: the owner's "reset token" when a bot's token leaked or was lost. It returns the
// new token's value, shown once. Each revoked token is logged as token.revoked (by actorID), so
// the agent's connections close with 4004 on every node. Errors: not_found (no agent with this id).
func (s *Service) ResetAgentToken(ctx context.Context, actorID, id kernel.ID) (string, error) {
	now := s.clock.Now().UTC().Truncate(time.Microsecond)
	value := APITokenPrefix + randomToken(tokenBytes)
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		u, err := s.store.Principal(ctx, id)
		if err != nil {
			return err
		}
		if u.Kind != kernel.KindAgent {
			return kernel.ErrNotFound
		}
		live, err := s.store.Tokens(ctx, id)
		if err != nil {
			return err
		}
		for _, t := range live {
			if err := s.store.RevokeToken(ctx, t.ID, now); err != nil {
				return err
			}
			s.events.Append(ctx, EvTokenRevoked.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: id},
				SubjectID: t.ID, ActorID: actorID}, TokenRevoked{TokenID: t.ID}))
		}
		return s.store.CreateToken(ctx, Token{ID: kernel.NewID(), PrincipalID: id, Name: AgentTokenName, TokenHash: digest(value), CreatedAt: now})
	})
	if err != nil {
		return "", err
	}
	return value, nil
}
