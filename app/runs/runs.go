// Package runs is what an agent does with an invocation: the run with its lifecycle, the run
// document it streams, and the invocation token that lets it act for the run (see docs/runs.md).
//
// The pure rules below are what every path (the agent's REST calls, the gateway, the jobs)
// decides with, so that they all decide the same way:
//
//   - Next is the transition function of the run states,
//     queued → running ⇄ waiting_input → succeeded | failed | cancelled.
//   - Apply applies an agent's patch to the run document, Merge folds consecutive patches into
//     one for the fan-out of run.updated. ApplyHead is Apply without the output text, bounded by
//     the output's length: the Store keeps the output in parts and appends a patch's own, so
//     that a run streaming its answer costs each patch its size, not the output so far.
//   - Issue and Check sign and verify the invocation token (app/kernel/jose, EdDSA).
//
// The Service (service.go, trigger.go) holds the use cases on the runs table, through its Store
// port: the trigger that decides which agents a message invokes before it is stored
// (OnMessageDeciding) and makes their queued runs after message.created (OnMessagePosted), two
// in-transaction subscribers of messaging; reading runs, a person's cancel request, and
// failing the runs of a disabled agent (OnAgentDisabled); and the agent's own calls (agent.go:
// Start, Patch, Finish with the invocation token, RenewToken, and Prepare, which signs the token
// into agent.invocation at delivery); and the jobs (jobs.go) that end the runs an agent left
// behind: ExpireQueued, FailStalled, TimeoutCancel. The Keyring (keyring.go) holds the
// instance's Ed25519 signing keys, kept in the database: the current one, made on first use and
// rotated by the job runs.signing_key_rotation, and the retired ones that still verify. It owns the durable events
// agent.invocation, run.state_changed and run.cancel_requested.
//
// # Patches, as an agent author sees them
//
// A patch is a JSON merge: what it carries changes, what it leaves out stays.
//
//   - version is the document's new version: the first patch after start sends 1, each next one
//     the current plus one. Anything else is run_version_conflict, so a retried or reordered patch
//     never applies twice.
//   - status replaces the status line (one short line, "Searching the docs…"); "" clears it.
//   - steps are upserted by id, in order: a step with a new id is appended, a step with a known
//     id changes only the fields it sets (so {"id":"s1","status":"done"} completes a step
//     without repeating its title). A new step must name its kind; its status defaults to
//     running.
//   - output_append appends to the output. This is the streaming case: send each chunk of text
//     as it comes, the server keeps the whole, and a client that arrives late reads it all.
//   - output replaces the output, for an agent that rewrites its answer or sends the whole text
//     each time. When a patch carries both, output is applied first and output_append after it.
//
// Every patch is checked against the Max* bounds and refused whole with validation_failed and
// the field's name (status, steps[2].title, output_append, …); the document is then left as it
// was. An empty patch is valid and only moves the version on.
//
// It must not import storage, HTTP or the gateway. The pure functions must not read the clock or
// keys themselves: the caller passes the time and the key lookup in (the Service reads its Clock).
package runs

import "bothy.dev/bothy/app/kernel"

// Error codes of runs. Their class decides the HTTP status and the close code.
var (
	// CodeAlreadyStarted: start of a run that is running or waiting for input (HTTP 409). An
	// agent that crashed before its ack gets the invocation again and learns this way that the
	// run is already its own.
	CodeAlreadyStarted = kernel.NewCode("already_started", kernel.ClassConflict)
	// CodeRunEnded: any change to a run that has succeeded, failed or been cancelled (HTTP 409).
	CodeRunEnded = kernel.NewCode("run_ended", kernel.ClassConflict)
	// CodeRunVersionConflict: a patch whose version is not the document's next one (HTTP 409).
	// It is not the kernel's precondition_failed, which answers 412 for a stale message edit: an
	// agent's patch carries its version in the body, not in an If-Match header, so it is a
	// conflict (409) with the document's state.
	CodeRunVersionConflict = kernel.NewCode("run_version_conflict", kernel.ClassConflict)
	// CodeInvocationTokenInvalid: an invocation token that is malformed, not signed by a key of
	// this instance, not yet valid, or for another run (HTTP 401).
	CodeInvocationTokenInvalid = kernel.NewCode("invocation_token_invalid", kernel.ClassUnauthenticated)
	// CodeInvocationTokenExpired: an invocation token past its expiry; the agent renews it with
	// POST /api/v1/runs/{id}/token (HTTP 401).
	CodeInvocationTokenExpired = kernel.NewCode("invocation_token_expired", kernel.ClassUnauthenticated)
)

// Status is the state of a run.
type Status string

const (
	StatusQueued       Status = "queued"
	StatusRunning      Status = "running"
	StatusWaitingInput Status = "waiting_input"
	StatusSucceeded    Status = "succeeded"
	StatusFailed       Status = "failed"
	StatusCancelled    Status = "cancelled"
)

// Valid reports whether s is one of the six states; storage reads states back as text.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusWaitingInput, StatusSucceeded, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Terminal reports whether a run in state s has ended: nothing changes it any more.
func (s Status) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// Reason says why a run failed or was cancelled; it is empty for a run that succeeded or that
// was cancelled by the agent's confirmation. It is a stable code: clients show their own text
// for it, and alerting counts by it.
type Reason string

// The reasons the server gives. An agent may not give them itself (see Fail): each one is a
// diagnosis only the server can make.
const (
	// ReasonAgentUnavailable: the run stayed queued past agent.queued_timeout; no connection of the
	// agent started it (job runs.queued_expiry).
	ReasonAgentUnavailable Reason = "agent_unavailable"
	// ReasonStale: the agent's connection is alive but the run made no progress (no heartbeat of
	// the run, no patch) for too long (job runs.stall_check).
	ReasonStale Reason = "stale"
	// ReasonInterrupted: the agent's connection went away and did not come back in time while the
	// run was active (job runs.stall_check).
	ReasonInterrupted Reason = "interrupted"
	// ReasonCancelTimeout: a person asked to cancel and the agent did not confirm within
	// agent.cancel_grace (job runs.cancel_timeout).
	ReasonCancelTimeout Reason = "cancel_timeout"
	// ReasonAgentDisabled: the agent was disabled while the run had not ended.
	ReasonAgentDisabled Reason = "agent_disabled"
	// ReasonPermissionRevoked: the re-check before delivery found that the person who triggered
	// the run no longer holds invoke, or that the agent may no longer read the channel.
	ReasonPermissionRevoked Reason = "permission_revoked"
)

// ReasonAgentError is the reason of a run the agent itself reports as failed without naming one.
const ReasonAgentError Reason = "agent_error"

// serverReasons are the reasons only the server may give.
var serverReasons = map[Reason]bool{
	ReasonAgentUnavailable:  true,
	ReasonStale:             true,
	ReasonInterrupted:       true,
	ReasonCancelTimeout:     true,
	ReasonAgentDisabled:     true,
	ReasonPermissionRevoked: true,
}

// maxReasonLen bounds a reason an agent gives; a reason is a code, not a message.
const maxReasonLen = 64

// validReasonCode reports whether r looks like a code: lower-case ASCII letters, digits and
// underscores, starting with a letter.
func validReasonCode(r Reason) bool {
	if r == "" || len(r) > maxReasonLen || r[0] < 'a' || r[0] > 'z' {
		return false
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
