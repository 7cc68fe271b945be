// Package agents holds the agents (see docs/runs.md): principals of kind agent that an owner creates
// with an API token, that receive grants like people, and that connect over the public API to
// work when they are invoked. It owns the agents table (through its Store port) and the durable
// events agent.created and agent.updated. An agent's principal and API tokens belong to identity,
// which agents uses through its Principals port, in the same Unit of Work.
//
// It must not import storage or net/http, must never put an agent's token in an event, an error
// or a log line, and never makes an agent an owner.
package agents

import (
	"context"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/names"
)

// Agent statuses: those of its principal.
const (
	StatusActive   = identity.StatusActive
	StatusDisabled = identity.StatusDisabled
)

// Agent is an agent as the API shows it. It is also the payload of agent.created and
// agent.updated: public fields only, never a token.
type Agent struct {
	ID          kernel.ID            `json:"id"`
	Kind        kernel.PrincipalKind `json:"kind"` // always "agent"
	Handle      string               `json:"handle"`
	DisplayName string               `json:"display_name"`
	Description string               `json:"description"`
	Status      string               `json:"status"`
	CreatedAt   time.Time            `json:"created_at"`
	CreatedBy   kernel.ID            `json:"created_by"`
	UpdatedAt   time.Time            `json:"updated_at"`
	DisabledAt  *time.Time           `json:"disabled_at"`
}

// Resource describes the agent for Authorize.
func (a Agent) Resource() kernel.Resource {
	return kernel.Resource{Kind: kernel.ResPrincipal, ID: a.ID, OwnerID: a.CreatedBy}
}

// AgentDisabled is the in-transaction event published when an agent is disabled; subscribers run
// inside the same Unit of Work (kernel.TxBus). The runs module fails the agent's runs that have
// not ended on it.
type AgentDisabled struct {
	AgentID kernel.ID
	// ActorID is the owner who disabled the agent, in whose name the subscribers log.
	ActorID kernel.ID
}

// Store is the agents repository port (implemented in storage/agents.go). Writes run inside a
// Unit of Work; reads outside one use the read pool.
type Store interface {
	// CreateAgent inserts the agents row of a, whose principal exists already (created through
	// Principals in the same Unit of Work). Errors: conflict.
	CreateAgent(ctx context.Context, a Agent) error
	// StartConsumer gives the new agent's consumer its durable cursor, just before the events of
	// the Unit of Work it runs in (the one that creates the agent): whatever is addressed to the
	// agent from its creation on, an invocation made before it ever connected for one, is
	// delivered on its first connection. It runs inside a Unit of Work only. Errors: conflict
	// (the agent has a cursor already).
	StartConsumer(ctx context.Context, id kernel.ID) error
	// Agent loads the agent with id, with the fields of its principal. Errors: not_found (also
	// for the id of a principal that is not an agent).
	Agent(ctx context.Context, id kernel.ID) (Agent, error)
	// Agents lists one page of agents in id order (chat.Page: the newest page by default) and
	// whether more lie beyond it in the direction of the page.
	Agents(ctx context.Context, p chat.Page) ([]Agent, bool, error)
	// SetCommands replaces the slash commands of agent id with cmds, in their order.
	SetCommands(ctx context.Context, id kernel.ID, cmds []Command) error
	// Commands lists the slash commands of agent id in the order it declared them (empty, never
	// nil, for none).
	Commands(ctx context.Context, id kernel.ID) ([]Command, error)
}

// Principals is the part of identity that agents uses: identity owns principals and API tokens.
// Both methods run in the caller's Unit of Work, authorize nothing and append no event.
type Principals interface {
	// CreateAgentPrincipal inserts a principal of kind agent and its first API token, and returns
	// the principal and the token's value, shown once. Errors: validation_failed (handle,
	// display_name), conflict (handle taken, by a person or an agent).
	CreateAgentPrincipal(ctx context.Context, handle, displayName string) (identity.User, string, error)
	// SetAgentStatus makes an agent's principal active or disabled and returns it; its tokens stay
	// and authenticate again once it is active. Errors: not_found, validation_failed (status).
	SetAgentStatus(ctx context.Context, id kernel.ID, status string) (identity.User, error)
	// ResetAgentToken revokes the agent's API tokens (logged as token.revoked by actorID) and
	// returns a new one's value, shown once. Errors: not_found.
	ResetAgentToken(ctx context.Context, actorID, id kernel.ID) (string, error)
}

var _ Principals = (*identity.Service)(nil)

// MaxDescriptionLen is the longest description, in characters.
const MaxDescriptionLen = names.MaxDescription

// NewAgent is the input of Create.
type NewAgent struct {
	Handle      string
	DisplayName string
	Description string
}

// validate checks the input in the order of its fields and returns it cleaned (display name and
// description trimmed). Errors: validation_failed naming the field.
func (in NewAgent) validate() (NewAgent, error) {
	if err := identity.ValidateHandle(in.Handle); err != nil {
		return in, err
	}
	name, err := identity.ValidateDisplayName(in.DisplayName)
	if err != nil {
		return in, err
	}
	desc, err := chat.CleanOptional("description", in.Description, MaxDescriptionLen)
	if err != nil {
		return in, err
	}
	in.DisplayName, in.Description = name, desc
	return in, nil
}

// fromPrincipal fills the fields of a that identity owns from its principal u.
func (a Agent) fromPrincipal(u identity.User) Agent {
	a.ID, a.Kind, a.Handle, a.DisplayName, a.Status = u.ID, u.Kind, u.Handle, u.DisplayName, u.Status
	a.CreatedAt, a.UpdatedAt, a.DisabledAt = u.CreatedAt, u.UpdatedAt, u.DisabledAt
	return a
}
