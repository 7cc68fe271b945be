package authz

import (
	"context"
	"fmt"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/dms"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/notify"
	"bothy.dev/bothy/app/push"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/app/stats"
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
	rulePerson                                 // any person (not an agent or an app)
	ruleAgent                                  // any agent
	ruleSelf                                   // a principal on what it holds itself (Resource.OwnerID)
	ruleOwner                                  // owners only
	ruleSpaceRead                              // owner, or any grant on the space or one of its channels
	ruleSpaceLevel                             // owner, or need on the space itself
	ruleChannelLevel                           // need on the channel or its space (owners: manage on non-DM)
	ruleAuthorPost                             // the author with post
	ruleAuthorPostOrManage                     // the author with post, or manage (owners: manage on non-DM)
	ruleAuthorOrManage                         // the author while it sees the channel, or manage (owners: manage on non-DM)
	ruleAuthorOrLevel                          // the author while it sees the channel, or need on the channel or its space
)

// rules maps every action authz knows to its rule. An action missing here is a programming error
// and answers internal_error (cause unknown_action), never an allow.
var rules = map[kernel.Action]rule{
	identity.ActInstanceBootstrap: {kind: ruleAnyone},
	identity.ActLogin:             {kind: ruleAnyone},
	instance.ActDiscoveryRead:     {kind: ruleAnyone}, // the API description and the setup page

	identity.ActLogout:       {kind: ruleAuthenticated},
	identity.ActSelfRead:     {kind: ruleAuthenticated},
	identity.ActSelfPassword: {kind: ruleAuthenticated},
	identity.ActUserRead:     {kind: ruleAuthenticated},
	catchup.ActEventsCatchUp: {kind: ruleAuthenticated},

	agents.ActAgentRead: {kind: rulePerson},

	// Web Push: a person's browsers; the subscriptions a person lists and deletes are their own
	// (the store answers not_found for another's).
	push.ActSubscriptionCreate: {kind: rulePerson},
	push.ActSubscriptionList:   {kind: rulePerson},
	push.ActSubscriptionDelete: {kind: rulePerson},
	push.ActVAPIDKeyRead:       {kind: rulePerson},

	catchup.ActAgentConsume: {kind: ruleAgent},
	// An agent's own slash commands.
	agents.ActAgentCommandsWrite: {kind: ruleAgent},

	identity.ActTokenList:   {kind: ruleSelf},
	identity.ActTokenCreate: {kind: ruleSelf},
	identity.ActTokenRevoke: {kind: ruleSelf},

	identity.ActUserCreate:  {kind: ruleOwner},
	identity.ActUserDisable: {kind: ruleOwner},
	chat.ActSpaceCreate:     {kind: ruleOwner},

	identity.ActUserEnable:        {kind: ruleOwner},
	identity.ActUserPasswordReset: {kind: ruleOwner},
	instance.ActInstanceUpdate:    {kind: ruleOwner},
	stats.ActStatsRead:            {kind: ruleOwner},
	instance.ActInstanceRead:      {kind: ruleAuthenticated},

	agents.ActAgentCreate:  {kind: ruleOwner},
	agents.ActAgentDisable: {kind: ruleOwner},
	agents.ActAgentEnable:  {kind: ruleOwner},

	agents.ActAgentTokenReset: {kind: ruleOwner},
	runs.ActAgentBudget:       {kind: ruleOwner},

	chat.ActSpaceRead:     {kind: ruleSpaceRead},
	chat.ActSpaceUpdate:   {kind: ruleSpaceLevel, need: LevelManage},
	chat.ActChannelCreate: {kind: ruleSpaceLevel, need: LevelManage},

	chat.ActChannelRead:        {kind: ruleChannelLevel, need: LevelView},
	chat.ActThreadRead:         {kind: ruleChannelLevel, need: LevelView},
	messaging.ActMessageRead:   {kind: ruleChannelLevel, need: LevelView},
	messaging.ActRevisionsRead: {kind: ruleChannelLevel, need: LevelView},

	chat.ActChannelUpdate: {kind: ruleChannelLevel, need: LevelManage},
	ActGrantRead:          {kind: ruleChannelLevel, need: LevelManage},
	ActGrantCreate:        {kind: ruleChannelLevel, need: LevelManage},
	ActGrantRevoke:        {kind: ruleChannelLevel, need: LevelManage},

	chat.ActChannelOperatorSet: {kind: ruleChannelLevel, need: LevelManage},

	// A thread's title: its author while it sees the channel, or a manager of the channel.
	chat.ActThreadUpdate: {kind: ruleAuthorOrManage},

	// A person's own notification level of a channel and subscription of a thread: whoever may
	// read it.
	notify.ActLevelRead:        {kind: ruleChannelLevel, need: LevelView},
	notify.ActLevelSet:         {kind: ruleChannelLevel, need: LevelView},
	notify.ActSubscriptionRead: {kind: ruleChannelLevel, need: LevelView},
	notify.ActSubscriptionSet:  {kind: ruleChannelLevel, need: LevelView},

	chat.ActThreadCreate:        {kind: ruleChannelLevel, need: LevelPost},
	messaging.ActMessageCreate:  {kind: ruleChannelLevel, need: LevelPost},
	messaging.ActReactionAdd:    {kind: ruleChannelLevel, need: LevelPost},
	messaging.ActReactionRemove: {kind: ruleChannelLevel, need: LevelPost},

	messaging.ActMessageUpdate: {kind: ruleAuthorPost},
	messaging.ActMessageDelete: {kind: ruleAuthorPostOrManage},

	// Pins: whoever may post in the channel, or the message's author (who keeps its own
	// message at hand even with view only).
	messaging.ActMessagePin:   {kind: ruleAuthorOrLevel, need: LevelPost},
	messaging.ActMessageUnpin: {kind: ruleAuthorOrLevel, need: LevelPost},

	// Runs: the invoke level triggers agents; a run is read like its thread, and cancelled by the
	// one who invoked it (Resource.OwnerID) or a manager of its channel.
	runs.ActAgentInvoke: {kind: ruleChannelLevel, need: LevelInvoke},
	runs.ActRunRead:     {kind: ruleChannelLevel, need: LevelView},
	runs.ActRunCancel:   {kind: ruleAuthorOrManage},
	// One's own approvals to decide are listed by anyone signed in (each filtered by its thread).
	runs.ActApprovalInbox: {kind: ruleAuthenticated},
	// Files: anyone signed in uploads; a file attached to a message is read like the message,
	// one attached nowhere only by its uploader (Resource.OwnerID).
	files.ActFileUpload:  {kind: ruleAuthenticated},
	files.ActFileRead:    {kind: ruleChannelLevel, need: LevelView},
	files.ActFileReadOwn: {kind: ruleSelf},
	// A click or pick on a message's components: whoever may post in its channel.
	runs.ActInteractionCreate: {kind: ruleChannelLevel, need: LevelPost},

	// Direct messages: anyone signed in starts one and lists their own; leaving needs to be a
	// participant, which on a DM channel is a grant on that very channel.
	dms.ActDMCreate: {kind: ruleAuthenticated},
	dms.ActDMList:   {kind: ruleAuthenticated},
	dms.ActDMLeave:  {kind: ruleChannelLevel, need: LevelView},

	// The inbox: a read position is moved by whoever may read the thread; one's own unread
	// counts and mentions are read by anyone signed in (what they count is filtered by Visible).
	inbox.ActReadMark:     {kind: ruleChannelLevel, need: LevelView},
	inbox.ActUnreadRead:   {kind: ruleAuthenticated},
	inbox.ActMentionsRead: {kind: ruleAuthenticated},

	// @here and @channel: whoever may post, or only a manager, as instance.broadcast_mentions
	// says (messaging asks for the one the setting names).
	messaging.ActMentionBroadcast:        {kind: ruleChannelLevel, need: LevelPost},
	messaging.ActMentionBroadcastManaged: {kind: ruleChannelLevel, need: LevelManage},
}

// Known reports whether authz has a rule for action; the HTTP router can refuse to start with a
// route whose action is unknown.
func Known(action kernel.Action) bool { _, ok := rules[action]; return ok }

var (
	errUnauthenticated = &kernel.Error{Code: kernel.CodeUnauthenticated, Message: "authentication required"}
	errForbidden       = &kernel.Error{Code: kernel.CodeForbidden, Message: "not allowed"}
)

// grantSource answers the two questions about grants that a decision asks: the store (one
// indexed query each, inside the request's transaction) or the warm cache (no I/O).
type grantSource interface {
	// channelLevel is principal's highest level on channelID or, when spaceID is set, on spaceID.
	channelLevel(ctx context.Context, principalID, channelID, spaceID kernel.ID) (Level, error)
	// spaceAccess is principal's level on the space itself and whether it holds any grant on the
	// space or on one of its channels.
	spaceAccess(ctx context.Context, principalID, spaceID kernel.ID) (Level, bool, error)
}

// storeGrants reads grants from the database.
type storeGrants struct{ store Store }

func (g storeGrants) channelLevel(ctx context.Context, principalID, channelID, spaceID kernel.ID) (Level, error) {
	if spaceID.IsZero() {
		return g.store.MaxLevel(ctx, principalID, channelID)
	}
	return g.store.MaxLevel(ctx, principalID, channelID, spaceID)
}

func (g storeGrants) spaceAccess(ctx context.Context, principalID, spaceID kernel.ID) (Level, bool, error) {
	return g.store.SpaceAccess(ctx, principalID, spaceID)
}

// Authorize decides whether actor may perform action on r (kernel.Authorizer). It answers nil,
// unauthenticated (no principal where one is needed), not_found (actor may not see r) or
// forbidden (actor sees r but may not do this). Every call is recorded in the check log.
//
// Grant-based decisions cost one indexed query (the channel and its space in one IN list), or
// none when the warm cache is known to be current (see the package comment).
// Owners hold manage on every non-DM space and channel without a grant; a rule that needs the
// author (message.update) still needs the author.
func (s *Service) Authorize(ctx context.Context, actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
	kernel.RecordCheck(ctx, action)
	if v, ok := kernel.TxViewFrom(ctx); ok {
		// Inside a Unit of Work: the cache is as good as the transaction's own read when it has
		// seen everything committed before the transaction began and no unit of the transaction
		// has appended a change of rights (which only the transaction sees).
		if !v.Appended(rightsEvents...) {
			if decided, err := s.cache.authorizeIfCurrent(ctx, v.BaseSeq(), actor, action, r); decided {
				return err
			}
		}
	} else if head, ok := s.store.CommittedHead(ctx); ok {
		if decided, err := s.cache.authorizeIfCurrent(ctx, head, actor, action, r); decided {
			return err
		}
	}
	return decide(ctx, storeGrants{s.store}, actor, action, r)
}

// decide applies action's rule; src answers the grant questions. It records nothing.
func decide(ctx context.Context, src grantSource, actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
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
	actor = withoutOwnerRights(actor)
	switch ru.kind {
	case ruleAuthenticated:
		return nil
	case rulePerson:
		if actor.Kind != kernel.KindPerson {
			return errForbidden
		}
		return nil
	case ruleAgent:
		if actor.Kind != kernel.KindAgent {
			return errForbidden
		}
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
		return decideSpace(ctx, src, actor, ru, r)
	}

	level, visible, err := effectiveLevel(ctx, src, actor, r)
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
	case ruleAuthorOrManage:
		allowed = author || level >= LevelManage
	case ruleAuthorOrLevel:
		allowed = author || level >= ru.need
	default:
		return fmt.Errorf("authz: action %q has no decision", action)
	}
	if !allowed {
		return errForbidden
	}
	return nil
}

// withoutOwnerRights clears the owner flag of a principal that is not a person: only people are
// owners. The store never marks an agent an owner; this keeps a mistake there from giving one an
// owner's rights.
func withoutOwnerRights(a kernel.Actor) kernel.Actor {
	if a.Kind == kernel.KindAgent || a.Kind == kernel.KindApp {
		a.IsOwner = false
	}
	return a
}

// effectiveLevel is actor's level on the channel of r, and whether actor may see it at all. On
// a channel: an owner's implicit manage unless it is a DM, else the highest grant on the channel
// or (not for DMs) its space. On a space (a resource without a channel): see spaceLevel.
func effectiveLevel(ctx context.Context, src grantSource, actor kernel.Actor, r kernel.Resource) (Level, bool, error) {
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
		return spaceLevel(ctx, src, actor, spaceID)
	}
	dm := r.ChannelKind == ChannelKindDM
	if actor.IsOwner && !dm {
		return LevelManage, true, nil
	}
	if dm {
		spaceID = ""
	}
	level, err := src.channelLevel(ctx, actor.ID, channelID, spaceID)
	return level, level > LevelNone, err
}

// spaceLevel is actor's level on the space itself and whether actor sees the space: owners
// always (manage); others when they hold a grant on the space or on one of its channels.
func spaceLevel(ctx context.Context, src grantSource, actor kernel.Actor, spaceID kernel.ID) (Level, bool, error) {
	if actor.IsOwner {
		return LevelManage, true, nil
	}
	return src.spaceAccess(ctx, actor.ID, spaceID)
}

func decideSpace(ctx context.Context, src grantSource, actor kernel.Actor, ru rule, r kernel.Resource) error {
	spaceID := r.SpaceID
	if spaceID.IsZero() && r.Kind == kernel.ResSpace {
		spaceID = r.ID
	}
	if spaceID.IsZero() {
		return fmt.Errorf("authz: resource %s %s has no space", r.Kind, r.ID)
	}
	level, visible, err := spaceLevel(ctx, src, actor, spaceID)
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
// to the space's non-DM channels. Two queries at most, whatever the number of channels, or none
// when the warm cache is known to be current (its answer then follows the cache as it moves on).
func (s *Service) Visible(ctx context.Context, actor kernel.Actor, action kernel.Action) (kernel.Visibility, error) {
	kernel.RecordCheck(ctx, action)
	if !actor.Authenticated() {
		return nil, errUnauthenticated
	}
	actor = withoutOwnerRights(actor)
	if head, ok := s.store.CommittedHead(ctx); ok {
		if v := s.cache.visibleIfCurrent(head, actor); v != nil {
			return v, nil
		}
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
