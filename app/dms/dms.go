// Package dms is direct messages: a channel of kind "dm" between its participants, the caller
// and one to eight others, people or agents. It owns the dms table (the participant set a DM was
// made for) through its Store port and the durable events dm.*.
//
// A DM's participants are the principals holding a grant on its channel: the grants are written
// in the Unit of Work that creates the DM, through the Grants port (authz implements it), so that
// authz decides a DM like any channel of kind "dm" (only holders of a grant on that very channel
// see it; owners do not), its warm cache follows the grant.changed events, and the gateway's
// delivery needs nothing new. Every DM channel lives in one space of its own (SpaceID), which is
// never listed: a space must exist for a channel, and DMs belong to no space anyone sees.
package dms

import (
	"context"
	"slices"
	"strings"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// SpaceID is the fixed id of the space that holds every DM channel. It is created with the first
// DM and never listed nor loaded as a space (storage leaves it out).
const SpaceID kernel.ID = "00000000-0000-7000-8000-0000000000d1"

// MaxOthers is how many participants a DM may have besides its creator.
const MaxOthers = 8

// Error codes of dms.
var (
	// CodeCannotLeave: a 1:1 DM (two participants) cannot be left; only a group DM can.
	CodeCannotLeave = kernel.NewCode("dm_cannot_leave", kernel.ClassConflict)
)

// DM is a direct message: its channel and its participants, in id order. Its JSON form is the
// REST answer and the payload of dm.created.
type DM struct {
	ID            kernel.ID   `json:"id"`
	Kind          string      `json:"kind"`
	SpaceID       kernel.ID   `json:"space_id"`
	MainThreadID  kernel.ID   `json:"main_thread_id"`
	Participants  []kernel.ID `json:"participants"`
	CreatedBy     kernel.ID   `json:"created_by"`
	CreatedAt     time.Time   `json:"created_at"`
	LastMessageAt *time.Time  `json:"last_message_at"`
}

// Resource describes the DM's channel for Authorize.
func (d DM) Resource() kernel.Resource {
	return kernel.Resource{Kind: kernel.ResChannel, ID: d.ID, SpaceID: d.SpaceID, ChannelID: d.ID,
		ChannelKind: chat.KindDM, OwnerID: d.CreatedBy}
}

// Scope is the event scope of the DM: its channel.
func (d DM) Scope() kernel.Scope { return kernel.Scope{SpaceID: d.SpaceID, ChannelID: d.ID} }

// Store is the repository of dms. Methods join the Unit of Work of ctx when there is one.
type Store interface {
	// EnsureSpace creates the DM space (SpaceID) unless it exists, created by createdBy.
	EnsureSpace(ctx context.Context, createdBy kernel.ID, at time.Time) error
	// ByKey loads the DM made for the participant set key. Errors: not_found.
	ByKey(ctx context.Context, key string) (DM, error)
	// DM loads one DM with its participants. Errors: not_found.
	DM(ctx context.Context, channelID kernel.ID) (DM, error)
	// Create inserts the dms row of a DM whose channel exists, with its key.
	// Errors: conflict (the key is taken).
	Create(ctx context.Context, channelID kernel.ID, key string, at time.Time) error
	// SetKey changes the key of a DM; an empty key is NULL. Errors: not_found.
	SetKey(ctx context.Context, channelID kernel.ID, key string) error
	// For lists the DMs principal takes part in, newest activity first (the last message of the
	// main thread, else the creation).
	For(ctx context.Context, principalID kernel.ID) ([]DM, error)
}

// Grants is how a DM gives and takes its participants' rights: a grant on the DM's channel,
// written with its grant.changed event in the caller's Unit of Work, without deciding an
// action (the DM's use case has). authz implements it.
type Grants interface {
	GrantParticipant(ctx context.Context, actorID kernel.ID, ch kernel.Resource, principalID kernel.ID) error
	RevokeParticipant(ctx context.Context, actorID kernel.ID, ch kernel.Resource, principalID kernel.ID) error
}

// Key is the participant-set key of ids: sorted, without repeats, joined by ','.
func Key(ids []kernel.ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}
