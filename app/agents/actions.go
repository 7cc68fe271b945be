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

// ActAgentCommandsWrite is an agent declaring or reading its own slash commands.
const ActAgentCommandsWrite kernel.Action = "agent.commands.write"
