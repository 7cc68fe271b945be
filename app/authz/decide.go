package authz

import (
	"context"
	"fmt"

	"bothy.dev/bothy/app/kernel"
)

// rule is how one action is decided.
type rule struct {
	kind ruleKind
	// need is the level a channel- or space-level rule requires.
	need Level
}

type ruleKind int

const (
	ruleAnyone             ruleKind = iota + 1 // anonymous included
	ruleAuthenticated                          // any principal
	ruleSelf                                   // a principal on what it holds itself (Resource.OwnerID)
	ruleOwner                                  // owners only
	ruleSpaceRead                              // owner, or any grant on the space or one of its channels
	ruleSpaceLevel                             // owner, or need on the space itself
	ruleChannelLevel                           // need on the channel or its space (owners: manage on non-DM)
	ruleAuthorPost                             // the author with post
	ruleAuthorPostOrManage                     // the author with post, or manage (owners: manage on non-DM)
)

// rules maps every action authz knows to its rule. An action missing here is a programming error
// and answers internal_error (cause unknown_action), never an allow.
var rules = map[kernel.Action]rule{
	kernel.ActInstanceBootstrap: {kind: ruleAnyone},
	kernel.ActLogin:             {kind: ruleAnyone},
	kernel.ActDiscoveryRead:     {kind: ruleAnyone}, // the API description and the setup page

	kernel.ActLogout:        {kind: ruleAuthenticated},
	kernel.ActSelfRead:      {kind: ruleAuthenticated},
	kernel.ActUserRead:      {kind: ruleAuthenticated},
	kernel.ActEventsCatchUp: {kind: ruleAuthenticated},

	kernel.ActTokenList:   {kind: ruleSelf},
	kernel.ActTokenCreate: {kind: ruleSelf},
	kernel.ActTokenRevoke: {kind: ruleSelf},

	kernel.ActUserCreate:  {kind: ruleOwner},
	kernel.ActUserDisable: {kind: ruleOwner},
	kernel.ActSpaceCreate: {kind: ruleOwner},

	kernel.ActSpaceRead:     {kind: ruleSpaceRead},
	kernel.ActSpaceUpdate:   {kind: ruleSpaceLevel, need: LevelManage},
	kernel.ActChannelCreate: {kind: ruleSpaceLevel, need: LevelManage},

	kernel.ActChannelRead:   {kind: ruleChannelLevel, need: LevelView},
	kernel.ActThreadRead:    {kind: ruleChannelLevel, need: LevelView},
	kernel.ActMessageRead:   {kind: ruleChannelLevel, need: LevelView},
	kernel.ActRevisionsRead: {kind: ruleChannelLevel, need: LevelView},

	kernel.ActChannelUpdate: {kind: ruleChannelLevel, need: LevelManage},
	kernel.ActGrantRead:     {kind: ruleChannelLevel, need: LevelManage},
	kernel.ActGrantCreate:   {kind: ruleChannelLevel, need: LevelManage},
	kernel.ActGrantRevoke:   {kind: ruleChannelLevel, need: LevelManage},

	kernel.ActThreadCreate:   {kind: ruleChannelLevel, need: LevelPost},
	kernel.ActMessageCreate:  {kind: ruleChannelLevel, need: LevelPost},
	kernel.ActReactionAdd:    {kind: ruleChannelLevel, need: LevelPost},
	kernel.ActReactionRemove: {kind: ruleChannelLevel, need: LevelPost},

	kernel.ActMessageUpdate: {kind: ruleAuthorPost},
	kernel.ActMessageDelete: {kind: ruleAuthorPostOrManage},
}

// Known reports whether authz has a rule for action; the HTTP router can refuse to start with a
// route whose action is unknown.
func Known(action kernel.Action) bool { _, ok := rules[action]; return ok }

var (
	errUnauthenticated = &kernel.Error{Code: kernel.CodeUnauthenticated, Message: "authentication required"}
	errForbidden       = &kernel.Error{Code: kernel.CodeForbidden, Message: "not allowed"}
)

// Authorize decides whether actor may perform action on r (kernel.Authorizer). It answers nil,
// unauthenticated (no principal where one is needed), not_found (actor may not see r) or
// forbidden (actor sees r but may not do this). Every call is recorded in the check log.
//
// Grant-based decisions cost one indexed query (the channel and its space in one IN list).
// Owners hold manage on every non-DM space and channel without a grant; a rule that needs the
// author (message.update) still needs the author.
func (s *Service) Authorize(ctx context.Context, actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
	kernel.RecordCheck(ctx, action)
	ru, ok := rules[action]
	if !ok {
		return fmt.Errorf("authz: unknown action %q", action)
	}
	if ru.kind == ruleAnyone {
		return nil
	}
	if !actor.Authenticated() {
		return errUnauthenticated
	}
	switch ru.kind {
	case ruleAuthenticated:
		return nil
	case ruleSelf:
		if r.OwnerID.IsZero() || r.OwnerID != actor.ID {
			return kernel.ErrNotFound
		}
		return nil
	case ruleOwner:
		if !actor.IsOwner {
			return errForbidden
		}
		return nil
	case ruleSpaceRead, ruleSpaceLevel:
		return s.decideSpace(ctx, actor, ru, r)
	}

	level, visible, err := s.effectiveLevel(ctx, actor, r)
	if err != nil {
		return err
	}
	if !visible {
		return kernel.ErrNotFound
	}
	author := !r.OwnerID.IsZero() && r.OwnerID == actor.ID
	var allowed bool
	switch ru.kind {
	case ruleChannelLevel:
		allowed = level >= ru.need
	case ruleAuthorPost:
		allowed = author && level >= LevelPost
	case ruleAuthorPostOrManage:
		allowed = author && level >= LevelPost || level >= LevelManage
	default:
		return fmt.Errorf("authz: action %q has no decision", action)
	}
	if !allowed {
		return errForbidden
	}
	return nil
}

// effectiveLevel is actor's level on the channel of r, and whether actor may see it at all. On
// a channel: an owner's implicit manage unless it is a DM, else the highest grant on the channel
// or (not for DMs) its space. On a space (a resource without a channel): see spaceLevel.
func (s *Service) effectiveLevel(ctx context.Context, actor kernel.Actor, r kernel.Resource) (Level, bool, error) {
	channelID, spaceID := r.ChannelID, r.SpaceID
	if r.Kind == kernel.ResChannel && channelID.IsZero() {
		channelID = r.ID
	}
	if r.Kind == kernel.ResSpace && spaceID.IsZero() {
		spaceID = r.ID
	}
	if channelID.IsZero() {
		if spaceID.IsZero() {
			return LevelNone, false, fmt.Errorf("authz: resource %s %s has neither channel nor space", r.Kind, r.ID)
		}
		return s.spaceLevel(ctx, actor, spaceID)
	}
	dm := r.ChannelKind == ChannelKindDM
	if actor.IsOwner && !dm {
		return LevelManage, true, nil
	}
	var level Level
	var err error
	if dm || spaceID.IsZero() {
		level, err = s.store.MaxLevel(ctx, actor.ID, channelID)
	} else {
		level, err = s.store.MaxLevel(ctx, actor.ID, channelID, spaceID)
	}
	return level, level > LevelNone, err
}

// spaceLevel is actor's level on the space itself and whether actor sees the space: owners
// always (manage); others when they hold a grant on the space or on one of its channels.
func (s *Service) spaceLevel(ctx context.Context, actor kernel.Actor, spaceID kernel.ID) (Level, bool, error) {
	if actor.IsOwner {
		return LevelManage, true, nil
	}
	return s.store.SpaceAccess(ctx, actor.ID, spaceID)
}

func (s *Service) decideSpace(ctx context.Context, actor kernel.Actor, ru rule, r kernel.Resource) error {
	spaceID := r.SpaceID
	if spaceID.IsZero() && r.Kind == kernel.ResSpace {
		spaceID = r.ID
	}
	if spaceID.IsZero() {
		return fmt.Errorf("authz: resource %s %s has no space", r.Kind, r.ID)
	}
	level, visible, err := s.spaceLevel(ctx, actor, spaceID)
	switch {
	case err != nil:
		return err
	case !visible:
		return kernel.ErrNotFound
	case ru.kind == ruleSpaceRead, level >= ru.need:
		return nil
	default:
		return errForbidden
	}
}

// Visible returns what actor may read (kernel.Scoper): for an owner everything but the DMs it
// holds no grant on; for others the spaces and channels of their grants, a space grant expanded
// to the space's non-DM channels. Two queries at most, whatever the number of channels.
func (s *Service) Visible(ctx context.Context, actor kernel.Actor, action kernel.Action) (kernel.Visibility, error) {
	kernel.RecordCheck(ctx, action)
	if !actor.Authenticated() {
		return nil, errUnauthenticated
	}
	v := &visibility{all: actor.IsOwner}
	if actor.IsOwner {
		hidden, err := s.store.HiddenDMs(ctx, actor.ID)
		if err != nil {
			return nil, err
		}
		v.hidden = setOf(hidden)
		return v, nil
	}
	spaces, channels, err := s.store.VisibleTo(ctx, actor.ID)
	if err != nil {
		return nil, err
	}
	v.spaces, v.channels = setOf(spaces), setOf(channels)
	return v, nil
}

type visibility struct {
	all      bool
	hidden   map[kernel.ID]struct{} // DMs an owner is not in
	spaces   map[kernel.ID]struct{}
	channels map[kernel.ID]struct{}
}

func (v *visibility) All() bool { return v.all }

func (v *visibility) Space(id kernel.ID) bool {
	if v.all {
		return true
	}
	_, ok := v.spaces[id]
	return ok
}

func (v *visibility) Channel(id kernel.ID) bool {
	if v.all {
		_, hidden := v.hidden[id]
		return !hidden
	}
	_, ok := v.channels[id]
	return ok
}

func setOf(ids []kernel.ID) map[kernel.ID]struct{} {
	m := make(map[kernel.ID]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	return m
}
