package messaging

import "bothy.dev/bothy/app/kernel"

// Actions of messaging: messages, their revisions, their reactions and their pins.
const (
	ActMessageRead    kernel.Action = "message.read"
	ActMessageCreate  kernel.Action = "message.create"
	ActMessageUpdate  kernel.Action = "message.update"
	ActMessageDelete  kernel.Action = "message.delete"
	ActRevisionsRead  kernel.Action = "message.revisions.read"
	ActReactionAdd    kernel.Action = "reaction.add"
	ActReactionRemove kernel.Action = "reaction.remove"
	ActMessagePin     kernel.Action = "message.pin"
	ActMessageUnpin   kernel.Action = "message.unpin"
)
