package messaging

import (
	"context"

	"bothy.dev/bothy/app/kernel"
)

// MaxPinsPerChannel bounds the pins of a channel. Pins are the few messages a channel keeps at
// hand, shown whole in its header: the bound lets the list be one read of at most this many rows,
// without a cursor for clients to follow.
const MaxPinsPerChannel = 100

// CodePinLimit refuses a pin in a channel that holds MaxPinsPerChannel pins already; unpinning
// one makes room.
var CodePinLimit = kernel.NewCode("pin_limit_reached", kernel.ClassConflict)

// PinMessage pins a message of a channel, in its main thread or a thread under it
// (message.pin: whoever may post in the channel, or the message's author while they see it). It
// is idempotent: a pinned message answers its pin as it is, created false, and nothing is
// appended; a new pin appends message.pinned. Errors: not_found, forbidden, message_deleted,
// pin_limit_reached.
func (s *Service) PinMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) (p Pin, created bool, err error) {
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		p, created = Pin{}, false
		m, err := s.store.Message(ctx, id)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActMessagePin, m.Resource()); err != nil {
			return err
		}
		if m.Deleted {
			return errDeleted
		}
		switch p, err = s.store.Pin(ctx, m.ID); {
		case err == nil:
			return nil
		case !kernel.IsCode(err, kernel.CodeNotFound):
			return err
		}
		n, err := s.store.CountPins(ctx, m.ChannelID)
		if err != nil {
			return err
		}
		if n >= MaxPinsPerChannel {
			return kernel.Errorf(CodePinLimit, "the channel holds %d pins, the most it may: unpin one first", n)
		}
		p = Pin{MessageID: m.ID, ChannelID: m.ChannelID, ThreadID: m.ThreadID, PinnedBy: actor.ID, PinnedAt: s.now()}
		inserted, err := s.store.InsertPin(ctx, p)
		if err != nil {
			return err
		}
		if !inserted { // a concurrent pin on an engine with several writers came first
			p, err = s.store.Pin(ctx, m.ID)
			return err
		}
		created = true
		s.events.Append(ctx, EvMessagePinned.Event(kernel.Event{Scope: m.Scope(), SubjectID: m.ID, ActorID: actor.ID}, p))
		return nil
	})
	return p, created, err
}

// UnpinMessage takes the pin off a message (message.unpin, the rule of message.pin). It is
// idempotent: only a call that removed a pin appends message.unpinned, with the pin as it was.
// A deleted message has no pin (its deletion removed it), so unpinning it removes nothing.
// Errors: not_found, forbidden.
func (s *Service) UnpinMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) (removed bool, err error) {
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		m, err := s.store.Message(ctx, id)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActMessageUnpin, m.Resource()); err != nil {
			return err
		}
		removed, err = s.unpin(ctx, actor, m)
		return err
	})
	return removed, err
}

// unpin removes the pin of m, if any, and appends message.unpinned for it.
func (s *Service) unpin(ctx context.Context, actor kernel.Actor, m Message) (bool, error) {
	p, removed, err := s.store.DeletePin(ctx, m.ID)
	if err != nil || !removed {
		return false, err
	}
	s.events.Append(ctx, EvMessageUnpinned.Event(kernel.Event{Scope: m.Scope(), SubjectID: m.ID, ActorID: actor.ID}, p))
	return true, nil
}

// ListPins returns the pins of a channel with their messages, newest pin first, all of them
// (MaxPinsPerChannel bounds them); message.read on the channel. Errors: not_found,
// unauthenticated.
func (s *Service) ListPins(ctx context.Context, actor kernel.Actor, channelID kernel.ID) ([]PinnedMessage, error) {
	ch, err := s.threads.Channel(ctx, channelID)
	if err != nil {
		return nil, err
	}
	if err := s.authz.Authorize(ctx, actor, ActMessageRead, ch.Resource()); err != nil {
		return nil, err
	}
	out, err := s.store.Pins(ctx, ch.ID, MaxPinsPerChannel)
	if out == nil && err == nil {
		out = []PinnedMessage{}
	}
	return out, err
}
