package dms

import "bothy.dev/bothy/app/kernel"

// Actions of dms: start a direct message, list one's own, leave a group DM.
const (
	ActDMCreate kernel.Action = "dm.create"
	ActDMList   kernel.Action = "dm.list"
	ActDMLeave  kernel.Action = "dm.leave"
)
