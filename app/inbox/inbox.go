// Package inbox is what is new for a person: the read position in each thread (moved by an
// explicit read, and by the person's own messages), the unread and mention counts of the
// channels, DMs and threads the person may see, and the list of messages that mention them. It
// owns the table read_states (through its Store port) and the personal event read_state.updated;
// it reads thread_subscriptions (the notifications' choice of a person for a thread) and the
// mentions messaging writes.
//
// Counting is done at write time: a thread's post_count and a read position's read_count (the
// thread's post_count up to and including the message read) make a thread's unread count one
// subtraction; nothing counts over messages when the counts are read. A message posted writes
// no row per member.
//
// It may use chat's and messaging's ports (they sit below it); it must not know authz or the
// gateway (above it): it authorizes through kernel.Authorizer like every module.
package inbox

import (
	"context"
	"slices"
	"strconv"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// ReadState is a read position as the personal event read_state.updated carries it: the last
// message the person has read in a thread of a channel.
type ReadState struct {
	ThreadID          kernel.ID `json:"thread_id"`
	ChannelID         kernel.ID `json:"channel_id"`
	LastReadMessageID kernel.ID `json:"last_read_message_id"`
}

// Position is a read position with what is still unread after it: the answer of POST
// /threads/{id}/read.
type Position struct {
	ReadState
	// UnreadCount counts the thread's messages posted after the position (deleted ones keep
	// their place).
	UnreadCount int64 `json:"unread_count"`
}

// Entry is one channel, DM or thread with something unread for the caller. ThreadID is nil for
// a channel's main thread.
type Entry struct {
	ChannelID     kernel.ID  `json:"channel_id"`
	ThreadID      *kernel.ID `json:"thread_id,omitempty"`
	UnreadCount   int64      `json:"unread_count"`
	MentionCount  int64      `json:"mention_count"`
	LastMessageID kernel.ID  `json:"last_message_id"`
}

// Unread is the answer of GET /me/unread: the entries with something unread, and their sums.
type Unread struct {
	Items        []Entry `json:"items"`
	UnreadCount  int64   `json:"unread_count"`
	MentionCount int64   `json:"mention_count"`
}

// AppendJSON appends u as encoding/json would write it from its tags, compact, without its
// reflection: a person's answer has an entry per channel with something unread, hundreds of
// them, and the encoding was a tenth of the request. Ids are UUID text, which needs no escaping.
func (u Unread) AppendJSON(b []byte) []byte {
	b = slices.Grow(b, 64+len(u.Items)*200)
	b = append(b, `{"items":[`...)
	for i, e := range u.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"channel_id":"`...)
		b = append(b, e.ChannelID...)
		b = append(b, '"')
		if e.ThreadID != nil {
			b = append(b, `,"thread_id":"`...)
			b = append(b, *e.ThreadID...)
			b = append(b, '"')
		}
		b = append(b, `,"unread_count":`...)
		b = strconv.AppendInt(b, e.UnreadCount, 10)
		b = append(b, `,"mention_count":`...)
		b = strconv.AppendInt(b, e.MentionCount, 10)
		b = append(b, `,"last_message_id":"`...)
		b = append(b, e.LastMessageID...)
		b = append(b, `"}`...)
	}
	b = append(b, `],"unread_count":`...)
	b = strconv.AppendInt(b, u.UnreadCount, 10)
	b = append(b, `,"mention_count":`...)
	b = strconv.AppendInt(b, u.MentionCount, 10)
	return append(b, '}')
}

// MarshalJSON is AppendJSON for encoding/json (which compacts it again: the REST answer calls
// AppendJSON itself).
func (u Unread) MarshalJSON() ([]byte, error) { return u.AppendJSON(nil), nil }

// Mention is a message that mentions the caller, with whether the caller's read position in its
// thread has passed it.
type Mention struct {
	Message messaging.Message `json:"message"`
	Read    bool              `json:"read"`
}

// Page is a page of the mentions inbox, newest first: After is the message id the page starts
// after (older than it; NilID for the newest), Limit its size (0: DefaultLimit).
type Page struct {
	After kernel.ID
	Limit int
}

// Limits of the mentions inbox.
const (
	DefaultLimit = 50
	MaxLimit     = 100
)

// Normalize fills the default limit and refuses one out of range. Errors: validation_failed.
func (p Page) Normalize() (Page, error) {
	switch {
	case p.Limit == 0:
		p.Limit = DefaultLimit
	case p.Limit < 1 || p.Limit > MaxLimit:
		return p, kernel.Invalid("limit", "limit must be 1 to %d", MaxLimit)
	}
	return p, nil
}

// CodeMessageNotInThread refuses a read position at a message that is not one of the thread's.
var CodeMessageNotInThread = kernel.NewCode("message_not_in_thread", kernel.ClassUnprocessable)

// Store is the inbox's repository. Methods join the Unit of Work of ctx when there is one.
type Store interface {
	// MessageThread returns the thread of a message. Errors: not_found.
	MessageThread(ctx context.Context, messageID kernel.ID) (kernel.ID, error)
	// Position returns principal's read position in a thread, with the thread's unread count
	// after it; found is false when principal has none (LastReadMessageID NilID, the whole
	// thread unread). Errors: not_found (no such thread).
	Position(ctx context.Context, principalID, threadID kernel.ID) (p Position, found bool, err error)
	// Advance moves principal's read position in a thread of a channel to messageID, and only
	// forward: an older or equal message leaves it. Inside a Unit of Work it is made at the
	// commit of the batch, after the batch's messages are counted in their threads, once per
	// principal and thread (the newest message wins), so that its count is exact; outside it is
	// written at once.
	Advance(ctx context.Context, principalID kernel.ID, s ReadState, at time.Time) error
	// UnreadCandidates lists the threads with something unread for principal (owner: whether it
	// is an owner, who reads every channel but the DMs it holds no grant on): the main threads
	// of the non-archived channels and DMs its grants show, and the other threads it follows
	// (a subscription of level all or mentions) or has unread mentions in and has not muted
	// (level none), with their unread and mention counts and newest message. The caller
	// authorizes each.
	UnreadCandidates(ctx context.Context, principalID kernel.ID, owner bool) ([]Entry, error)
	// Mentions lists up to limit messages that mention principal, newest first, older than
	// before (NilID: from the newest), leaving out deleted messages and those of archived
	// channels, each with whether principal's read position in its thread has passed it; more
	// reports whether older ones lie beyond.
	Mentions(ctx context.Context, principalID, before kernel.ID, limit int) (items []Mention, more bool, err error)
}

// Deps are what the inbox needs; all are required except Clock.
type Deps struct {
	Store   Store
	Threads chat.Threads
	UoW     kernel.UnitOfWork
	Events  kernel.EventLog
	Authz   kernel.Authorizer
	Clock   kernel.Clock
}
