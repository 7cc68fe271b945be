// Package authz is the one decision point for permissions (see docs/architecture.md, Authorization): it decides every action
// of every principal on every resource, computes what a principal may read (Visible) and owns the
// grants that those decisions read.
//
// It must not load structure to decide (the caller passes the ancestors in kernel.Resource), must
// not import storage or net/http, and must never tell a caller that a resource it may not see
// exists: what is invisible answers kernel.ErrNotFound, exactly like what is missing.
//
// Direct messages: a channel of kind "dm" is visible only to holders of a grant on that very
// channel; a grant on its space does not cover it and being an owner does not open it. Its
// participants are those holders: app/dms writes their grants (GrantParticipant, level invoke)
// in the Unit of Work that creates the DM, each with its grant.changed, so the decisions, the
// warm cache and the hub's delivery treat a DM like any channel.
//
// # The warm permission cache: it follows the log
//
// Service keeps an in-memory model of what decisions read: every principal's grants (space and
// channel levels), owner flag and status, and the structure grants hang on (each channel's space
// and kind; spaces need no entry: an owner sees every space, anyone else by its grants). Warm
// loads it from the store in one query, as of one seq; Observe then applies every committed
// event in seq order (grant.changed, channel.created, channel.updated, user.created,
// user.updated, agent.created, agent.updated; any other type only advances the seq). After
// Observe(e) the model is exactly the database as of e.Seq, because every write that changes
// rights appends its event in the same Unit of Work. An event Observe cannot apply (a gap, an
// unreadable payload) makes it load the model again from the store, which then is at or past
// that event, never behind it.
//
// Which decisions read it:
//
//   - Delivery decisions (the gateway's hub) read only the model, through Service.Delivery,
//     without a query. The log tail calls Observe for each event before the hub delivers it, so
//     the event at seq N is decided on rights as of N: a revoke at N stops delivery from N+1 on.
//     Delivery takes the principal's owner flag and status and the channel's space and kind from
//     the model too, never from the caller: a disabled or unknown principal is unauthenticated.
//     A catch-up that replays the log up to its head wants rights as of now, not as of the
//     tail's position: it uses Service.Visible, which reads the model when it is current.
//   - Inside a Unit of Work, Service.Authorize decides from the model when the unit's
//     kernel.TxView says it is as good as the transaction: the model has seen the head committed
//     before the transaction began (read under the counter lock, so exact on every engine), and
//     no unit of the transaction has appended a change of rights (rightsEvents), which only the
//     transaction sees. The store's writer hands its own commits to the model right after COMMIT
//     (ObserveCommitted), so the next batch finds it current. Otherwise it reads the database.
//   - REST decisions outside a Unit of Work (Service.Authorize and Service.Visible) read the
//     database, and read the model instead only when it is known to be current:
//     outside a Unit of Work (a batch of the group commit may hold another request's uncommitted
//     change of rights, which only the transaction sees), on an engine where this process hears
//     of every commit as it is acknowledged (SQLite; on PostgreSQL another node's commit may not
//     have reached this process yet), and with the model's seq at or beyond the committed head
//     read at the decision (Store.CommittedHead). Every commit a client can have been told of is
//     then in the model. Otherwise, and before Warm, they read the database as they always did.
//     On this path the actor's owner flag is the authenticator's, as on the database path.
package authz

import (
	"context"
	"fmt"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// Level is what a grant allows, ordered: each level includes the ones below it.
type Level int

const (
	LevelNone Level = iota
	LevelView
	LevelPost
	LevelInvoke
	LevelManage
)

var levelNames = [...]string{"", "view", "post", "invoke", "manage"}

// String returns the level's stable name ("" for LevelNone).
func (l Level) String() string {
	if l < LevelNone || l > LevelManage {
		return fmt.Sprintf("level(%d)", int(l))
	}
	return levelNames[l]
}

// Valid reports whether l is one of view, post, invoke, manage.
func (l Level) Valid() bool { return l >= LevelView && l <= LevelManage }

// ParseLevel parses a level name; anything else is validation_failed on field "level".
func ParseLevel(s string) (Level, error) {
	for i := LevelView; i <= LevelManage; i++ {
		if levelNames[i] == s {
			return i, nil
		}
	}
	return LevelNone, kernel.Invalid("level", "level must be one of view, post, invoke, manage")
}

// ChannelKindDM is the kind of a direct-message channel.
const ChannelKindDM = "dm"

// Store is the authz repository port (implemented in storage/authz.go).
type Store interface {
	// MaxLevel returns the highest level principal holds on any of resourceIDs (a channel and
	// its space, typically), or LevelNone. It is one indexed query: it runs on every write.
	MaxLevel(ctx context.Context, principalID kernel.ID, resourceIDs ...kernel.ID) (Level, error)
	// SpaceAccess returns the level principal holds on the space itself and whether it holds any
	// grant on the space or on one of its channels.
	SpaceAccess(ctx context.Context, principalID, spaceID kernel.ID) (Level, bool, error)
	// VisibleTo returns the spaces and channels principal may read by its grants: the granted
	// spaces and channels, the spaces of granted channels, and the non-DM channels of granted
	// spaces. Ids may repeat.
	VisibleTo(ctx context.Context, principalID kernel.ID) (spaces, channels []kernel.ID, err error)
	// HiddenDMs returns the DM channels on which principal holds no channel grant.
	HiddenDMs(ctx context.Context, principalID kernel.ID) ([]kernel.ID, error)
	// Grant returns the grant of principal on resource. Errors: not_found.
	Grant(ctx context.Context, resourceID, principalID kernel.ID) (Grant, error)
	// UpsertGrant stores g, replacing the level of an existing grant of the same principal on
	// the same resource (its created_at and created_by stay). It returns the stored grant.
	UpsertGrant(ctx context.Context, g Grant) (Grant, error)
	// DeleteGrant removes the grant of principal on resource. Errors: not_found.
	DeleteGrant(ctx context.Context, resourceID, principalID kernel.ID) error
	// ListGrants returns the grants on resource, in principal id order.
	ListGrants(ctx context.Context, resourceID kernel.ID) ([]Grant, error)
	// BumpPermissionVersion increments the 'permission_version' counter; called by every write
	// that changes rights, inside its Unit of Work.
	BumpPermissionVersion(ctx context.Context) error
	// PrincipalActive reports whether a principal with id exists and is active (false, nil
	// for an unknown id).
	PrincipalActive(ctx context.Context, id kernel.ID) (bool, error)
	// Snapshot reads everything the permission cache holds, as of one committed seq, in one
	// statement (one snapshot of the database): principals, channels, grants and the event_seq
	// they are current at. Errors: internal.
	Snapshot(ctx context.Context) (Snapshot, error)
	// CommittedHead returns the highest committed seq that anyone may have been told of, with ok
	// true only when a decision made now from a cache current at that seq equals one made from
	// the database: outside a Unit of Work, on an engine whose every commit passes through this
	// process. It does no I/O.
	CommittedHead(ctx context.Context) (head int64, ok bool)
}

// Snapshot is the content of the permission cache as the store reads it in Warm.
type Snapshot struct {
	// Seq is the event_seq the rows are current at.
	Seq        int64
	Principals []PrincipalRef
	Channels   []ChannelRef
	// Grants hold only ResourceKind, ResourceID, PrincipalID and Level.
	Grants []Grant
}

// PrincipalRef is what authz needs to know about a principal.
type PrincipalRef struct {
	ID      kernel.ID
	Active  bool // status active (not disabled)
	IsOwner bool
	// Kind tells a person from an agent or an app: a channel's members (ChannelMembers) are
	// its people.
	Kind kernel.PrincipalKind
}

// ChannelRef is what authz needs to know about a channel.
type ChannelRef struct {
	ID      kernel.ID
	SpaceID kernel.ID
	Kind    string // "channel" or "dm"
}

// StructureSource reads the structure that grants hang on. chat owns it; authz is below chat in
// the module order, so it declares the narrow source it needs (implemented in storage/authz.go).
type StructureSource interface {
	// Channel returns the channel with id. Errors: not_found.
	Channel(ctx context.Context, id kernel.ID) (ChannelRef, error)
	// SpaceExists reports whether a space with id exists.
	SpaceExists(ctx context.Context, id kernel.ID) (bool, error)
}

// Grant is a level held by a principal on a space or a channel.
type Grant struct {
	ResourceKind kernel.ResourceKind // space or channel
	ResourceID   kernel.ID
	// SpaceID is the space of a channel grant (the resource itself for a space grant). It is not
	// stored; use cases fill it from the structure.
	SpaceID     kernel.ID
	PrincipalID kernel.ID
	Level       Level
	CreatedBy   kernel.ID
	CreatedAt   time.Time
}
