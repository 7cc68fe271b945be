package dms

import (
	"context"
	"slices"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// Deps are what the dms use cases need; all are required except Clock.
type Deps struct {
	Store      Store
	Chat       chat.Store
	Principals chat.Principals
	Grants     Grants
	UoW        kernel.UnitOfWork
	Events     kernel.EventLog
	Authz      kernel.Authorizer
	Clock      kernel.Clock
}

// Service holds the use cases of dms.
type Service struct {
	d Deps
}

// New returns the dms service.
func New(d Deps) *Service {
	if d.Store == nil || d.Chat == nil || d.Principals == nil || d.Grants == nil || d.UoW == nil || d.Events == nil || d.Authz == nil {
		panic("dms: missing dependency")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	return &Service{d: d}
}

func (s *Service) now() time.Time { return s.d.Clock.Now().UTC().Truncate(time.Microsecond) }

// Create answers the DM between actor and others (dm.create), creating it when the set has none
// yet; created reports a new DM. The caller is always a participant; others must be 1 to
// MaxOthers principals that exist, are active and that actor may see (an agent sees no other
// agent). The same set answers the same DM, also under concurrent requests: the key of the set
// is unique in the database. Errors: validation_failed (none or too many others),
// not_found (an unknown, disabled or invisible participant: nothing is created).
func (s *Service) Create(ctx context.Context, actor kernel.Actor, others []kernel.ID) (dm DM, created bool, err error) {
	err = s.d.UoW.Do(ctx, func(ctx context.Context) error {
		created = false
		if err := s.d.Authz.Authorize(ctx, actor, ActDMCreate, kernel.Resource{Kind: kernel.ResInstance}); err != nil {
			return err
		}
		set := []kernel.ID{actor.ID}
		for _, id := range others {
			if id.IsZero() {
				return kernel.Invalid("participant_ids", "participant_ids must be ids")
			}
			if !slices.Contains(set, id) {
				set = append(set, id)
			}
		}
		switch n := len(set) - 1; {
		case n < 1:
			return kernel.Invalid("participant_ids", "a DM needs at least one participant besides you")
		case n > MaxOthers:
			return kernel.Invalid("participant_ids", "a DM has at most %d participants besides you", MaxOthers)
		}
		for _, id := range set[1:] {
			p, err := s.d.Principals.PrincipalRef(ctx, id)
			if kernel.IsCode(err, kernel.CodeNotFound) || err == nil && (!p.Active || actor.Kind == kernel.KindAgent && p.Kind == kernel.KindAgent) {
				return kernel.ErrNotFound
			}
			if err != nil {
				return err
			}
		}
		key := Key(set)
		existing, err := s.d.Store.ByKey(ctx, key)
		if err == nil {
			dm = existing
			return nil
		}
		if !kernel.IsCode(err, kernel.CodeNotFound) {
			return err
		}
		now := s.now()
		if err := s.d.Store.EnsureSpace(ctx, actor.ID, now); err != nil {
			return err
		}
		ch := chat.Channel{ID: kernel.NewID(), SpaceID: SpaceID, Kind: chat.KindDM, CreatedBy: actor.ID, CreatedAt: now, UpdatedAt: now}
		main := chat.Thread{ID: kernel.NewID(), ChannelID: ch.ID, SpaceID: SpaceID, IsMain: true, CreatedBy: actor.ID,
			CreatedAt: now, UpdatedAt: now, ChannelKind: chat.KindDM}
		ch.MainThreadID = main.ID
		if err := s.d.Chat.CreateChannel(ctx, ch); err != nil {
			return err
		}
		if err := s.d.Chat.CreateThread(ctx, main); err != nil {
			return err
		}
		if err := s.d.Store.Create(ctx, ch.ID, key, now); err != nil {
			return err
		}
		// The channel and its main thread first, as every channel is born, then the grants, then
		// dm.created: by its seq the participants hold their grants, so it reaches them.
		s.d.Events.Append(ctx, chat.EvChannelCreated.Event(kernel.Event{Scope: kernel.Scope{SpaceID: SpaceID, ChannelID: ch.ID},
			SubjectID: ch.ID, ActorID: actor.ID}, ch))
		s.d.Events.Append(ctx, chat.EvThreadCreated.Event(kernel.Event{Scope: main.Scope(), SubjectID: main.ID, ActorID: actor.ID}, main))
		sorted := slices.Clone(set)
		slices.Sort(sorted)
		dm = DM{ID: ch.ID, Kind: chat.KindDM, SpaceID: SpaceID, MainThreadID: main.ID, Participants: sorted,
			CreatedBy: actor.ID, CreatedAt: now}
		for _, id := range sorted {
			if err := s.d.Grants.GrantParticipant(ctx, actor.ID, dm.Resource(), id); err != nil {
				return err
			}
		}
		s.d.Events.Append(ctx, EvDMCreated.Event(kernel.Event{Scope: dm.Scope(), SubjectID: dm.ID, ActorID: actor.ID}, dm))
		created = true
		return nil
	})
	if err != nil {
		return DM{}, false, err
	}
	return dm, created, nil
}

// List returns actor's DMs, newest activity first (dm.list).
func (s *Service) List(ctx context.Context, actor kernel.Actor) ([]DM, error) {
	if err := s.d.Authz.Authorize(ctx, actor, ActDMList, kernel.Resource{Kind: kernel.ResInstance}); err != nil {
		return nil, err
	}
	return s.d.Store.For(ctx, actor.ID)
}

// Get returns one of actor's DMs (channel.read on it). Errors: not_found.
func (s *Service) Get(ctx context.Context, actor kernel.Actor, id kernel.ID) (DM, error) {
	dm, err := s.d.Store.DM(ctx, id)
	if err != nil {
		return DM{}, err
	}
	if err := s.d.Authz.Authorize(ctx, actor, chat.ActChannelRead, dm.Resource()); err != nil {
		return DM{}, err
	}
	return dm, nil
}

// Leave takes actor out of a group DM (dm.leave, a participant): its grant on the channel goes,
// and the DM's key becomes the remaining set unless that set has a DM of its own already.
// Errors: not_found (no such DM, or actor is no participant), dm_cannot_leave (a 1:1 DM).
func (s *Service) Leave(ctx context.Context, actor kernel.Actor, id kernel.ID) (DM, error) {
	var out DM
	err := s.d.UoW.Do(ctx, func(ctx context.Context) error {
		dm, err := s.d.Store.DM(ctx, id)
		if err != nil {
			return err
		}
		if err := s.d.Authz.Authorize(ctx, actor, ActDMLeave, dm.Resource()); err != nil {
			return err
		}
		if !slices.Contains(dm.Participants, actor.ID) {
			return kernel.ErrNotFound
		}
		if len(dm.Participants) < 3 {
			return kernel.Errorf(CodeCannotLeave, "a DM between two cannot be left; only a group DM can")
		}
		if err := s.d.Grants.RevokeParticipant(ctx, actor.ID, dm.Resource(), actor.ID); err != nil {
			return err
		}
		dm.Participants = slices.DeleteFunc(slices.Clone(dm.Participants), func(p kernel.ID) bool { return p == actor.ID })
		key := Key(dm.Participants)
		if _, err := s.d.Store.ByKey(ctx, key); err == nil {
			key = ""
		} else if !kernel.IsCode(err, kernel.CodeNotFound) {
			return err
		}
		if err := s.d.Store.SetKey(ctx, dm.ID, key); err != nil {
			return err
		}
		s.d.Events.Append(ctx, EvDMParticipantLeft.Event(kernel.Event{Scope: dm.Scope(), SubjectID: dm.ID, ActorID: actor.ID},
			ParticipantLeft{ChannelID: dm.ID, PrincipalID: actor.ID, Participants: dm.Participants}))
		out = dm
		return nil
	})
	return out, err
}

// Participants returns the participants of the DM channelID, for the runs trigger: ok is false
// when channelID is no DM.
func (s *Service) Participants(ctx context.Context, channelID kernel.ID) ([]kernel.ID, bool, error) {
	dm, err := s.d.Store.DM(ctx, channelID)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return dm.Participants, true, nil
}
