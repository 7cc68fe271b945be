// Package notify decides who hears of a message: the notification level each person chose for a
// channel or a DM, the threads each person follows, and the notifier, a consumer of the log that
// turns committed message.created events into the personal event notification.created (and a
// push, through the Pusher).
//
// It owns the tables notification_levels, thread_subscriptions and log_cursors (the notifier's
// row) through its Store port. It reads messages only from the log and the mentions table, and
// decides who may read a channel only through the kernel's Authorizer; it never writes another
// module's rows. It must not know the gateway (which sits above it): the gateway answers the Focus
// interface declared here.
package notify

import (
	"context"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// Level is a person's choice for a channel, a DM or a thread.
type Level string

// Levels. On a channel or a DM: all (every message of its main thread), mentions (only what
// mentions the person) or none (nothing, mentions included). On a thread: all (every reply: the
// person follows it), mentions (only what mentions the person) or none (nothing from it).
const (
	LevelAll      Level = "all"
	LevelMentions Level = "mentions"
	LevelNone     Level = "none"
)

// ParseLevel checks a level given by a client. Errors: validation_failed on field level.
func ParseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case LevelAll, LevelMentions, LevelNone:
		return l, nil
	}
	return "", kernel.Invalid("level", "level must be all, mentions or none")
}

// Reasons a notification is made for, in the order they are decided.
const (
	ReasonMention = "mention" // the message mentions the person (@handle, @here, @channel)
	ReasonDM      = "dm"      // a message in a DM whose level is all (the default)
	ReasonAll     = "all"     // a main-thread message in a channel whose level is all
	ReasonThread  = "thread"  // a reply in a thread the person follows
)

// ChannelLevel is a person's level for one channel or DM: the REST answer. Default is true when
// the person never chose one (DM: all; channel: mentions).
type ChannelLevel struct {
	ChannelID kernel.ID `json:"channel_id"`
	Level     Level     `json:"level"`
	Default   bool      `json:"default"`
}

// Subscription is a person's level for one thread: the REST answer. Default is true when there is
// no row: the person neither chose a level nor follows the thread by writing in it.
type Subscription struct {
	ThreadID kernel.ID `json:"thread_id"`
	Level    Level     `json:"level"`
	Default  bool      `json:"default"`
}

// DefaultChannelLevel is the level of a person who never chose one: all in a DM (a DM is
// addressed to its participants), mentions in a channel.
func DefaultChannelLevel(dm bool) Level {
	if dm {
		return LevelAll
	}
	return LevelMentions
}

// DefaultSubscription is the level of a thread without a row for the person.
const DefaultSubscription = LevelMentions

// Person is a candidate recipient as the store knows it: an active person, with the owner flag
// that authorization needs.
type Person struct {
	ID      kernel.ID
	IsOwner bool
}

// Store is the repository of notify. Methods join the Unit of Work of ctx when there is one.
type Store interface {
	// Level returns principal's level for channelID; ok is false when there is none.
	Level(ctx context.Context, principalID, channelID kernel.ID) (l Level, ok bool, err error)
	// SetLevel stores principal's level for channelID (replacing one stored before).
	SetLevel(ctx context.Context, principalID, channelID kernel.ID, l Level, at time.Time) error
	// Subscription returns principal's level for threadID; ok is false when there is none.
	Subscription(ctx context.Context, principalID, threadID kernel.ID) (l Level, ok bool, err error)
	// SetSubscription stores principal's level for threadID (replacing one stored before).
	SetSubscription(ctx context.Context, principalID, threadID kernel.ID, l Level, at time.Time) error
	// Follow makes principalID (when set) follow threadID (level all) unless a level is stored
	// for it already; and when parentID is set, the author of that message too if a person.
	// It must run in a Unit of Work.
	Follow(ctx context.Context, threadID, principalID, parentID kernel.ID, at time.Time) error

	// Mentioned lists the principals a message mentions (a row each, @here and @channel
	// included).
	Mentioned(ctx context.Context, messageID kernel.ID) ([]kernel.ID, error)
	// ChannelChoosing lists the principals who chose level l for channelID (an index range).
	ChannelChoosing(ctx context.Context, channelID kernel.ID, l Level) ([]kernel.ID, error)
	// ChannelLevels returns the levels the principals of ids chose for channelID; one who chose
	// none is absent.
	ChannelLevels(ctx context.Context, channelID kernel.ID, ids []kernel.ID) (map[kernel.ID]Level, error)
	// ThreadLevels returns every level stored for threadID, by principal.
	ThreadLevels(ctx context.Context, threadID kernel.ID) (map[kernel.ID]Level, error)
	// People returns, of ids, the active people (not agents, apps or the disabled), by id.
	People(ctx context.Context, ids []kernel.ID) (map[kernel.ID]Person, error)

	// Cursor returns the seq of the log cursor name, storing start for it first when it has none.
	Cursor(ctx context.Context, name string, start int64) (int64, error)
	// MoveCursor moves the cursor name from from to to, in the Unit of Work of ctx, and reports
	// whether it was at from (moved false: another node moved it first, and nothing changed).
	MoveCursor(ctx context.Context, name string, from, to int64, at time.Time) (moved bool, err error)
}
