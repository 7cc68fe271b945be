package agents

import "bothy.dev/bothy/app/kernel"

// Actions of the owners on agents.
const (
	ActAgentCreate     kernel.Action = "agent.create"
	ActAgentRead       kernel.Action = "agent.read"
	ActAgentDisable    kernel.Action = "agent.disable"
	ActAgentEnable     kernel.Action = "agent.enable"
	ActAgentTokenReset kernel.Action = "agent.token.reset"
)
