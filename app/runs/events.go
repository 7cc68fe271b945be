package runs

import "bothy.dev/bothy/app/kernel"

// The durable events of runs (see docs/runs.md, Events). agent.invocation and run.cancel_requested
// are personal events of the agent (Scope.PrincipalID); run.state_changed is scoped to the run's
// thread.
var (
	EvAgentInvocation    = kernel.DefineEvent[Invocation]("agent.invocation")
	EvRunStateChanged    = kernel.DefineEvent[StateChange]("run.state_changed")
	EvRunCancelRequested = kernel.DefineEvent[CancelRequest]("run.cancel_requested")
	// EvAgentBudgetWarning is an owner's personal event: an agent used 80 % of a cap of its
	// budget in a period (once per agent and period).
	EvAgentBudgetWarning = kernel.DefineEvent[BudgetWarning]("agent.budget_warning")
)
