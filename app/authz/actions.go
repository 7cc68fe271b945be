package authz

import "bothy.dev/bothy/app/kernel"

// Actions on grants: who may see, post in and manage a channel or a space.
const (
	ActGrantRead   kernel.Action = "grant.read"
	ActGrantCreate kernel.Action = "grant.create"
	ActGrantRevoke kernel.Action = "grant.revoke"
)
