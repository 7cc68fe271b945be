package notify

import "bothy.dev/bothy/app/kernel"

// Notification is the payload of notification.created: a message one person is to hear of, and
// why (Reason*). It is a personal event (Scope.PrincipalID is the recipient): only that person
// receives it, over the gateway and the catch-up. The message itself comes with message.created.
type Notification struct {
	MessageID kernel.ID `json:"message_id"`
	ChannelID kernel.ID `json:"channel_id"`
	ThreadID  kernel.ID `json:"thread_id"`
	Reason    string    `json:"reason"`
}

// EvNotificationCreated is the notifier's durable event, one per recipient of a message.
var EvNotificationCreated = kernel.DefineEvent[Notification]("notification.created")

// EvLevelUpdated is the personal event of a notification level a person set for a channel or a
// DM (its SubjectID is the channel): their other connections learn of it, and the notifier,
// which keeps who chose level all per channel in memory, reads it again from there on.
var EvLevelUpdated = kernel.DefineEvent[ChannelLevel]("notification_level.updated")

// EvSubscriptionUpdated is the personal event of a level a person set for a thread (its
// SubjectID is the thread), for their other connections.
var EvSubscriptionUpdated = kernel.DefineEvent[Subscription]("thread_subscription.updated")
