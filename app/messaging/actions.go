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
	// ActMentionBroadcast and ActMentionBroadcastManaged decide who may mention a whole channel
	// (@here, @channel): the first when instance.broadcast_mentions is 'post', the second when
	// it is 'manage'. Without the right the words stay plain text.
	ActMentionBroadcast        kernel.Action = "message.mention_broadcast"
	ActMentionBroadcastManaged kernel.Action = "message.mention_broadcast.managed"
)
