package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// Interactions: a person clicks a button or picks from a select under a message an agent (or an
// app) posted (messaging's components). The click is recorded and reaches the message's author
// as the personal, durable event interaction.created, at least once like an invocation: the
// agent's consumer (the gateway and the REST poll, through Prepare) re-checks that the agent
// may still read the thread and adds an invocation token for that thread, with no run, so that
// the agent can answer in the thread (a message post) but not act for any run with it.

// ActInteractionCreate is a principal answering a message's components: whoever may post in
// its channel.
const ActInteractionCreate kernel.Action = "interaction.create"

// Error codes of interactions (HTTP 409): the component cannot be answered now.
var (
	// CodeComponentDisabled: the component is disabled (its author turned it off, for example
	// after the first answer).
	CodeComponentDisabled = kernel.NewCode("component_disabled", kernel.ClassConflict)
	// CodeComponentUnavailable: the message no longer has the component (its author removed
	// it), or the message was deleted.
	CodeComponentUnavailable = kernel.NewCode("component_unavailable", kernel.ClassConflict)
)

// EvInteractionCreated is the personal event of the message's author: someone answered one of
// its components.
var EvInteractionCreated = kernel.DefineEvent[Interaction]("interaction.created")

// Interaction is one click or pick: the answer of POST /messages/{id}/interactions (its id)
// and the payload of interaction.created.
type Interaction struct {
	ID          kernel.ID `json:"interaction_id"`
	MessageID   kernel.ID `json:"message_id"`
	ThreadID    kernel.ID `json:"thread_id"`
	ChannelID   kernel.ID `json:"channel_id"`
	SpaceID     kernel.ID `json:"space_id"`
	ComponentID string    `json:"component_id"`
	// Values are what the interaction sent: a button's value (none when it has none), a
	// select's picks in the order they were given.
	Values    []string  `json:"values"`
	UserID    kernel.ID `json:"user_id"`
	CreatedAt time.Time `json:"created_at"`
}

// NewInteraction is the input of Interact.
type NewInteraction struct {
	ComponentID string
	Values      []string
}

// MessageReader reads a message for an interaction with it; storage's messaging repository
// implements it.
type MessageReader interface {
	// Message loads a message with its components and channel kind. Errors: not_found.
	Message(ctx context.Context, id kernel.ID) (messaging.Message, error)
}

// InteractionStore keeps the interactions (table interactions).
type InteractionStore interface {
	// InsertInteraction stores i. Errors: conflict (the id exists).
	InsertInteraction(ctx context.Context, i Interaction) error
}

// InteractionDeps are what Interactions need; all but Clock are required.
type InteractionDeps struct {
	Messages MessageReader
	Store    InteractionStore
	UoW      kernel.UnitOfWork
	Events   kernel.EventLog
	Authz    kernel.Authorizer
	Clock    kernel.Clock
}

// Interactions holds the use case of answering a component. Delivering the answer is the
// Service's (Prepare), which signs its token.
type Interactions struct {
	messages MessageReader
	store    InteractionStore
	uow      kernel.UnitOfWork
	events   kernel.EventLog
	authz    kernel.Authorizer
	clock    kernel.Clock
}

// NewInteractions returns the interactions use case.
func NewInteractions(d InteractionDeps) *Interactions {
	if d.Messages == nil || d.Store == nil || d.UoW == nil || d.Events == nil || d.Authz == nil {
		panic("runs: NewInteractions needs Messages, Store, UoW, Events and Authz")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	return &Interactions{messages: d.Messages, store: d.Store, uow: d.UoW, events: d.Events, authz: d.Authz, clock: d.Clock}
}

// Interact records a person's answer to a component of a message and appends
// interaction.created to the message's author, in one Unit of Work. The person must be able to
// read the message (else not_found) and post in its channel (interaction.create, else
// forbidden); only people answer components. A disabled component answers component_disabled;
// one the message no longer has, or a deleted message, component_unavailable; values that the
// component does not take, validation_failed (messaging.CheckPicks). Errors: those, and
// unauthenticated.
func (s *Interactions) Interact(ctx context.Context, actor kernel.Actor, messageID kernel.ID, in NewInteraction) (Interaction, error) {
	if !actor.Authenticated() {
		return Interaction{}, kernel.Errorf(kernel.CodeUnauthenticated, "no principal")
	}
	var out Interaction
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		m, err := s.messages.Message(ctx, messageID)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, messaging.ActMessageRead, m.Resource()); err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActInteractionCreate, m.Resource()); err != nil {
			return err
		}
		if actor.Kind != kernel.KindPerson {
			return kernel.Errorf(kernel.CodeForbidden, "only people answer a message's components")
		}
		if in.ComponentID == "" {
			return kernel.Invalid("component_id", "component_id must name a component of the message")
		}
		if m.Deleted {
			return kernel.Errorf(CodeComponentUnavailable, "the message was deleted")
		}
		c, ok := messaging.Find(m.Components, in.ComponentID)
		if !ok {
			return kernel.Errorf(CodeComponentUnavailable, "the message has no component %q (any more)", in.ComponentID)
		}
		if c.Disabled {
			return kernel.Errorf(CodeComponentDisabled, "the component %q is disabled", in.ComponentID)
		}
		values, err := messaging.CheckPicks(c, in.Values)
		if err != nil {
			return err
		}
		out = Interaction{ID: kernel.NewID(), MessageID: m.ID, ThreadID: m.ThreadID, ChannelID: m.ChannelID,
			SpaceID: m.SpaceID, ComponentID: c.ID, Values: values, UserID: actor.ID,
			CreatedAt: s.clock.Now().UTC().Truncate(time.Microsecond)}
		if err := s.store.InsertInteraction(ctx, out); err != nil {
			return err
		}
		s.events.Append(ctx, EvInteractionCreated.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: m.AuthorID},
			SubjectID: out.ID, ActorID: actor.ID}, out))
		return nil
	})
	if err != nil {
		return Interaction{}, err
	}
	return out, nil
}

// PreparedInteraction is the data of interaction.created as Prepare delivers it to an agent:
// the logged Interaction with an invocation token for its thread (no run) and its expiry.
type PreparedInteraction struct {
	Interaction
	InvocationToken string    `json:"invocation_token"`
	ExpiresAt       time.Time `json:"expires_at"`
}

// prepareInteraction is Prepare for interaction.created: the agent must still be allowed to
// read the thread (else it is not delivered), and gets a token for it.
func (s *Service) prepareInteraction(ctx context.Context, agent kernel.Actor, e kernel.LoggedEvent) ([]byte, bool, error) {
	in, err := EvInteractionCreated.Decode(e)
	if err != nil {
		return nil, false, err
	}
	th, err := s.structure.Thread(ctx, in.ThreadID)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	reads, err := s.allowed(ctx, agent, messaging.ActMessageRead, th.Resource())
	if err != nil || !reads {
		return nil, false, err
	}
	tok, err := s.IssueInteractionToken(ctx, agent.ID, in)
	if err != nil {
		return nil, false, err
	}
	payload, err := json.Marshal(PreparedInteraction{Interaction: in, InvocationToken: tok.Token, ExpiresAt: tok.ExpiresAt})
	if err != nil {
		return nil, false, fmt.Errorf("runs: interaction.created %d: %w", e.Seq, err)
	}
	return payload, true, nil
}

// IssueInteractionToken signs an invocation token for agent in the thread of interaction in,
// with no run: Check refuses it wherever a run is wanted, and a message post into that thread
// accepts it (linking no run). It does not check permissions. Errors: internal.
func (s *Service) IssueInteractionToken(ctx context.Context, agent kernel.ID, in Interaction) (InvocationToken, error) {
	if s.keys == nil {
		return InvocationToken{}, errors.New("runs: no keyring to sign invocation tokens")
	}
	key, kid, err := s.keys.Signer(ctx)
	if err != nil {
		return InvocationToken{}, err
	}
	now := s.clock.Now()
	c := InvocationClaims{Issuer: s.issuer, Subject: agent, InteractionID: in.ID, ThreadID: in.ThreadID,
		ChannelID: in.ChannelID, IssuedAt: now.Unix(), ExpiresAt: now.Add(s.tokenTTL).Unix(), ID: kernel.NewID()}
	tok, err := Issue(key, kid, c)
	if err != nil {
		return InvocationToken{}, err
	}
	return InvocationToken{Token: tok, ExpiresAt: time.Unix(c.ExpiresAt, 0).UTC()}, nil
}
