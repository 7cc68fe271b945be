package runs

import (
	"context"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
)

// Summary is a run without its document: what run.state_changed carries, and the head of what
// GET /api/v1/runs/{id} answers.
type Summary struct {
	ID        kernel.ID `json:"id"`
	AgentID   kernel.ID `json:"agent_id"`
	ThreadID  kernel.ID `json:"thread_id"`
	ChannelID kernel.ID `json:"channel_id"`
	SpaceID   kernel.ID `json:"space_id"`
	// TriggerMessageID is the message that invoked the agent: the mention, or the first message
	// of the new thread in a channel the agent operates. Nil is kept for runs made otherwise.
	TriggerMessageID *kernel.ID `json:"trigger_message_id"`
	// InvokedBy is the author of the triggering message.
	InvokedBy kernel.ID `json:"invoked_by"`
	Status    Status    `json:"status"`
	// Reason says why a run failed or was cancelled (a code), null otherwise.
	Reason Reason `json:"reason"`
	// ErrorMessage is what the agent said about its failure (Finish's error.message), shown to
	// the thread's readers next to the reason; nil when it said nothing or did not fail.
	ErrorMessage *string `json:"error_message"`
	// Version is the version of the run document: 0 until the agent's first patch.
	Version int `json:"version"`
	// CancelRequestedAt is when a person asked the run to stop; the agent confirms with Cancel.
	CancelRequestedAt *time.Time `json:"cancel_requested_at"`
	CreatedAt         time.Time  `json:"created_at"`
	StartedAt         *time.Time `json:"started_at"`
	EndedAt           *time.Time `json:"ended_at"`
	// LastActivityAt is the last sign of life of the run (made, started, patched); the stall
	// check of a later item reads it.
	LastActivityAt time.Time `json:"last_activity_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Depth counts the agent-to-agent handoffs that led to the run: 0 when a person (or an agent
	// outside any run) invoked it, the depth of run R plus one when an agent's answer in R did.
	Depth int `json:"depth"`
}

// Run is a run as the API shows it: its summary and its latest document, whose Version is the
// summary's.
type Run struct {
	Summary
	Document Document `json:"document"`
	// Usage is what the agent reported the run consumed, cumulative.
	Usage Usage `json:"usage"`
	// OutputBytes is the length of the output in bytes, kept by the store, so that a patch is
	// bounded without the output read (Store.RunHead).
	OutputBytes int `json:"-"`
	// ChannelKind is loaded with the run so that it can be authorized without a second read.
	ChannelKind string `json:"-"`
}

// Resource describes the run for Authorize: in its channel, owned by the one who invoked it.
func (r Run) Resource() kernel.Resource {
	return kernel.Resource{Kind: kernel.ResRun, ID: r.ID, SpaceID: r.SpaceID, ChannelID: r.ChannelID,
		ChannelKind: r.ChannelKind, OwnerID: r.InvokedBy}
}

// Scope is the event scope of the run: its thread, so that whoever reads the thread sees it.
func (r Run) Scope() kernel.Scope {
	return kernel.Scope{SpaceID: r.SpaceID, ChannelID: r.ChannelID, ThreadID: r.ThreadID}
}

// MarshalJSON writes the empty reason as null: a run that has not failed has no reason.
func (r Reason) MarshalJSON() ([]byte, error) { return kernel.MarshalEmptyAsNull(r) }

// UnmarshalJSON reads null as the empty reason.
func (r *Reason) UnmarshalJSON(b []byte) error { return kernel.UnmarshalNullAsEmpty(b, r) }

// Invocation is the payload of agent.invocation, the agent's personal event that a run waits
// for it. The consumer adds the invocation token when it delivers it.
type Invocation struct {
	RunID     kernel.ID `json:"run_id"`
	AgentID   kernel.ID `json:"agent_id"`
	ThreadID  kernel.ID `json:"thread_id"`
	ChannelID kernel.ID `json:"channel_id"`
	SpaceID   kernel.ID `json:"space_id"`
	MessageID kernel.ID `json:"message_id"`
	InvokedBy kernel.ID `json:"invoked_by"`
	// Command is the slash command the message invoked the agent with; absent otherwise.
	Command *InvocationCommand `json:"command,omitempty"`
	// Attachments are the files of the invoking message, which the agent downloads with its
	// token as any reader of the channel; absent when it carries none.
	Attachments []files.Attachment `json:"attachments,omitempty"`
}

// StateChange is the payload of run.state_changed: the run's summary after the change and the
// state it left, null for a run that was just made (queued).
type StateChange struct {
	Summary
	PreviousStatus *Status `json:"previous_status"`
}

// CancelRequest is the payload of run.cancel_requested, the agent's personal event that a person
// asked one of its runs to stop.
type CancelRequest struct {
	RunID       kernel.ID `json:"run_id"`
	AgentID     kernel.ID `json:"agent_id"`
	ThreadID    kernel.ID `json:"thread_id"`
	ChannelID   kernel.ID `json:"channel_id"`
	SpaceID     kernel.ID `json:"space_id"`
	RequestedBy kernel.ID `json:"requested_by"`
	RequestedAt time.Time `json:"requested_at"`
	// Reason is why the server asked (budget_exhausted: the agent's budget is used up, and
	// RequestedBy is the agent whose report used it up); null for a person's request.
	Reason *string `json:"reason"`
}

// TriggerState is what a message that concerned an agent triggered, kept on the message
// (messaging.Message.TriggerState): a stable code that clients show their own text for.
type TriggerState string

const (
	// TriggerTriggered: at least one run was made.
	TriggerTriggered TriggerState = "triggered"
	// TriggerNoInvokeRight: the author does not hold invoke on the channel (level invoke or
	// manage, or owner), so the mentions invoked no agent.
	TriggerNoInvokeRight TriggerState = "no_invoke_right"
	// TriggerAgentDisabled: the agent is disabled (a channel's operator may be; a disabled
	// agent's @handle does not resolve as a mention at all).
	TriggerAgentDisabled TriggerState = "agent_disabled"
	// TriggerAgentCannotRead: the agent holds no grant that lets it read the channel.
	TriggerAgentCannotRead TriggerState = "agent_cannot_read"
	// TriggerCommandAmbiguous: several agents declare the slash command and the message named
	// none of them (/name@handle does).
	TriggerCommandAmbiguous TriggerState = "command_ambiguous"
	// TriggerBudgetExhausted: the agent's budget is used up for the period.
	TriggerBudgetExhausted TriggerState = ReasonBudgetExhausted
	// TriggerHandoffDepthExceeded: an agent's answer would invoke an agent beyond
	// runs.max_handoff_depth handoffs from the person who started the chain.
	TriggerHandoffDepthExceeded TriggerState = "handoff_depth_exceeded"
)

// refusalRank orders the refusals: when no run was made, the message shows the one the author
// can do most about, whatever the order of the agents.
var refusalRank = map[TriggerState]int{TriggerHandoffDepthExceeded: 1, TriggerBudgetExhausted: 2, TriggerAgentCannotRead: 3,
	TriggerAgentDisabled: 4, TriggerCommandAmbiguous: 5, TriggerNoInvokeRight: 6}

// worse returns the refusal of the two that the message shows.
func worse(a, b TriggerState) TriggerState {
	if refusalRank[b] > refusalRank[a] {
		return b
	}
	return a
}

// Store is the runs repository (implemented in storage/runs.go). Methods join the Unit of Work of
// ctx when there is one; reads outside one use the read pool. The output of a run is stored in
// parts, appended by each patch, so that a patch costs the size of the patch and not of the
// output so far; the reads that answer a run (Run and the lists) join the parts into
// Document.Output.
type Store interface {
	// CreateRun inserts r with its document. Errors: conflict (the agent has a run for the same
	// trigger message already).
	CreateRun(ctx context.Context, r Run) error
	// Run loads a run with its whole document and channel kind. Errors: not_found.
	Run(ctx context.Context, id kernel.ID) (Run, error)
	// RunHead loads a run as Run does but without its output: Document.Output is empty and
	// OutputBytes says how long the output is. Errors: not_found.
	RunHead(ctx context.Context, id kernel.ID) (Run, error)
	// ThreadRuns lists one page of a thread's runs in id order (chat.Page: the newest page by
	// default) and whether more lie beyond it in the direction of the page. Errors: internal.
	ThreadRuns(ctx context.Context, threadID kernel.ID, p chat.Page) ([]Run, bool, error)
	// UnendedRuns lists the runs of agent that are queued, running or waiting for input, oldest
	// first, without their output (as RunHead). Errors: internal.
	UnendedRuns(ctx context.Context, agentID kernel.ID) ([]Run, error)
	// StalledRuns lists at most limit runs that are running or waiting for input and whose
	// last_activity_at is before before, least recently active first, without their output (as
	// RunHead). Errors: internal.
	StalledRuns(ctx context.Context, before time.Time, limit int) ([]Run, error)
	// UpdateRun writes the state of r: status, reason, cancel_requested_at, started_at,
	// ended_at, last_activity_at and updated_at. It writes nothing of the document (PatchRun
	// does). Errors: not_found.
	UpdateRun(ctx context.Context, r Run) error
	// PatchRun stores patch p, which r is the result of (ApplyHead): what UpdateRun writes, the
	// version r.Version and the output length r.OutputBytes, the status line and steps of
	// r.Document when p changes them, and p's output: p.Output replaces the stored output, then
	// p.OutputAppend is appended as a new part. r.Document.Output is not read. It writes only
	// if the stored version is still p.BaseVersion(). Errors: not_found, run_version_conflict.
	PatchRun(ctx context.Context, r Run, p Patch) error

	// Budget loads an agent's budget; ok is false when it has none. Errors: internal.
	Budget(ctx context.Context, agentID kernel.ID) (b Budget, ok bool, err error)
	// SetBudget inserts or replaces b. Errors: internal.
	SetBudget(ctx context.Context, b Budget) error
	// DeleteBudget deletes an agent's budget and reports whether it had one. Errors: internal.
	DeleteBudget(ctx context.Context, agentID kernel.ID) (bool, error)
	// PeriodUsage reads the counter of an agent in one period (zero when nothing was counted
	// there). Errors: internal.
	PeriodUsage(ctx context.Context, agentID kernel.ID, p Period, start string) (PeriodUsage, error)
	// AddUsage adds delta to the agent's counter of each period, starts giving each period's key,
	// making the counters that do not exist yet. Errors: internal.
	AddUsage(ctx context.Context, agentID kernel.ID, starts map[Period]string, delta Usage) error
	// MarkBudgetWarned stamps the counter's warning at at unless it was stamped already, and
	// reports whether this call stamped it. Errors: internal.
	MarkBudgetWarned(ctx context.Context, agentID kernel.ID, p Period, start string, at time.Time) (bool, error)
}

// Agents is what runs reads of principals: which of some principals are agents and their status,
// when the agents' consumers were last seen, and who invoked a run. storage implements it on the
// agents, principals and agent_consumers tables.
type Agents interface {
	// AgentStatuses returns the status (agents.StatusActive or agents.StatusDisabled) of each of
	// ids that is an agent, in one read; other principals and unknown ids are absent.
	// Errors: internal.
	AgentStatuses(ctx context.Context, ids []kernel.ID) (map[kernel.ID]string, error)
	// ConsumersSeen returns, in one read, when the consumer of each of ids last showed a sign of
	// life that every node can see: a save of its durable cursor (an ack over REST or the
	// gateway, a gateway connection), whether or not the cursor moved, or a REST poll. An agent
	// whose consumer never showed one is absent. The stall check reads it to tell interrupted
	// from stale. Errors: internal.
	ConsumersSeen(ctx context.Context, ids []kernel.ID) (map[kernel.ID]time.Time, error)
	// Principal returns principal id as an actor to authorize (id, kind, handle, owner flag) and
	// whether it is active: Prepare asks whether the invoker of a run still holds invoke.
	// Errors: not_found.
	Principal(ctx context.Context, id kernel.ID) (actor kernel.Actor, active bool, err error)
	// CommandHolders lists the agents that declare the slash command name, active or not, with
	// their handles. Errors: internal.
	CommandHolders(ctx context.Context, name string) ([]CommandHolder, error)
	// ActiveCommands lists the commands of the active agents, by handle and then each agent's
	// order. Errors: internal.
	ActiveCommands(ctx context.Context) ([]ChannelCommand, error)
	// Owners lists the active owners of the instance. Errors: internal.
	Owners(ctx context.Context) ([]kernel.ID, error)
	// DisabledAgents returns the disabled agents among the principals of the handle keys.
	// Errors: internal.
	DisabledAgents(ctx context.Context, handleKeys []string) ([]kernel.ID, error)
}

// Structure is the part of chat that runs reads: a channel for its operator, a thread to
// authorize its list of runs. *chat.Service implements it without authorizing.
type Structure interface {
	// Channel loads a channel. Errors: not_found.
	Channel(ctx context.Context, id kernel.ID) (chat.Channel, error)
	// Thread loads a thread with the kind of its channel. Errors: not_found.
	Thread(ctx context.Context, id kernel.ID) (chat.Thread, error)
}

var _ Structure = (*chat.Service)(nil)
