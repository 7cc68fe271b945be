package agents

import (
	"context"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// Deps are the ports the service uses; Bus may be nil. There is no clock: the times of an agent
// are its principal's, which identity sets.
type Deps struct {
	Store      Store
	Principals Principals
	UoW        kernel.UnitOfWork
	Events     kernel.EventLog
	Authz      kernel.Authorizer
	Bus        *kernel.TxBus
}

// Service holds the use cases of agents.
type Service struct {
	store      Store
	principals Principals
	uow        kernel.UnitOfWork
	events     kernel.EventLog
	authz      kernel.Authorizer
	bus        *kernel.TxBus
}

// New returns the agents service.
func New(d Deps) *Service {
	if d.Store == nil || d.Principals == nil || d.UoW == nil || d.Events == nil || d.Authz == nil {
		panic("agents: New needs Store, Principals, UoW, Events and Authz")
	}
	return &Service{store: d.Store, principals: d.Principals, uow: d.UoW, events: d.Events, authz: d.Authz, bus: d.Bus}
}

var instanceResource = kernel.Resource{Kind: kernel.ResInstance}

// Create creates an agent (agent.create, owners only): its principal and first API token through
// Principals, its agents row, its consumer's cursor and the event agent.created, in one Unit of
// Work. The cursor starts at the creation, not at the agent's first connection: a mention in the
// meantime reaches the agent when it connects. It returns the agent and the token's value, which
// is shown only here. Bad input changes nothing.
// Errors: unauthenticated, forbidden, validation_failed (handle, display_name, description),
// conflict (handle taken, by a person or an agent).
func (s *Service) Create(ctx context.Context, actor kernel.Actor, in NewAgent) (Agent, string, error) {
	if err := s.authz.Authorize(ctx, actor, ActAgentCreate, instanceResource); err != nil {
		return Agent{}, "", err
	}
	in, err := in.validate()
	if err != nil {
		return Agent{}, "", err
	}
	var a Agent
	var token string
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		u, value, err := s.principals.CreateAgentPrincipal(ctx, in.Handle, in.DisplayName)
		if err != nil {
			return err
		}
		a = Agent{Description: in.Description, CreatedBy: actor.ID}.fromPrincipal(u)
		if err := s.store.CreateAgent(ctx, a); err != nil {
			return err
		}
		if err := s.store.StartConsumer(ctx, a.ID); err != nil {
			return err
		}
		token = value
		s.events.Append(ctx, EvAgentCreated.Event(kernel.Event{SubjectID: a.ID, ActorID: actor.ID}, a))
		return nil
	})
	if err != nil {
		return Agent{}, "", err
	}
	return a, token, nil
}

// List returns one page of the agents in id order (agent.read, any person) and whether more lie
// beyond it. Errors: unauthenticated, forbidden (an agent or an app), validation_failed (page).
func (s *Service) List(ctx context.Context, actor kernel.Actor, p chat.Page) ([]Agent, bool, error) {
	if err := s.authz.Authorize(ctx, actor, ActAgentRead, instanceResource); err != nil {
		return nil, false, err
	}
	p, err := p.Normalize()
	if err != nil {
		return nil, false, err
	}
	return s.store.Agents(ctx, p)
}

// Get returns one agent (agent.read, any person). Errors: unauthenticated, forbidden, not_found.
func (s *Service) Get(ctx context.Context, actor kernel.Actor, id kernel.ID) (Agent, error) {
	if err := s.authz.Authorize(ctx, actor, ActAgentRead, kernel.Resource{Kind: kernel.ResPrincipal, ID: id}); err != nil {
		return Agent{}, err
	}
	return s.store.Agent(ctx, id)
}

// Disable disables an agent (agent.disable, owners only): its API tokens stop authenticating at
// once, AgentDisabled is published in the Unit of Work and agent.updated appended, from which the
// gateway closes the agent's connections (4004). Its grants, tokens and the channels it operates
// stay, so that Enable gives it back as it was. Disabling a disabled agent changes nothing.
// Errors: unauthenticated, forbidden, not_found.
func (s *Service) Disable(ctx context.Context, actor kernel.Actor, id kernel.ID) (Agent, error) {
	return s.setStatus(ctx, actor, ActAgentDisable, id, StatusDisabled)
}

// Enable makes a disabled agent active again (agent.enable, owners only), with the tokens, grants
// and channels it had, and appends agent.updated. Enabling an active agent changes nothing.
// Errors: unauthenticated, forbidden, not_found.
func (s *Service) Enable(ctx context.Context, actor kernel.Actor, id kernel.ID) (Agent, error) {
	return s.setStatus(ctx, actor, ActAgentEnable, id, StatusActive)
}

func (s *Service) setStatus(ctx context.Context, actor kernel.Actor, action kernel.Action, id kernel.ID, status string) (Agent, error) {
	if err := s.authz.Authorize(ctx, actor, action, kernel.Resource{Kind: kernel.ResPrincipal, ID: id}); err != nil {
		return Agent{}, err
	}
	var out Agent
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		a, err := s.store.Agent(ctx, id)
		if err != nil {
			return err
		}
		if a.Status == status {
			out = a
			return nil
		}
		u, err := s.principals.SetAgentStatus(ctx, id, status)
		if err != nil {
			return err
		}
		a = a.fromPrincipal(u)
		if status == StatusDisabled {
			if err := kernel.Publish(ctx, s.bus, AgentDisabled{AgentID: id, ActorID: actor.ID}); err != nil {
				return err
			}
		}
		s.events.Append(ctx, EvAgentUpdated.Event(kernel.Event{SubjectID: id, ActorID: actor.ID}, a))
		out = a
		return nil
	})
	return out, err
}

// ResetToken gives the agent a new API token and revokes its others (agent.token.reset, owners
// only), for a token that leaked or was lost: the agent's connections close with 4004 and it
// connects again with the new token, shown once. The consumer's cursor belongs to the agent, not
// to a token: the new token resumes where the old one acknowledged. Errors: unauthenticated,
// forbidden, not_found.
func (s *Service) ResetToken(ctx context.Context, actor kernel.Actor, id kernel.ID) (Agent, string, error) {
	if err := s.authz.Authorize(ctx, actor, ActAgentTokenReset, kernel.Resource{Kind: kernel.ResPrincipal, ID: id}); err != nil {
		return Agent{}, "", err
	}
	var a Agent
	var token string
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		if a, err = s.store.Agent(ctx, id); err != nil {
			return err
		}
		token, err = s.principals.ResetAgentToken(ctx, actor.ID, id)
		return err
	})
	if err != nil {
		return Agent{}, "", err
	}
	return a, token, nil
}
