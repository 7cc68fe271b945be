package chat

import (
	"context"

	"bothy.dev/bothy/app/kernel"
)

// ArchiveChannel archives a channel (channel.update: manage on the channel or its space, the
// right that renames it). An archived channel is gone from every list and read: its id answers
// not_found like a channel that never was, so it can be neither changed nor archived again. Its
// rows (threads, messages, grants) stay in the database. It appends channel.archived.
// Errors: not_found (no such channel, archived already, or invisible to actor), forbidden.
func (s *Service) ArchiveChannel(ctx context.Context, actor kernel.Actor, id kernel.ID) (Channel, error) {
	var c Channel
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		if c, err = s.channel(ctx, actor, ActChannelUpdate, id); err != nil {
			return err
		}
		now := s.now()
		c.UpdatedAt, c.ArchivedAt = now, &now
		if err := s.store.ArchiveChannel(ctx, c); err != nil {
			return err
		}
		s.events.Append(ctx, EvChannelArchived.Event(kernel.Event{Scope: kernel.Scope{SpaceID: c.SpaceID, ChannelID: c.ID},
			SubjectID: c.ID, ActorID: actor.ID}, c))
		return nil
	})
	if err == nil {
		// The cached thread refs of this node would still let a message into the channel's
		// threads; the store no longer answers them. The other nodes drop theirs when their
		// log tail brings them channel.archived (Observe).
		s.forgetRefs()
	}
	return c, err
}

// Observe takes the events of the log as the log tail hands them on every node: a channel
// archived on any node makes this one forget its cached thread refs, so that no message gets
// into the archived channel's threads through it either.
func (s *Service) Observe(e kernel.LoggedEvent) {
	if e.Type == EvChannelArchived.Name || e.Type == EvSpaceArchived.Name {
		s.forgetRefs()
	}
}

// forgetRefs drops every cached thread ref (an archive is rare; the cache fills again as
// messages come).
func (s *Service) forgetRefs() {
	s.refs.Clear()
	s.refsLen.Store(0)
}

// ArchiveSpace archives a space and every channel in it (space.update: manage on the space, the
// right that renames it), like ArchiveChannel does one: they are gone from every list and read,
// their rows stay. It appends space.archived. Errors: not_found (no such space, archived
// already, or invisible to actor), forbidden.
func (s *Service) ArchiveSpace(ctx context.Context, actor kernel.Actor, id kernel.ID) (Space, error) {
	var sp Space
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		var err error
		if sp, err = s.space(ctx, actor, ActSpaceUpdate, id); err != nil {
			return err
		}
		now := s.now()
		sp.UpdatedAt, sp.ArchivedAt = now, &now
		if err := s.store.ArchiveSpace(ctx, sp); err != nil {
			return err
		}
		s.events.Append(ctx, EvSpaceArchived.Event(kernel.Event{Scope: kernel.Scope{SpaceID: sp.ID},
			SubjectID: sp.ID, ActorID: actor.ID}, sp))
		return nil
	})
	if err == nil {
		s.forgetRefs()
	}
	return sp, err
}
