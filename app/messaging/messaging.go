// Package messaging is what people and agents say: messages with their revisions, mentions,
// reactions and pins, and the creation of a thread with its first message. It owns the tables
// messages, message_revisions, mentions, reactions and message_pins (through its Store port) and
// the durable events message.* and reaction.*; it publishes the in-transaction events MessageDeciding,
// MessagePosted and MessageDeleted.
//
// It may use chat's Threads port (chat sits below it); it must not know the modules above it (runs, sync):
// they subscribe to its in-transaction events instead.
package messaging

import (
	"context"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
)

// Message is one message. Its JSON form is the REST answer and the payload of message.created,
// message.updated and message.deleted. A deleted message stays as a tombstone: Deleted set,
// Content and Mentions empty.
type Message struct {
	ID          kernel.ID   `json:"id"`
	ThreadID    kernel.ID   `json:"thread_id"`
	ChannelID   kernel.ID   `json:"channel_id"`
	SpaceID     kernel.ID   `json:"space_id"`
	AuthorID    kernel.ID   `json:"author_id"`
	Content     string      `json:"content"`
	ClientMsgID ClientMsgID `json:"client_msg_id"`
	Mentions    []kernel.ID `json:"mentions"`
	// Broadcast is "here" or "channel" when the message mentions its whole channel (@here,
	// @channel) and that reached someone Mentions does not name; empty otherwise. Mentions
	// keeps the explicit @handles; the store's mention rows carry everyone (BroadcastTo too).
	Broadcast string `json:"broadcast,omitempty"`
	// BroadcastTo are the members @here or @channel mentions besides Mentions, written as
	// mention rows with the message; never read back nor shown.
	BroadcastTo []kernel.ID `json:"-"`
	Version     int         `json:"version"`
	CreatedAt   time.Time   `json:"created_at"`
	EditedAt    *time.Time  `json:"edited_at"`
	Deleted     bool        `json:"deleted"`
	// RunID links an agent's answer to the run it answers; nil for any other message.
	RunID *kernel.ID `json:"run_id"`
	// TriggerState says what the message triggered when it mentions an agent or opens a thread in
	// a channel with an operator: "triggered" (a run was made), or why not (no_invoke_right,
	// agent_cannot_read, agent_disabled); nil when it concerned no agent. The runs module decides
	// it through MessageDeciding.Trigger, before the message is stored; messaging only stores and
	// shows it.
	TriggerState *string `json:"trigger_state"`
	// Triggers are what the message did for each agent it concerned, in the order the trigger
	// considered them: a run (state "triggered", with its run id) or the refusal of that agent,
	// so that one agent's run hides no other agent's refusal. TriggerState stays their summary.
	// Empty, and left out of the JSON form, when the message concerned no agent.
	Triggers []AgentTrigger `json:"triggers,omitempty"`
	// Components are the message's buttons and selects (components.go), in action rows; nil
	// for none, and left out of the JSON form then. A tombstone has none.
	Components []ActionRow `json:"components,omitempty"`
	// Attachments are the files the message carries (at most files.MaxAttachments), in the
	// order they were given; left out of the JSON form when there are none. A tombstone has none.
	Attachments []files.Attachment `json:"attachments,omitempty"`
	// ReplyThreadID, ReplyCount and LastReplyAt describe the thread under the message (started
	// by POST /api/v1/messages/{id}/thread): its id, its messages (the replies, deleted ones not
	// counted) and when the newest reply was posted (a deleted reply does not move it back).
	// They are read from the thread's own counters with the message, and left out of the JSON
	// form of a message without such a thread. ThreadID stays the thread the message is in.
	ReplyThreadID *kernel.ID `json:"reply_thread_id,omitempty"`
	ReplyCount    *int64     `json:"reply_count,omitempty"`
	LastReplyAt   *time.Time `json:"last_reply_at,omitempty"`
	// ChannelKind is loaded with the message so that it can be authorized without a second read.
	ChannelKind string `json:"-"`
}

// AgentTrigger is what a message did for one agent: State is "triggered" (RunID is the run it
// made) or the code of the agent's refusal (no_invoke_right, agent_disabled, ...).
type AgentTrigger struct {
	AgentID kernel.ID  `json:"agent_id"`
	State   string     `json:"state"`
	RunID   *kernel.ID `json:"run_id,omitempty"`
}

// ClientMsgID is the author's own id of a message, which makes its creation idempotent (a
// retried post answers the first message); empty means none and is null in JSON.
type ClientMsgID string

func (c ClientMsgID) MarshalJSON() ([]byte, error) { return kernel.MarshalEmptyAsNull(c) }

func (c *ClientMsgID) UnmarshalJSON(b []byte) error { return kernel.UnmarshalNullAsEmpty(b, c) }

// Resource describes the message for Authorize; its owner is the author.
func (m Message) Resource() kernel.Resource {
	return kernel.Resource{Kind: kernel.ResMessage, ID: m.ID, SpaceID: m.SpaceID, ChannelID: m.ChannelID,
		ChannelKind: m.ChannelKind, OwnerID: m.AuthorID}
}

// Scope is the event scope of the message: its thread.
func (m Message) Scope() kernel.Scope {
	return kernel.Scope{SpaceID: m.SpaceID, ChannelID: m.ChannelID, ThreadID: m.ThreadID}
}

// Revision is an earlier content of an edited message: the content it had at Version.
type Revision struct {
	MessageID kernel.ID `json:"message_id"`
	Version   int       `json:"version"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"created_at"`
}

// Reaction is one principal's emoji on a message; the payload of reaction.added and
// reaction.removed.
type Reaction struct {
	MessageID   kernel.ID `json:"message_id"`
	ThreadID    kernel.ID `json:"thread_id"`
	PrincipalID kernel.ID `json:"principal_id"`
	Emoji       string    `json:"emoji"`
	CreatedAt   time.Time `json:"created_at"`
}

// Pin marks a message of a channel (of its main thread or of a thread under it) as pinned; the
// answer of PUT /messages/{id}/pin and the payload of message.pinned and message.unpinned.
type Pin struct {
	MessageID kernel.ID `json:"message_id"`
	ChannelID kernel.ID `json:"channel_id"`
	ThreadID  kernel.ID `json:"thread_id"`
	PinnedBy  kernel.ID `json:"pinned_by"`
	PinnedAt  time.Time `json:"pinned_at"`
}

// PinnedMessage is a pin with its message, as a channel's list of pins shows it.
type PinnedMessage struct {
	Pin
	Message Message `json:"message"`
}

// MessageDeciding is published inside the Unit of Work that creates a message, before the
// message is stored; runs subscribes to decide what it triggers, and puts that in Trigger. The
// message is then stored with the trigger state, once, and message.created carries it. It is not
// published for an idempotent repeat.
type MessageDeciding struct {
	Message Message
	// NewThread is set when the message is the first of a thread created with it.
	NewThread bool
	// Author is the actor who posts, as the request authenticated it (owner flag included), for
	// a subscriber that decides in the author's name.
	Author kernel.Actor
	// Trigger is where the subscriber puts its decision; it is never nil.
	Trigger *Trigger
}

// Trigger is what a message triggers, as MessageDeciding's subscriber decided it.
type Trigger struct {
	// State is the message's trigger state (Message.TriggerState); "" for a message that
	// concerns no agent.
	State string
	// Invoke are the agents the message invokes, handed to MessagePosted's subscriber, which
	// makes their runs.
	Invoke []kernel.ID
	// Agents is the decision for each agent the message concerned (Message.Triggers); the
	// entries of the agents in Invoke carry the ids their runs will have.
	Agents []AgentTrigger
}

// MessagePosted is published inside the Unit of Work that created a message, after the message
// is stored and message.created is appended, so that the log holds the message before what it
// causes; runs subscribes to make the runs of the agents the message invokes. It is not
// published for an idempotent repeat.
type MessagePosted struct {
	Message Message
	// NewThread is set when the message is the first of a thread created with it.
	NewThread bool
	// Author is the actor who posted, as the request authenticated it.
	Author kernel.Actor
	// Invoke are the agents MessageDeciding's subscriber decided the message invokes.
	Invoke []kernel.ID
}

// MessageDeleted is published inside the Unit of Work that deleted a message; Message is the
// tombstone.
type MessageDeleted struct {
	Message Message
}

// Store is messaging's repository. Methods join the Unit of Work of ctx when there is one.
type Store interface {
	// InsertMessage inserts m with its mentions, unless its author already has a message with
	// m.ClientMsgID; inserted reports which (nothing is written when it is false).
	// Errors: conflict (another unique key).
	InsertMessage(ctx context.Context, m Message) (inserted bool, err error)
	// MessageByClientID loads the message of author with clientMsgID. Errors: not_found.
	MessageByClientID(ctx context.Context, author kernel.ID, clientMsgID string) (Message, error)
	// Message loads a message with its mentions and channel kind. Errors: not_found.
	Message(ctx context.Context, id kernel.ID) (Message, error)
	// Messages lists one page of a thread's messages (see chat.Page), tombstones included, and
	// whether more lie beyond it in the direction of the page.
	Messages(ctx context.Context, threadID kernel.ID, p chat.Page) ([]Message, bool, error)
	// UpdateMessage stores prev as a revision and writes m's content, version, edited_at,
	// mentions and components. Errors: not_found, conflict (the revision exists).
	UpdateMessage(ctx context.Context, m Message, prev Revision) error
	// UpdateComponents writes m's components and version alone: a change of the buttons is no
	// edit of the content, so it keeps no revision and leaves edited_at. Errors: not_found.
	UpdateComponents(ctx context.Context, m Message) error
	// DeleteMessage turns the message into the tombstone m (content and components emptied,
	// deleted_at, version) and drops its revisions and mentions. Errors: not_found.
	DeleteMessage(ctx context.Context, m Message, at time.Time) error
	// Revisions lists the earlier contents of a message, oldest first.
	Revisions(ctx context.Context, messageID kernel.ID) ([]Revision, error)
	// AddReaction stores r unless it exists; added reports which.
	AddReaction(ctx context.Context, r Reaction) (added bool, err error)
	// RemoveReaction removes a reaction if it exists; removed reports which.
	RemoveReaction(ctx context.Context, messageID, principalID kernel.ID, emoji string) (removed bool, err error)
	// InsertPin stores p unless its message is pinned already; inserted reports which.
	InsertPin(ctx context.Context, p Pin) (inserted bool, err error)
	// Pin loads the pin of a message. Errors: not_found (the message is not pinned).
	Pin(ctx context.Context, messageID kernel.ID) (Pin, error)
	// DeletePin removes the pin of a message if there is one, and answers it; removed reports
	// whether there was.
	DeletePin(ctx context.Context, messageID kernel.ID) (p Pin, removed bool, err error)
	// CountPins counts the pins of a channel.
	CountPins(ctx context.Context, channelID kernel.ID) (int, error)
	// Pins lists the pins of a channel with their messages, newest pin first (ties by message
	// id, descending), at most limit.
	Pins(ctx context.Context, channelID kernel.ID, limit int) ([]PinnedMessage, error)
}

// Directory resolves @handles (identity's principals, which messaging may not import:
// storage implements it).
type Directory interface {
	// ResolveHandles maps handle keys (lower-case handles) to the ids of the principals that hold
	// them; unknown handles are absent from the answer.
	ResolveHandles(ctx context.Context, keys []string) (map[string]kernel.ID, error)
}

// Audience lists who a mention of a whole channel reaches (authz implements it from its warm
// cache, which messaging, below authz, may not import).
type Audience interface {
	// ChannelMembers lists the active people who may read the channel, in id order.
	// Errors: internal (the permission cache is not warm).
	ChannelMembers(ctx context.Context, channelID kernel.ID) ([]kernel.ID, error)
}

// BroadcastPolicy says who may mention a whole channel (the instance's setting
// broadcast_mentions; storage implements it).
type BroadcastPolicy interface {
	// BroadcastMentions answers instance.BroadcastPost (whoever may post in the channel) or
	// instance.BroadcastManage (only its managers).
	BroadcastMentions(ctx context.Context) (string, error)
}

// Redactor rewrites logged events (storage implements it on the event log): a deleted message's
// content must not stay readable in the event log.
type Redactor interface {
	// RedactEvents replaces, inside the Unit of Work of ctx, the payload of the logged events
	// about subject whose type is one of types.
	RedactEvents(ctx context.Context, subject kernel.ID, types []string, payload any) error
}
