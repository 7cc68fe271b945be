package messaging

import "bothy.dev/bothy/app/kernel"

// The durable events of messaging. The message events carry the message as it is after the
// change (message.deleted: the tombstone, which redacts the message's earlier message.created and
// message.updated in the log); the reaction events carry the reaction, the pin events the pin.
var (
	EvMessageCreated  = kernel.DefineEvent[Message]("message.created")
	EvMessageUpdated  = kernel.DefineEvent[Message]("message.updated")
	EvMessageDeleted  = kernel.DefineEvent[Message]("message.deleted", kernel.RedactsEarlier(EvMessageCreated.Name, EvMessageUpdated.Name))
	EvReactionAdded   = kernel.DefineEvent[Reaction]("reaction.added")
	EvReactionRemoved = kernel.DefineEvent[Reaction]("reaction.removed")
	EvMessagePinned   = kernel.DefineEvent[Pin]("message.pinned")
	EvMessageUnpinned = kernel.DefineEvent[Pin]("message.unpinned")
)
