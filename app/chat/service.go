package chat

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// Deps are what the chat use cases need; all are required except Clock.
type Deps struct {
	Store      Store
	Principals Principals
	UoW        kernel.UnitOfWork
	Events     kernel.EventLog
	Authz      kernel.Authorizer
	Scoper     kernel.Scoper
	Clock      kernel.Clock
}

// Service holds the use cases of chat and implements Threads.
type Service struct {
	store      Store
	principals Principals
	uow        kernel.UnitOfWork
	events     kernel.EventLog
	authz      kernel.Authorizer
	scoper     kernel.Scoper
	clock      kernel.Clock

	refs    sync.Map // kernel.ID → Thread (place only); see ThreadRef
	refsLen atomic.Int64
}

// maxThreadRefs bounds the thread places kept in memory (about 200 bytes each).
const maxThreadRefs = 100_000

var _ Threads = (*Service)(nil)

// New returns the chat service.
func New(d Deps) *Service {
	if d.Store == nil || d.Principals == nil || d.UoW == nil || d.Events == nil || d.Authz == nil || d.Scoper == nil {
		panic("chat: missing dependency")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	return &Service{store: d.Store, principals: d.Principals, uow: d.UoW, events: d.Events, authz: d.Authz,
		scoper: d.Scoper, clock: d.Clock}
}

// now is the clock's time at the precision the store keeps, so that what a write answers equals
// what a later read returns.
func (s *Service) now() time.Time { return s.clock.Now().UTC().Truncate(time.Microsecond) }

// CreateSpace creates a space named name (action space.create on the instance).
// Errors: unauthenticated, forbidden, validation_failed.
func (s *Service) CreateSpace(ctx context.Context, actor kernel.Actor, name string) (Space, error) {
	var sp Space
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		if err := s.authz.Authorize(ctx, actor, ActSpaceCreate, kernel.Resource{Kind: kernel.ResInstance}); err != nil {
			return err
		}
		n, err := CleanName("name", name, MaxNameLen)
		if err != nil {
			return err
		}
		now := s.now()
		sp = Space{ID: kernel.NewID(), Name: n, CreatedBy: actor.ID, CreatedAt: now, UpdatedAt: now}
		if err := s.store.CreateSpace(ctx, sp); err != nil {
			return err
		}
		s.events.Append(ctx, EvSpaceCreated.Event(kernel.Event{Scope: kernel.Scope{SpaceID: sp.ID},
			SubjectID: sp.ID, ActorID: actor.ID}, sp))
		return nil
	})
	return sp, err
}

// ListSpaces returns the spaces actor may read (space.read), by id.
// Errors: unauthenticated.
func (s *Service) ListSpaces(ctx context.Context, actor kernel.Actor) ([]Space, error) {
	vis, err := s.scoper.Visible(ctx, actor, ActSpaceRead)
	if err != nil {
		return nil, err
	}
	all, err := s.store.Spaces(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Space, 0, len(all))
	for _, sp := range all {
		if vis.Space(sp.ID) {
			out = append(out, sp)
		}
	}
	return out, nil
}

// GetSpace returns one space (space.read). Errors: not_found, unauthenticated.
func (s *Service) GetSpace(ctx context.Context, actor kernel.Actor, id kernel.ID) (Space, error) {
	return s.space(ctx, actor, ActSpaceRead, id)
}

// space loads a space and checks action on it: the preamble of the use cases on one space.
func (s *Service) space(ctx context.Context, actor kernel.Actor, action kernel.Action, id kernel.ID) (Space, error) {
	sp, err := s.store.Space(ctx, id)
	if err != nil {
		return Space{}, err
	}
	if err := s.authz.Authorize(ctx, actor, action, sp.Resource()); err != nil {
		return Space{}, err
	}
	return sp, nil
}

// channel loads a channel and checks action on it: the preamble of the use cases on one
// channel.
func (s *Service) channel(ctx context.Context, actor kernel.Actor, action kernel.Action, id kernel.ID) (Channel, error) {
	c, err := s.store.Channel(ctx, id)
	if err != nil {
		return Channel{}, err
	}
	if err := s.authz.Authorize(ctx, actor, action, c.Resource()); err != nil {
		return Channel{}, err
	}
	return c, nil
}

// patchText sets *field to the cleaned value of a patch's member when the patch sets it (in is
// not nil), and reports whether that changed it. name is the member's name in errors.
func patchText(field, in *string, name string, maxLen int, clean func(field, s string, maxLen int) (string, error)) (bool, error) {
	if in == nil {
		return false, nil
	}
	v, err := clean(name, *in, maxLen)
	if err != nil {
		return false, err
	}
	changed := v != *field
	*field = v
	return changed, nil
}

// SpacePatch changes the fields that are set.
type SpacePatch struct {
	Name *string
}

// UpdateSpace applies p to a space (space.update). A patch that changes nothing answers the
// space as it is and appends no event. Errors: not_found, forbidden, validation_failed.
func (s *Service) UpdateSpace(ctx context.Context, actor kernel.Actor, id kernel.ID, p SpacePatch) (Space, error) {
	var sp Space
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		if sp, err = s.space(ctx, actor, ActSpaceUpdate, id); err != nil {
			return err
		}
		changed, err := patchText(&sp.Name, p.Name, "name", MaxNameLen, CleanName)
		if err != nil {
			return err
		}
		if !changed {
			return nil
		}
		sp.UpdatedAt = s.now()
		if err := s.store.UpdateSpace(ctx, sp); err != nil {
			return err
		}
		s.events.Append(ctx, EvSpaceUpdated.Event(kernel.Event{Scope: kernel.Scope{SpaceID: sp.ID},
			SubjectID: sp.ID, ActorID: actor.ID}, sp))
		return nil
	})
	return sp, err
}

// NewChannel is the input of CreateChannel.
type NewChannel struct {
	Name  string
	Topic string
}

// CreateChannel creates a channel of kind "channel" in a space, with its main thread, in one
// Unit of Work (channel.create on the space). It appends channel.created and then
// thread.created. Errors: not_found, forbidden, validation_failed.
func (s *Service) CreateChannel(ctx context.Context, actor kernel.Actor, spaceID kernel.ID, in NewChannel) (Channel, error) {
	var ch Channel
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		sp, err := s.space(ctx, actor, ActChannelCreate, spaceID)
		if err != nil {
			return err
		}
		name, err := CleanName("name", in.Name, MaxNameLen)
		if err != nil {
			return err
		}
		topic, err := CleanOptional("topic", in.Topic, MaxTopicLen)
		if err != nil {
			return err
		}
		now := s.now()
		ch = Channel{ID: kernel.NewID(), SpaceID: sp.ID, Name: name, Kind: KindChannel, Topic: topic,
			CreatedBy: actor.ID, CreatedAt: now, UpdatedAt: now}
		main := Thread{ID: kernel.NewID(), ChannelID: ch.ID, SpaceID: sp.ID, IsMain: true, CreatedBy: actor.ID,
			CreatedAt: now, UpdatedAt: now, ChannelKind: ch.Kind}
		ch.MainThreadID = main.ID
		if err := s.store.CreateChannel(ctx, ch); err != nil {
			return err
		}
		if err := s.store.CreateThread(ctx, main); err != nil {
			return err
		}
		s.events.Append(ctx, EvChannelCreated.Event(kernel.Event{Scope: kernel.Scope{SpaceID: sp.ID, ChannelID: ch.ID},
			SubjectID: ch.ID, ActorID: actor.ID}, ch))
		s.events.Append(ctx, EvThreadCreated.Event(kernel.Event{Scope: main.Scope(),
			SubjectID: main.ID, ActorID: actor.ID}, main))
		return nil
	})
	return ch, err
}

// ListChannels returns the channels of a space that actor may read: the space needs
// space.read, each channel channel.read. Errors: not_found, unauthenticated.
func (s *Service) ListChannels(ctx context.Context, actor kernel.Actor, spaceID kernel.ID) ([]Channel, error) {
	sp, err := s.space(ctx, actor, ActSpaceRead, spaceID)
	if err != nil {
		return nil, err
	}
	vis, err := s.scoper.Visible(ctx, actor, ActChannelRead)
	if err != nil {
		return nil, err
	}
	all, err := s.store.Channels(ctx, sp.ID)
	if err != nil {
		return nil, err
	}
	out := make([]Channel, 0, len(all))
	for _, c := range all {
		if vis.Channel(c.ID) {
			out = append(out, c)
		}
	}
	return out, nil
}

// GetChannel returns one channel (channel.read). Errors: not_found, unauthenticated.
func (s *Service) GetChannel(ctx context.Context, actor kernel.Actor, id kernel.ID) (Channel, error) {
	return s.channel(ctx, actor, ActChannelRead, id)
}

// ChannelPatch changes the fields that are set; an empty topic clears it.
type ChannelPatch struct {
	Name  *string
	Topic *string
}

// UpdateChannel applies p to a channel (channel.update). A patch that changes nothing answers
// the channel as it is and appends no event. Errors: not_found, forbidden, validation_failed.
func (s *Service) UpdateChannel(ctx context.Context, actor kernel.Actor, id kernel.ID, p ChannelPatch) (Channel, error) {
	var c Channel
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		if c, err = s.channel(ctx, actor, ActChannelUpdate, id); err != nil {
			return err
		}
		renamed, err := patchText(&c.Name, p.Name, "name", MaxNameLen, CleanName)
		if err != nil {
			return err
		}
		retopiced, err := patchText(&c.Topic, p.Topic, "topic", MaxTopicLen, CleanOptional)
		if err != nil {
			return err
		}
		if !renamed && !retopiced {
			return nil
		}
		c.UpdatedAt = s.now()
		if err := s.store.UpdateChannel(ctx, c); err != nil {
			return err
		}
		s.events.Append(ctx, EvChannelUpdated.Event(kernel.Event{Scope: kernel.Scope{SpaceID: c.SpaceID, ChannelID: c.ID},
			SubjectID: c.ID, ActorID: actor.ID}, c))
		return nil
	})
	return c, err
}

// SetOperator names agentID the operator of a channel (channel.operator.set: manage on the
// channel or its space): the agent invoked by every new thread there. The operator must be an
// active agent that may already read the channel (a grant of view or more on it or its space):
// naming the operator grants nothing, and an agent that cannot read a channel could not answer in
// it. Rights can change later (a grant revoked, the agent disabled): the operator stays named,
// and whoever invokes it checks again at that moment. Naming the operator the channel has answers
// the channel as it is and appends nothing; otherwise channel.updated carries the new
// operator_id. Errors: not_found (the channel, or invisible to actor), forbidden,
// validation_failed on agent_id (no such principal, not an agent, disabled, or it cannot read the
// channel).
func (s *Service) SetOperator(ctx context.Context, actor kernel.Actor, channelID, agentID kernel.ID) (Channel, error) {
	return s.setOperator(ctx, actor, channelID, agentID)
}

// ClearOperator removes the operator of a channel (channel.operator.set) and appends
// channel.updated; a channel without one answers as it is and appends nothing.
// Errors: not_found, forbidden.
func (s *Service) ClearOperator(ctx context.Context, actor kernel.Actor, channelID kernel.ID) (Channel, error) {
	return s.setOperator(ctx, actor, channelID, kernel.NilID)
}

var errNoSuchAgent = kernel.Invalid("agent_id", "no active agent has this id")

func (s *Service) setOperator(ctx context.Context, actor kernel.Actor, channelID, agentID kernel.ID) (Channel, error) {
	var c Channel
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		if c, err = s.channel(ctx, actor, ActChannelOperatorSet, channelID); err != nil {
			return err
		}
		if !agentID.IsZero() {
			if err := s.checkOperator(ctx, c, agentID); err != nil {
				return err
			}
		}
		if (c.OperatorID == nil && agentID.IsZero()) || (c.OperatorID != nil && *c.OperatorID == agentID) {
			return nil
		}
		c.OperatorID = nil
		if !agentID.IsZero() {
			c.OperatorID = &agentID
		}
		c.UpdatedAt = s.now()
		if err := s.store.SetOperator(ctx, c); err != nil {
			return err
		}
		s.events.Append(ctx, EvChannelUpdated.Event(kernel.Event{Scope: kernel.Scope{SpaceID: c.SpaceID, ChannelID: c.ID},
			SubjectID: c.ID, ActorID: actor.ID}, c))
		return nil
	})
	return c, err
}

// checkOperator holds that agentID is an active agent that may read c.
func (s *Service) checkOperator(ctx context.Context, c Channel, agentID kernel.ID) error {
	p, err := s.principals.PrincipalRef(ctx, agentID)
	switch {
	case kernel.IsCode(err, kernel.CodeNotFound):
		return errNoSuchAgent
	case err != nil:
		return err
	case p.Kind != kernel.KindAgent || !p.Active:
		return errNoSuchAgent
	}
	agent := kernel.Actor{ID: p.ID, Kind: kernel.KindAgent}
	err = s.authz.Authorize(ctx, agent, ActChannelRead, c.Resource())
	switch kernel.CodeOf(err) {
	case kernel.Code{}:
		return nil
	case kernel.CodeNotFound, kernel.CodeForbidden, kernel.CodeUnauthenticated:
		return kernel.Invalid("agent_id", "the agent cannot read this channel: grant it view (or more) on the channel or its space first")
	}
	return err
}

// ListThreads returns one page of a channel's threads (thread.read on the channel) and whether
// more lie beyond it. Errors: not_found, validation_failed (page), unauthenticated.
func (s *Service) ListThreads(ctx context.Context, actor kernel.Actor, channelID kernel.ID, p Page) ([]Thread, bool, error) {
	c, err := s.channel(ctx, actor, ActThreadRead, channelID)
	if err != nil {
		return nil, false, err
	}
	if p, err = p.Normalize(); err != nil {
		return nil, false, err
	}
	return s.store.Threads(ctx, c.ID, p)
}

// GetThread returns one thread (thread.read on its channel). Errors: not_found, unauthenticated.
func (s *Service) GetThread(ctx context.Context, actor kernel.Actor, id kernel.ID) (Thread, error) {
	th, err := s.store.Thread(ctx, id)
	if err != nil {
		return Thread{}, err
	}
	if err := s.authz.Authorize(ctx, actor, ActThreadRead, th.Resource()); err != nil {
		return Thread{}, err
	}
	return th, nil
}

// ThreadPatch changes the fields that are set; an empty title clears it.
type ThreadPatch struct {
	Title *string
}

// UpdateThread applies p to a thread (thread.update: its author while it sees the channel, or a
// manager of the channel) and appends thread.updated. A main thread has no title of its own (the
// channel's name is its title). A patch that changes nothing answers the thread as it is and
// appends no event. Errors: not_found, forbidden, main_thread, validation_failed.
func (s *Service) UpdateThread(ctx context.Context, actor kernel.Actor, id kernel.ID, p ThreadPatch) (Thread, error) {
	var th Thread
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		if th, err = s.store.Thread(ctx, id); err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActThreadUpdate, th.Resource()); err != nil {
			return err
		}
		if th.IsMain {
			return kernel.Errorf(CodeMainThread, "a channel's main thread has no title: rename the channel instead")
		}
		changed, err := patchText(&th.Title, p.Title, "title", MaxTitleLen, CleanOptional)
		if err != nil || !changed {
			return err
		}
		th.UpdatedAt = s.now()
		if err := s.store.UpdateThread(ctx, th); err != nil {
			return err
		}
		s.events.Append(ctx, EvThreadUpdated.Event(kernel.Event{Scope: th.Scope(), SubjectID: th.ID, ActorID: actor.ID}, th))
		return nil
	})
	return th, err
}

// Channel implements Threads.
func (s *Service) Channel(ctx context.Context, id kernel.ID) (Channel, error) {
	return s.store.Channel(ctx, id)
}

// Thread implements Threads.
func (s *Service) Thread(ctx context.Context, id kernel.ID) (Thread, error) {
	return s.store.Thread(ctx, id)
}

// ThreadRef implements Threads.
func (s *Service) ThreadRef(ctx context.Context, id kernel.ID) (Thread, error) {
	if v, ok := s.refs.Load(id); ok {
		return v.(Thread), nil
	}
	th, err := s.store.Thread(ctx, id)
	if err != nil {
		return Thread{}, err
	}
	ref := Thread{ID: th.ID, ChannelID: th.ChannelID, SpaceID: th.SpaceID, ChannelKind: th.ChannelKind, IsMain: th.IsMain,
		CreatedBy: th.CreatedBy, ParentMessageID: th.ParentMessageID}
	if s.refsLen.Add(1) > maxThreadRefs {
		s.refs.Clear()
		s.refsLen.Store(1)
	}
	s.refs.Store(id, ref)
	return ref, nil
}

// CreateThread implements Threads.
func (s *Service) CreateThread(ctx context.Context, actorID kernel.ID, ch Channel, title string) (Thread, error) {
	t, err := CleanOptional("title", title, MaxTitleLen)
	if err != nil {
		return Thread{}, err
	}
	now := s.now()
	th := Thread{ID: kernel.NewID(), ChannelID: ch.ID, SpaceID: ch.SpaceID, Title: t, CreatedBy: actorID,
		CreatedAt: now, UpdatedAt: now, ChannelKind: ch.Kind}
	if err := s.store.CreateThread(ctx, th); err != nil {
		return Thread{}, err
	}
	s.events.Append(ctx, EvThreadCreated.Event(kernel.Event{Scope: th.Scope(),
		SubjectID: th.ID, ActorID: actorID}, th))
	return th, nil
}

// CreateThreadUnder implements Threads.
func (s *Service) CreateThreadUnder(ctx context.Context, actorID kernel.ID, ch Channel, parent kernel.ID) (Thread, bool, error) {
	now := s.now()
	th := Thread{ID: kernel.NewID(), ChannelID: ch.ID, SpaceID: ch.SpaceID, CreatedBy: actorID, CreatedAt: now,
		UpdatedAt: now, ParentMessageID: &parent, ChannelKind: ch.Kind}
	inserted, err := s.store.CreateThreadUnder(ctx, th)
	if err != nil {
		return Thread{}, false, err
	}
	if !inserted {
		th, err := s.store.ThreadByParent(ctx, parent)
		return th, false, err
	}
	s.events.Append(ctx, EvThreadCreated.Event(kernel.Event{Scope: th.Scope(),
		SubjectID: th.ID, ActorID: actorID}, th))
	return th, true, nil
}

// ThreadByParent implements Threads.
func (s *Service) ThreadByParent(ctx context.Context, messageID kernel.ID) (Thread, error) {
	return s.store.ThreadByParent(ctx, messageID)
}

// AppendToThread implements Threads.
func (s *Service) AppendToThread(ctx context.Context, id, messageID kernel.ID, at time.Time) error {
	return s.store.BumpThread(ctx, id, 1, messageID, at)
}

// RemoveFromThread implements Threads.
func (s *Service) RemoveFromThread(ctx context.Context, id kernel.ID) error {
	return s.store.BumpThread(ctx, id, -1, kernel.NilID, time.Time{})
}
