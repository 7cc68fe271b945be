package authz

import (
	"context"

	"bothy.dev/bothy/app/kernel"
)

// Service decides (Authorize, Visible) and manages grants. It holds the warm permission cache
// (Warm, Observe, Delivery).
type Service struct {
	store     Store
	structure StructureSource
	uow       kernel.UnitOfWork
	events    kernel.EventLog
	clock     kernel.Clock
	cache     *cache
	delivery  *Delivery
}

var (
	_ kernel.Authorizer = (*Service)(nil)
	_ kernel.Scoper     = (*Service)(nil)
)

// Deps is what the authz service needs; Clock may be nil (the system clock).
type Deps struct {
	Store     Store
	Structure StructureSource
	UoW       kernel.UnitOfWork
	Events    kernel.EventLog
	Clock     kernel.Clock
}

// New returns the authz service.
func New(d Deps) *Service {
	if d.Store == nil || d.Structure == nil || d.UoW == nil || d.Events == nil {
		panic("authz: New needs Store, Structure, UoW and Events")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	c := &cache{}
	return &Service{store: d.Store, structure: d.Structure, uow: d.UoW, events: d.Events, clock: d.Clock, cache: c, delivery: &Delivery{c: c}}
}

// EvGrantChanged is the durable event of a grant given, changed or revoked on a space or a channel.
var EvGrantChanged = kernel.DefineEvent[GrantChanged]("grant.changed")

// GrantChanged is the payload of grant.changed: one of ChannelID and SpaceID names the resource;
// Level is null for a revoke.
type GrantChanged struct {
	ChannelID   kernel.ID `json:"channel_id,omitempty"`
	SpaceID     kernel.ID `json:"space_id,omitempty"`
	PrincipalID kernel.ID `json:"principal_id"`
	Level       *string   `json:"level"`
}

// target is the resource a grant hangs on, as loaded from the structure.
type target struct {
	kind      kernel.ResourceKind
	id        kernel.ID
	spaceID   kernel.ID
	channelID kernel.ID
	chanKind  string
}

func (t target) resource() kernel.Resource {
	return kernel.Resource{Kind: t.kind, ID: t.id, SpaceID: t.spaceID, ChannelID: t.channelID, ChannelKind: t.chanKind}
}

func (s *Service) loadChannel(ctx context.Context, id kernel.ID) (target, error) {
	if id.IsZero() {
		return target{}, kernel.ErrNotFound
	}
	ch, err := s.structure.Channel(ctx, id)
	if err != nil {
		return target{}, err
	}
	return target{kind: kernel.ResChannel, id: ch.ID, spaceID: ch.SpaceID, channelID: ch.ID, chanKind: ch.Kind}, nil
}

func (s *Service) loadSpace(ctx context.Context, id kernel.ID) (target, error) {
	if id.IsZero() {
		return target{}, kernel.ErrNotFound
	}
	ok, err := s.structure.SpaceExists(ctx, id)
	if err != nil {
		return target{}, err
	}
	if !ok {
		return target{}, kernel.ErrNotFound
	}
	return target{kind: kernel.ResSpace, id: id, spaceID: id}, nil
}

// CreateGrant gives principal level on a channel, or changes the level it holds there (grant.create,
// manage on the channel or its space); created reports a new grant rather than a changed one.
// Errors: not_found (no such channel, or invisible to actor), forbidden, validation_failed (level;
// principal_id unknown or disabled).
func (s *Service) CreateGrant(ctx context.Context, actor kernel.Actor, channelID, principalID kernel.ID, level Level) (g Grant, created bool, err error) {
	return s.setGrant(ctx, actor, principalID, level, func(ctx context.Context) (target, error) { return s.loadChannel(ctx, channelID) })
}

// CreateSpaceGrant gives principal level on a space and so on all its non-DM channels (grant.create,
// manage on the space). Errors as CreateGrant.
func (s *Service) CreateSpaceGrant(ctx context.Context, actor kernel.Actor, spaceID, principalID kernel.ID, level Level) (g Grant, created bool, err error) {
	return s.setGrant(ctx, actor, principalID, level, func(ctx context.Context) (target, error) { return s.loadSpace(ctx, spaceID) })
}

func (s *Service) setGrant(ctx context.Context, actor kernel.Actor, principalID kernel.ID, level Level, load func(context.Context) (target, error)) (Grant, bool, error) {
	var out Grant
	var created bool
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		created = false
		t, err := load(ctx)
		if err != nil {
			return err
		}
		if err := s.Authorize(ctx, actor, ActGrantCreate, t.resource()); err != nil {
			return err
		}
		if !level.Valid() {
			return kernel.Invalid("level", "level must be one of view, post, invoke, manage")
		}
		if principalID.IsZero() {
			return kernel.Invalid("principal_id", "principal_id is required")
		}
		active, err := s.store.PrincipalActive(ctx, principalID)
		if err != nil {
			return err
		}
		if !active {
			return kernel.Invalid("principal_id", "no active principal with this id")
		}
		old, err := s.store.Grant(ctx, t.id, principalID)
		switch {
		case err == nil && old.Level == level:
			out = old // nothing changes: no event, no new permission version
			out.SpaceID = t.spaceID
			return nil
		case err != nil && !kernel.IsCode(err, kernel.CodeNotFound):
			return err
		}
		created = err != nil
		g, err := s.store.UpsertGrant(ctx, Grant{ResourceKind: t.kind, ResourceID: t.id, PrincipalID: principalID,
			Level: level, CreatedBy: actor.ID, CreatedAt: s.clock.Now()})
		if err != nil {
			return err
		}
		g.SpaceID = t.spaceID
		out = g
		name := level.String()
		return s.changed(ctx, actor, t, principalID, &name)
	})
	return out, created, err
}

// changed appends grant.changed and bumps the permission version, in the caller's Unit of Work.
func (s *Service) changed(ctx context.Context, actor kernel.Actor, t target, principalID kernel.ID, level *string) error {
	p := GrantChanged{PrincipalID: principalID, Level: level}
	scope := kernel.Scope{SpaceID: t.spaceID}
	if t.kind == kernel.ResChannel {
		p.ChannelID, scope.ChannelID = t.id, t.id
	} else {
		p.SpaceID = t.id
	}
	s.events.Append(ctx, EvGrantChanged.Event(kernel.Event{Scope: scope, SubjectID: t.id, ActorID: actor.ID}, p))
	return s.store.BumpPermissionVersion(ctx)
}

// ListGrants returns the grants on a channel (grant.read, manage on the channel or its space).
// It only reads, so it runs on the read pool instead of queueing for the writer.
// Errors: not_found, forbidden.
func (s *Service) ListGrants(ctx context.Context, actor kernel.Actor, channelID kernel.ID) ([]Grant, error) {
	t, err := s.loadChannel(ctx, channelID)
	if err != nil {
		return nil, err
	}
	if err := s.Authorize(ctx, actor, ActGrantRead, t.resource()); err != nil {
		return nil, err
	}
	gs, err := s.store.ListGrants(ctx, t.id)
	for i := range gs {
		gs[i].SpaceID = t.spaceID
	}
	return gs, err
}

// RevokeGrant removes principal's grant on a channel (grant.revoke, manage on the channel or its
// space). Errors: not_found (no such channel or grant, or invisible), forbidden.
func (s *Service) RevokeGrant(ctx context.Context, actor kernel.Actor, channelID, principalID kernel.ID) error {
	return s.revoke(ctx, actor, principalID, func(ctx context.Context) (target, error) { return s.loadChannel(ctx, channelID) })
}

// RevokeSpaceGrant removes principal's grant on a space. Errors as RevokeGrant.
func (s *Service) RevokeSpaceGrant(ctx context.Context, actor kernel.Actor, spaceID, principalID kernel.ID) error {
	return s.revoke(ctx, actor, principalID, func(ctx context.Context) (target, error) { return s.loadSpace(ctx, spaceID) })
}

func (s *Service) revoke(ctx context.Context, actor kernel.Actor, principalID kernel.ID, load func(context.Context) (target, error)) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		t, err := load(ctx)
		if err != nil {
			return err
		}
		if err := s.Authorize(ctx, actor, ActGrantRevoke, t.resource()); err != nil {
			return err
		}
		if principalID.IsZero() {
			return kernel.ErrNotFound
		}
		if err := s.store.DeleteGrant(ctx, t.id, principalID); err != nil {
			return err
		}
		return s.changed(ctx, actor, t, principalID, nil)
	})
}

// GrantParticipant gives principalID invoke on the DM channel ch (dms.Grants), in the caller's
// Unit of Work, with its grant.changed event and a new permission version. It decides no
// action: the DM's use case has decided dm.create.
func (s *Service) GrantParticipant(ctx context.Context, actorID kernel.ID, ch kernel.Resource, principalID kernel.ID) error {
	if _, err := s.store.UpsertGrant(ctx, Grant{ResourceKind: kernel.ResChannel, ResourceID: ch.ID, PrincipalID: principalID,
		Level: LevelInvoke, CreatedBy: actorID, CreatedAt: s.clock.Now()}); err != nil {
		return err
	}
	name := LevelInvoke.String()
	return s.changed(ctx, kernel.Actor{ID: actorID}, participantTarget(ch), principalID, &name)
}

// RevokeParticipant removes principalID's grant on the DM channel ch (dms.Grants), in the
// caller's Unit of Work, with its grant.changed event. It decides no action: the DM's use case
// has decided dm.leave. Errors: not_found (no such grant).
func (s *Service) RevokeParticipant(ctx context.Context, actorID kernel.ID, ch kernel.Resource, principalID kernel.ID) error {
	if err := s.store.DeleteGrant(ctx, ch.ID, principalID); err != nil {
		return err
	}
	return s.changed(ctx, kernel.Actor{ID: actorID}, participantTarget(ch), principalID, nil)
}

func participantTarget(ch kernel.Resource) target {
	return target{kind: kernel.ResChannel, id: ch.ID, spaceID: ch.SpaceID, channelID: ch.ID, chanKind: ch.ChannelKind}
}
