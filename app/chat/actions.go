package chat

import "bothy.dev/bothy/app/kernel"

// Actions of chat: spaces, channels and threads, and the agent that operates a channel.
const (
	ActSpaceRead          kernel.Action = "space.read"
	ActSpaceCreate        kernel.Action = "space.create"
	ActSpaceUpdate        kernel.Action = "space.update"
	ActChannelRead        kernel.Action = "channel.read"
	ActChannelCreate      kernel.Action = "channel.create"
	ActChannelUpdate      kernel.Action = "channel.update"
	ActChannelOperatorSet kernel.Action = "channel.operator.set"
	ActThreadRead         kernel.Action = "thread.read"
	ActThreadCreate       kernel.Action = "thread.create"
	ActThreadUpdate       kernel.Action = "thread.update"
)
