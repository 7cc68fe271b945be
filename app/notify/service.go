package notify

import (
	"context"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// Threads is the part of chat that notify reads: where a channel and a thread live. *chat.Service
// implements it.
type Threads interface {
	// Channel loads a channel. Errors: not_found.
	Channel(ctx context.Context, id kernel.ID) (chat.Channel, error)
	// Thread loads a thread with its channel kind. Errors: not_found.
	Thread(ctx context.Context, id kernel.ID) (chat.Thread, error)
	// ThreadRef returns where a thread lives, from memory after the first read. Errors: not_found.
	ThreadRef(ctx context.Context, id kernel.ID) (chat.Thread, error)
}

// Deps are what the notify use cases need; all are required except Clock.
type Deps struct {
	Store   Store
	Threads Threads
	UoW     kernel.UnitOfWork
	Events  kernel.EventLog
	Authz   kernel.Authorizer
	Clock   kernel.Clock
}

// Service holds a person's levels and thread subscriptions, and makes the authors of a thread
// follow it (OnMessagePosted).
type Service struct {
	d Deps
}

// New returns the notify service.
func New(d Deps) *Service {
	if d.Store == nil || d.Threads == nil || d.UoW == nil || d.Events == nil || d.Authz == nil {
		panic("notify: missing dependency")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	return &Service{d: d}
}

func (s *Service) now() time.Time { return s.d.Clock.Now().UTC().Truncate(time.Microsecond) }

// channel loads a channel and checks action on it.
func (s *Service) channel(ctx context.Context, actor kernel.Actor, action kernel.Action, id kernel.ID) (chat.Channel, error) {
	ch, err := s.d.Threads.Channel(ctx, id)
	if err != nil {
		return chat.Channel{}, err
	}
	return ch, s.d.Authz.Authorize(ctx, actor, action, ch.Resource())
}

// thread loads a thread, checks action on it and refuses a main thread, which is followed as its
// channel (Level).
func (s *Service) thread(ctx context.Context, actor kernel.Actor, action kernel.Action, id kernel.ID) (chat.Thread, error) {
	th, err := s.d.Threads.Thread(ctx, id)
	if err != nil {
		return chat.Thread{}, err
	}
	if err := s.d.Authz.Authorize(ctx, actor, action, th.Resource()); err != nil {
		return chat.Thread{}, err
	}
	if th.IsMain {
		return chat.Thread{}, kernel.Errorf(chat.CodeMainThread, "a channel's main thread follows the channel's notification level: set that instead")
	}
	return th, nil
}

// Level returns actor's notification level for a channel or a DM (notification.level.read: the
// actor may read it), the default when the actor chose none. Errors: not_found, unauthenticated.
func (s *Service) Level(ctx context.Context, actor kernel.Actor, channelID kernel.ID) (ChannelLevel, error) {
	ch, err := s.channel(ctx, actor, ActLevelRead, channelID)
	if err != nil {
		return ChannelLevel{}, err
	}
	l, ok, err := s.d.Store.Level(ctx, actor.ID, ch.ID)
	if err != nil {
		return ChannelLevel{}, err
	}
	if !ok {
		return ChannelLevel{ChannelID: ch.ID, Level: DefaultChannelLevel(ch.Kind == chat.KindDM), Default: true}, nil
	}
	return ChannelLevel{ChannelID: ch.ID, Level: l}, nil
}

// SetLevel stores actor's notification level for a channel or a DM (notification.level.set: the
// actor may read it). Errors: not_found, unauthenticated, validation_failed (level).
func (s *Service) SetLevel(ctx context.Context, actor kernel.Actor, channelID kernel.ID, level string) (ChannelLevel, error) {
	var out ChannelLevel
	err := s.d.UoW.Do(ctx, func(ctx context.Context) error {
		ch, err := s.channel(ctx, actor, ActLevelSet, channelID)
		if err != nil {
			return err
		}
		l, err := ParseLevel(level)
		if err != nil {
			return err
		}
		out = ChannelLevel{ChannelID: ch.ID, Level: l}
		if err := s.d.Store.SetLevel(ctx, actor.ID, ch.ID, l, s.now()); err != nil {
			return err
		}
		s.d.Events.Append(ctx, EvLevelUpdated.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: actor.ID}, SubjectID: ch.ID, ActorID: actor.ID}, out))
		return nil
	})
	return out, err
}

// Subscription returns actor's level for a thread (thread.subscription.read: the actor may read
// it): all when the actor follows it, the default (mentions) when there is no choice. A main
// thread has none. Errors: not_found, unauthenticated, main_thread.
func (s *Service) Subscription(ctx context.Context, actor kernel.Actor, threadID kernel.ID) (Subscription, error) {
	th, err := s.thread(ctx, actor, ActSubscriptionRead, threadID)
	if err != nil {
		return Subscription{}, err
	}
	l, ok, err := s.d.Store.Subscription(ctx, actor.ID, th.ID)
	if err != nil {
		return Subscription{}, err
	}
	if !ok {
		return Subscription{ThreadID: th.ID, Level: DefaultSubscription, Default: true}, nil
	}
	return Subscription{ThreadID: th.ID, Level: l}, nil
}

// SetSubscription stores actor's level for a thread (thread.subscription.set: the actor may read
// it); writing in the thread later keeps the choice. Errors: not_found, unauthenticated,
// main_thread, validation_failed (level).
func (s *Service) SetSubscription(ctx context.Context, actor kernel.Actor, threadID kernel.ID, level string) (Subscription, error) {
	var out Subscription
	err := s.d.UoW.Do(ctx, func(ctx context.Context) error {
		th, err := s.thread(ctx, actor, ActSubscriptionSet, threadID)
		if err != nil {
			return err
		}
		l, err := ParseLevel(level)
		if err != nil {
			return err
		}
		out = Subscription{ThreadID: th.ID, Level: l}
		if err := s.d.Store.SetSubscription(ctx, actor.ID, th.ID, l, s.now()); err != nil {
			return err
		}
		s.d.Events.Append(ctx, EvSubscriptionUpdated.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: actor.ID}, SubjectID: th.ID, ActorID: actor.ID}, out))
		return nil
	})
	return out, err
}

// OnMessagePosted is subscribed to messaging.MessagePosted: a person who writes in a thread of its
// own follows it, and so does the author of the message a new thread starts under, unless they
// chose another level. A message of a main thread (the hot path) costs a lookup in memory.
func (s *Service) OnMessagePosted(ctx context.Context, ev messaging.MessagePosted) error {
	th, err := s.d.Threads.ThreadRef(ctx, ev.Message.ThreadID)
	if err != nil || th.IsMain {
		return err
	}
	var author, parent kernel.ID
	if ev.Author.Kind == kernel.KindPerson {
		author = ev.Message.AuthorID
	}
	if ev.NewThread && th.ParentMessageID != nil {
		parent = *th.ParentMessageID
	}
	if author.IsZero() && parent.IsZero() {
		return nil
	}
	return s.d.Store.Follow(ctx, th.ID, author, parent, s.now())
}
