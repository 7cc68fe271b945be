package runs

import "bothy.dev/bothy/app/kernel"

// Actions of runs (see docs/runs.md): invoking an agent, and reading and cancelling what it does.
const (
	// ActAgentInvoke is a principal invoking an agent by an @mention in a channel: level invoke.
	ActAgentInvoke kernel.Action = "agent.invoke"
	// ActRunRead is reading a run and its document: whoever may read its thread.
	ActRunRead kernel.Action = "run.read"
	// ActRunCancel is asking a run to stop: the one who invoked it, or a manager of its channel.
	ActRunCancel kernel.Action = "run.cancel"
	// ActApprovalInbox is listing the approvals one is asked to decide: anyone signed in, each
	// approval filtered by the right to read its thread.
	ActApprovalInbox kernel.Action = "approval.inbox.read"
)
