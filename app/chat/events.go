package chat

import "bothy.dev/bothy/app/kernel"

// The durable events of chat; each carries the object it is about as it is after the change.
// space.archived and channel.archived carry the space or channel with archived_at set; an
// archived space's channels are archived with it. thread.updated carries the thread with its
// new title.
var (
	EvSpaceCreated    = kernel.DefineEvent[Space]("space.created")
	EvSpaceUpdated    = kernel.DefineEvent[Space]("space.updated")
	EvSpaceArchived   = kernel.DefineEvent[Space]("space.archived")
	EvChannelCreated  = kernel.DefineEvent[Channel]("channel.created")
	EvChannelUpdated  = kernel.DefineEvent[Channel]("channel.updated")
	EvChannelArchived = kernel.DefineEvent[Channel]("channel.archived")
	EvThreadCreated   = kernel.DefineEvent[Thread]("thread.created")
	EvThreadUpdated   = kernel.DefineEvent[Thread]("thread.updated")
)
