package dms

import "bothy.dev/bothy/app/kernel"

// The durable events of dms. Both are scoped to the DM's channel, so that they reach the holders
// of a grant on it, which are exactly its participants: dm.created is appended after the
// participants' grants, dm.participant_left after the leaver's grant is gone (the leaver does
// not receive it; the others do).
var (
	EvDMCreated         = kernel.DefineEvent[DM]("dm.created")
	EvDMParticipantLeft = kernel.DefineEvent[ParticipantLeft]("dm.participant_left")
)

// ParticipantLeft is the payload of dm.participant_left.
type ParticipantLeft struct {
	ChannelID    kernel.ID   `json:"channel_id"`
	PrincipalID  kernel.ID   `json:"principal_id"`
	Participants []kernel.ID `json:"participants"`
}
