// Package authz is the one decision point for permissions (DESIGN §2.4): it decides every action
// of every principal on every resource, computes what a principal may read (Visible) and owns the
// grants that those decisions read.
//
// It must not load structure to decide (the caller passes the ancestors in kernel.Resource), must
// not import storage or net/http, and must never tell a caller that a resource it may not see
// exists: what is invisible answers kernel.ErrNotFound, exactly like what is missing.
//
// Direct messages: there is no participants table yet. Until there is, a channel of kind "dm" is
// visible only to holders of a grant on that very channel; a grant on its space does not cover it
// and being an owner does not open it.
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
