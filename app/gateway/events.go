package gateway

import (
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// Ephemeral events: event frames without seq, never in the log. typing.started is what
// typing.start fans out; presence.updated tells the people connected that someone went online or
// offline; run.updated carries a run's patches (see docs/runs.md) to the connections focused on
// the run's thread that may read it.
var (
	EvTypingStarted   = kernel.DefineEphemeral[TypingStarted]("typing.started")
	EvPresenceUpdated = kernel.DefineEphemeral[PresenceUpdated]("presence.updated")
	EvRunUpdated      = kernel.DefineEphemeral[RunUpdated]("run.updated")
)

// TypingStarted is the payload of typing.started: who is typing in which thread.
type TypingStarted struct {
	PrincipalID kernel.ID `json:"principal_id"`
	ThreadID    kernel.ID `json:"thread_id"`
}

// PresenceUpdated is the payload of presence.updated: a person's status, StatusOnline or
// StatusOffline.
type PresenceUpdated struct {
	PrincipalID kernel.ID `json:"principal_id"`
	Status      string    `json:"status"`
}

// RunUpdated is the payload of run.updated: a patch from BaseVersion to Version, or (Patch nil)
// the whole Document at Version.
type RunUpdated struct {
	RunID       kernel.ID      `json:"run_id"`
	ThreadID    kernel.ID      `json:"thread_id"`
	ChannelID   kernel.ID      `json:"channel_id"`
	BaseVersion *int           `json:"base_version"`
	Version     int            `json:"version"`
	Patch       *runs.Patch    `json:"patch"`
	Document    *runs.Document `json:"document"`
}
