// Package chat is the structure of the hub: spaces, channels and threads. It owns their tables
// (through its Store port) and the durable events space.*, channel.* and thread.created.
//
// It must not use messaging (which sits above it: see docs/architecture.md, The modules of app/): messaging creates and bumps threads
// through the Threads port, which chat implements without authorizing again.
package chat

import (
	"context"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// ChannelKind values.
const (
	KindChannel = "channel"
	KindDM      = "dm"
)

// Space is the top of the structure. Its JSON form is both the REST answer and the payload of
// space.created and space.updated.
type Space struct {
	ID        kernel.ID `json:"id"`
	Name      string    `json:"name"`
	CreatedBy kernel.ID `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// ArchivedAt is set only in what ArchiveSpace answers and in space.archived: the store never
	// loads an archived space.
	ArchivedAt *time.Time `json:"archived_at,omitempty"`
}

// Channel lives in a space and has one main thread, created with it, so that a channel always has a place for its
// messages. OperatorID is the
// agent that operates it (invoked by every new thread there), nil for none.
type Channel struct {
	ID           kernel.ID  `json:"id"`
	SpaceID      kernel.ID  `json:"space_id"`
	Name         string     `json:"name"`
	Kind         string     `json:"kind"`
	Topic        string     `json:"topic"`
	MainThreadID kernel.ID  `json:"main_thread_id"`
	OperatorID   *kernel.ID `json:"operator_id"`
	CreatedBy    kernel.ID  `json:"created_by"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	// ArchivedAt is set only in what ArchiveChannel answers and in channel.archived: the store
	// never loads an archived channel.
	ArchivedAt *time.Time `json:"archived_at,omitempty"`
}

// Thread is a conversation in a channel. ChannelKind is loaded with it so that a caller can
// authorize without a second read; it is not part of the JSON form.
type Thread struct {
	ID            kernel.ID  `json:"id"`
	ChannelID     kernel.ID  `json:"channel_id"`
	SpaceID       kernel.ID  `json:"space_id"`
	Title         string     `json:"title"`
	IsMain        bool       `json:"is_main"`
	CreatedBy     kernel.ID  `json:"created_by"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	LastMessageAt *time.Time `json:"last_message_at"`
	MessageCount  int64      `json:"message_count"`
	// ParentMessageID is the message of the channel's main thread that the thread started
	// under (its replies); nil for a thread started on its own and for a main thread. It never
	// changes, and a message has at most one such thread.
	ParentMessageID *kernel.ID `json:"parent_message_id"`
	ChannelKind     string     `json:"-"`
}

// Resource describes the space for Authorize.
func (s Space) Resource() kernel.Resource {
	return kernel.Resource{Kind: kernel.ResSpace, ID: s.ID, SpaceID: s.ID, OwnerID: s.CreatedBy}
}

// Resource describes the channel for Authorize.
func (c Channel) Resource() kernel.Resource {
	return kernel.Resource{Kind: kernel.ResChannel, ID: c.ID, SpaceID: c.SpaceID, ChannelID: c.ID,
		ChannelKind: c.Kind, OwnerID: c.CreatedBy}
}

// Resource describes the thread for Authorize.
func (t Thread) Resource() kernel.Resource {
	return kernel.Resource{Kind: kernel.ResThread, ID: t.ID, SpaceID: t.SpaceID, ChannelID: t.ChannelID,
		ChannelKind: t.ChannelKind, OwnerID: t.CreatedBy}
}

// Scope is the event scope of the thread.
func (t Thread) Scope() kernel.Scope {
	return kernel.Scope{SpaceID: t.SpaceID, ChannelID: t.ChannelID, ThreadID: t.ID}
}

// Page asks for one page of a keyset-paginated list ordered by id. With Before (or neither) it
// is the Limit items just before Before (the newest page when Before is empty); with After it is
// the Limit items just after After. Items come back in ascending id order either way.
type Page struct {
	Before kernel.ID
	After  kernel.ID
	Limit  int
}

// Page limits.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 200
)

// Normalize checks p and fills the default limit. Errors: validation_failed.
func (p Page) Normalize() (Page, error) {
	if !p.Before.IsZero() && !p.After.IsZero() {
		return p, kernel.Invalid("before", "before and after cannot be combined")
	}
	switch {
	case p.Limit == 0:
		p.Limit = DefaultPageLimit
	case p.Limit < 1 || p.Limit > MaxPageLimit:
		return p, kernel.Invalid("limit", "limit must be between 1 and %d", MaxPageLimit)
	}
	return p, nil
}

// Store is chat's repository. Methods join the Unit of Work of ctx when there is one.
type Store interface {
	// CreateSpace inserts s. Errors: conflict.
	CreateSpace(ctx context.Context, s Space) error
	// Space loads one space. Errors: not_found.
	Space(ctx context.Context, id kernel.ID) (Space, error)
	// Spaces lists all spaces that are not archived, by id.
	Spaces(ctx context.Context) ([]Space, error)
	// UpdateSpace writes the name and updated_at of s. Errors: not_found.
	UpdateSpace(ctx context.Context, s Space) error

	// CreateChannel inserts c; its main thread is inserted separately with CreateThread, in the
	// same Unit of Work. Errors: conflict.
	CreateChannel(ctx context.Context, c Channel) error
	// Channel loads one channel. Errors: not_found.
	Channel(ctx context.Context, id kernel.ID) (Channel, error)
	// Channels lists the channels of a space that are not archived, by id.
	Channels(ctx context.Context, spaceID kernel.ID) ([]Channel, error)
	// UpdateChannel writes name, topic and updated_at of c. Errors: not_found.
	UpdateChannel(ctx context.Context, c Channel) error
	// SetOperator writes the operator (nil clears it) and updated_at of c. The operator must be
	// an agent. Errors: not_found.
	SetOperator(ctx context.Context, c Channel) error
	// ArchiveChannel writes archived_at and updated_at of c; from then on Channel and Channels
	// no longer find it. Errors: not_found (also for a channel archived already).
	ArchiveChannel(ctx context.Context, c Channel) error
	// ArchiveSpace writes archived_at and updated_at of sp and archives every channel of it that
	// is not archived yet, at the same time; from then on none of them is found.
	// Errors: not_found (also for a space archived already).
	ArchiveSpace(ctx context.Context, sp Space) error

	// CreateThread inserts t. Errors: conflict.
	CreateThread(ctx context.Context, t Thread) error
	// CreateThreadUnder inserts t, a thread under the message *t.ParentMessageID, unless that
	// message has a thread already (one made by a concurrent Unit of Work too, on either
	// engine); inserted reports which, and nothing is written when it is false.
	// Errors: conflict (another unique key).
	CreateThreadUnder(ctx context.Context, t Thread) (inserted bool, err error)
	// ThreadByParent loads the thread under a message, with the kind of its channel.
	// Errors: not_found (the message has none, or its channel is archived).
	ThreadByParent(ctx context.Context, messageID kernel.ID) (Thread, error)
	// Thread loads a thread with the kind of its channel. Errors: not_found.
	Thread(ctx context.Context, id kernel.ID) (Thread, error)
	// UpdateThread writes the title and updated_at of t. Errors: not_found.
	UpdateThread(ctx context.Context, t Thread) error
	// Threads lists one page of a channel's threads (see Page) and whether more lie beyond it
	// in the direction of the page.
	Threads(ctx context.Context, channelID kernel.ID, p Page) ([]Thread, bool, error)
	// BumpThread adds delta to the message count of a thread; a positive delta also sets
	// last_message_at to at and the thread's newest message to messageID (NilID: none known)
	// where they are later. Errors: not_found.
	BumpThread(ctx context.Context, id kernel.ID, delta int, messageID kernel.ID, at time.Time) error
}

// CodeMainThread refuses on a channel's main thread what only a thread of its own has (a title,
// a subscription): the main thread is the channel itself, named and followed as the channel.
var CodeMainThread = kernel.NewCode("main_thread", kernel.ClassConflict)

// PrincipalRef is what chat knows of a principal: enough to hold that a channel's operator is an
// active agent.
type PrincipalRef struct {
	ID     kernel.ID
	Kind   kernel.PrincipalKind
	Active bool
}

// Principals is the narrow source chat reads principals from: identity owns them, and chat
// checks that an operator is an active agent principal without importing identity. storage implements it.
type Principals interface {
	// PrincipalRef returns the kind and status of the principal with id. Errors: not_found.
	PrincipalRef(ctx context.Context, id kernel.ID) (PrincipalRef, error)
}

// Threads is the port messaging uses: it creates a thread for messaging, appends to one, and
// adjusts a thread's message count when a message is deleted. Its methods never authorize: the caller has
// decided thread.create or message.create already.
type Threads interface {
	// Channel loads a channel, to authorize a new thread in it. Errors: not_found.
	Channel(ctx context.Context, id kernel.ID) (Channel, error)
	// Thread loads a thread with its channel kind. Errors: not_found.
	Thread(ctx context.Context, id kernel.ID) (Thread, error)
	// ThreadRef returns where a thread lives: its id, channel, space, channel kind, author,
	// whether it is a main thread and the message it started under; nothing else is set. A thread never changes channel or space, so the
	// answer is kept in memory after the first read: the message-create hot path then reads no
	// row for it (a round trip on the one PostgreSQL write connection). Errors: not_found.
	ThreadRef(ctx context.Context, id kernel.ID) (Thread, error)
	// CreateThread creates a thread in ch, authored by actorID, and appends thread.created. It
	// must run in a Unit of Work. The title may be empty. Errors: validation_failed (title).
	CreateThread(ctx context.Context, actorID kernel.ID, ch Channel, title string) (Thread, error)
	// CreateThreadUnder creates the thread under the message parent of ch's main thread,
	// authored by actorID, untitled, and appends thread.created (with parent_message_id); it
	// must run in a Unit of Work. When the message has a thread already (a concurrent request
	// made it), it answers that thread, created false, and appends nothing. The caller has
	// checked that parent is in ch's main thread. Errors: not_found (the thread of a concurrent
	// request whose channel was archived since).
	CreateThreadUnder(ctx context.Context, actorID kernel.ID, ch Channel, parent kernel.ID) (th Thread, created bool, err error)
	// ThreadByParent loads the thread under a message with its channel kind.
	// Errors: not_found (none).
	ThreadByParent(ctx context.Context, messageID kernel.ID) (Thread, error)
	// AppendToThread counts one more message in the thread, messageID, posted at at. Inside a
	// Unit of Work the count is applied at commit, once per thread per batch, so the caller must
	// have loaded the thread in the same unit. Errors: not_found outside a unit.
	AppendToThread(ctx context.Context, id, messageID kernel.ID, at time.Time) error
	// RemoveFromThread counts one message fewer (a message was deleted). Errors: not_found.
	RemoveFromThread(ctx context.Context, id kernel.ID) error
}
