package agents

import "bothy.dev/bothy/app/kernel"

// The durable, instance-wide events of agents; each carries the agent as it is after the change.
var (
	EvAgentCreated = kernel.DefineEvent[Agent]("agent.created")
	EvAgentUpdated = kernel.DefineEvent[Agent]("agent.updated")
)
