package runs

import (
	"errors"
	"fmt"

	"bothy.dev/bothy/app/kernel"
)

// Trigger is something that happens to a run: a call of the agent, or the verdict of a job or
// of the server. Next decides what it does. The triggers are the values below and what Fail and
// Abort return; the zero Trigger is a fault of the caller, which Next refuses.
type Trigger struct {
	name   string
	reason Reason
}

// The names of the triggers; Next switches on them.
const (
	nameStart         = "start"
	nameWaitInput     = "wait_input"
	nameResume        = "resume"
	nameSucceed       = "succeed"
	nameFail          = "fail"
	nameCancel        = "cancel"
	nameCancelTimeout = "cancel_timeout"
	nameExpire        = "expire"
	nameStall         = "stall"
	nameInterrupt     = "interrupt"
	nameAbort         = "abort"
)

// The agent's triggers, each from a call with the run's invocation token.
var (
	// Start: the agent takes the run (POST /runs/{id}/start); queued → running.
	Start = Trigger{name: nameStart}
	// WaitInput: the agent asks a person something and waits; running → waiting_input.
	WaitInput = Trigger{name: nameWaitInput}
	// Resume: the agent goes on after the answer; waiting_input → running.
	Resume = Trigger{name: nameResume}
	// Succeed: the agent finishes with outcome succeeded; running | waiting_input → succeeded.
	Succeed = Trigger{name: nameSucceed}
	// Cancel: the cancel a person asked for is done; any state that has not ended → cancelled.
	// The agent confirms it after run.cancel_requested; the service also uses it for a run that
	// is still queued, which no agent holds and so can end at once.
	Cancel = Trigger{name: nameCancel}
)

// The server's triggers, from the jobs of runs (jobs.go).
var (
	// CancelTimeout: agent.cancel_grace passed after a cancel request without the agent's
	// confirmation; any state that has not ended → cancelled with cancel_timeout.
	CancelTimeout = Trigger{name: nameCancelTimeout, reason: ReasonCancelTimeout}
	// Expire: the run stayed queued too long; queued → failed with agent_unavailable.
	Expire = Trigger{name: nameExpire, reason: ReasonAgentUnavailable}
	// Stall: the run made no progress for too long; running | waiting_input → failed with stale.
	Stall = Trigger{name: nameStall, reason: ReasonStale}
	// Interrupt: the agent's connection was lost while the run was active;
	// running | waiting_input → failed with interrupted.
	Interrupt = Trigger{name: nameInterrupt, reason: ReasonInterrupted}
)

// Fail is the agent finishing with outcome failed; running | waiting_input → failed. reason is
// the agent's own code for it (lower-case letters, digits, underscores; at most 64 bytes), or
// empty for agent_error. The server's reasons (stale, cancel_timeout, …) are refused with
// validation_failed: an agent must not pass its failure off as the server's diagnosis.
func Fail(reason Reason) Trigger { return Trigger{name: nameFail, reason: reason} }

// Abort is the server failing a run that has not ended yet, in any state, for a reason outside
// the run itself: the agent was disabled (agent_disabled), or the re-check before delivery refused the
// invocation (permission_revoked). reason must be a code as for Fail.
func Abort(reason Reason) Trigger { return Trigger{name: nameAbort, reason: reason} }

// String returns the trigger's name, for messages and logs.
func (t Trigger) String() string {
	if t.name == "" {
		return "none"
	}
	return t.name
}

// Next returns the state a run in state from moves to on t, and the reason it ended with when
// that is failed or cancelled. A run that has ended stays as it is: every trigger then answers
// run_ended, so a late confirmation, a retried finish or a job that lost a race changes nothing.
// Errors: run_ended; already_started (Start on a run that is running or waiting for input);
// conflict (a trigger that does not apply in this state, such as Resume on a running run);
// validation_failed (a reason Fail may not carry); a plain error, so internal_error, for what
// only a bug in the server makes: an unknown state, the zero Trigger, Abort without a reason
// code. On error Next returns from and no reason.
func Next(from Status, t Trigger) (Status, Reason, error) {
	if !from.Valid() {
		return from, "", fmt.Errorf("runs: run in unknown state %q", from)
	}
	if from.Terminal() {
		return from, "", kernel.Errorf(CodeRunEnded, "the run has ended: it is %s", from)
	}
	active := from == StatusRunning || from == StatusWaitingInput
	switch t.name {
	case nameStart:
		if from == StatusQueued {
			return StatusRunning, "", nil
		}
		return from, "", kernel.Errorf(CodeAlreadyStarted, "the run has already started")
	case nameWaitInput:
		if from == StatusRunning {
			return StatusWaitingInput, "", nil
		}
	case nameResume:
		if from == StatusWaitingInput {
			return StatusRunning, "", nil
		}
	case nameSucceed:
		if active {
			return StatusSucceeded, "", nil
		}
	case nameFail:
		reason := t.reason
		if reason == "" {
			reason = ReasonAgentError
		}
		if !validReasonCode(reason) {
			return from, "", kernel.Invalid("reason", "reason must be a code of lower-case letters, digits and underscores, at most %d bytes", maxReasonLen)
		}
		if serverReasons[reason] {
			return from, "", kernel.Invalid("reason", "reason %q is given by the server only", reason)
		}
		if active {
			return StatusFailed, reason, nil
		}
	case nameCancel:
		return StatusCancelled, "", nil
	case nameCancelTimeout:
		return StatusCancelled, t.reason, nil
	case nameExpire:
		if from == StatusQueued {
			return StatusFailed, t.reason, nil
		}
	case nameStall, nameInterrupt:
		if active {
			return StatusFailed, t.reason, nil
		}
	case nameAbort:
		if !validReasonCode(t.reason) {
			// Abort's reason comes from the server's code, never from a request.
			return from, "", errors.New("runs: Abort needs a reason code")
		}
		return StatusFailed, t.reason, nil
	default:
		return from, "", errors.New("runs: no trigger")
	}
	return from, "", kernel.Errorf(kernel.CodeConflict, "a run that is %s cannot %s", from, t)
}
