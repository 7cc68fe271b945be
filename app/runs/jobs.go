package runs

import (
	"context"
	"slices"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// The jobs of runs (see docs/runs.md, When the server ends a run), each the server's verdict on a run that an agent left behind.
// The appliance registers a handler for each that calls the method named below; the handlers
// are idempotent, as kernel.Job asks: each reads the run again in a Unit of Work of its own and
// does nothing when the run has moved on since the job was enqueued.
const (
	// JobQueuedExpiry fails a run still queued agent.queued_timeout after it was made, with
	// agent_unavailable (ExpireQueued). Enqueued by the trigger with the run; args JobArgs.
	JobQueuedExpiry = "runs.queued_expiry"
	// JobStallCheck fails running or waiting runs with no start or patch for
	// agent.stall_timeout, with interrupted when the agent's consumer was not seen within that
	// time either, else stale (FailStalled). Periodic, no args.
	JobStallCheck = "runs.stall_check"
	// JobCancelTimeout ends a run still not ended agent.cancel_grace after a person asked to
	// cancel it, cancelled with cancel_timeout (TimeoutCancel). Enqueued by Cancel; args JobArgs.
	JobCancelTimeout = "runs.cancel_timeout"
	// JobSigningKeyRotation replaces the invocation signing key once it has signed for
	// agent.signing_key_rotation and deletes the retired keys past their verification window
	// (RotateSigningKey, Keyring.Rotate). Periodic every KeyRotationCheck, no args.
	JobSigningKeyRotation = "runs.signing_key_rotation"
)

// KeyRotationCheck is how often runs.signing_key_rotation looks: a rotation is at most this late.
const KeyRotationCheck = time.Minute

// JobArgs are the arguments of JobQueuedExpiry and JobCancelTimeout: the run's id, nothing else.
type JobArgs struct {
	RunID kernel.ID `json:"run_id"`
}

// enqueue adds the job name for run r, due at, in the Unit of Work of ctx. The key is the run's
// id: each run has at most one job of each name in the queue.
func (s *Service) enqueue(ctx context.Context, name string, r Run, at time.Time) error {
	return s.jobs.Enqueue(ctx, kernel.Job{Name: name, Args: JobArgs{RunID: r.ID}, At: at, Key: string(r.ID)})
}

// ExpireQueued is the job runs.queued_expiry: a run that is still queued fails with
// agent_unavailable (run.state_changed, with no actor); a run in any other state, or gone, is
// left as it is. Errors: internal, unavailable (the job is tried again).
func (s *Service) ExpireQueued(ctx context.Context, id kernel.ID) error {
	return s.judge(ctx, id, func(r Run, _ time.Time) bool { return r.Status == StatusQueued }, Expire)
}

// TimeoutCancel is the job runs.cancel_timeout: a run that has not ended after its cancel
// request ends cancelled with cancel_timeout. Errors: internal, unavailable.
func (s *Service) TimeoutCancel(ctx context.Context, id kernel.ID) error {
	return s.judge(ctx, id, func(r Run, _ time.Time) bool { return !r.Status.Terminal() && r.CancelRequestedAt != nil }, CancelTimeout)
}

// FailStalled is the job runs.stall_check: it fails at most one batch of the runs that are
// running or waiting for input and whose last activity (start, patch) is older than
// agent.stall_timeout, each in a Unit of Work of its own that reads the run again, so a patch
// that lands meanwhile saves it. The reason tells the two cases apart: interrupted
// when the agent's consumer showed no sign of life within the stall timeout either (no save of
// its cursor: it neither polled and acknowledged over REST nor kept a gateway connection that
// acknowledged; Agents.ConsumersSeen, one read for the batch), stale when the consumer is alive
// but the run made no progress. It returns how many it failed; what a full batch leaves is for
// the next check. Errors: internal, unavailable.
func (s *Service) FailStalled(ctx context.Context) (int, error) {
	now := s.now()
	cutoff := now.Add(-s.stallTimeout)
	rs, err := s.store.StalledRuns(ctx, cutoff, s.stallBatch)
	if err != nil || len(rs) == 0 {
		return 0, err
	}
	agentIDs := make([]kernel.ID, 0, len(rs))
	for _, r := range rs {
		if !slices.Contains(agentIDs, r.AgentID) {
			agentIDs = append(agentIDs, r.AgentID)
		}
	}
	seen, err := s.agents.ConsumersSeen(ctx, agentIDs)
	if err != nil {
		return 0, err
	}
	stalled := func(r Run, now time.Time) bool {
		active := r.Status == StatusRunning || r.Status == StatusWaitingInput
		return active && r.LastActivityAt.Before(now.Add(-s.stallTimeout))
	}
	n := 0
	for _, r := range rs {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		t := Stall
		if at, ok := seen[r.AgentID]; !ok || at.Before(cutoff) {
			t = Interrupt
		}
		moved := false
		err := s.uow.Do(ctx, func(ctx context.Context) error {
			var err error
			moved, err = s.judgeIn(ctx, r.ID, stalled, t)
			return err
		})
		if err != nil {
			return n, err
		}
		if moved {
			n++
		}
	}
	return n, nil
}

// RotateSigningKey is the job runs.signing_key_rotation (Keyring.Rotate); a service with no
// keyring has nothing to rotate. Errors: internal, unavailable.
func (s *Service) RotateSigningKey(ctx context.Context) (KeyRotation, error) {
	if s.keys == nil {
		return KeyRotation{}, nil
	}
	return s.keys.Rotate(ctx)
}

// judge moves run id on t in a Unit of Work when applies holds for the run as it is now.
func (s *Service) judge(ctx context.Context, id kernel.ID, applies func(Run, time.Time) bool, t Trigger) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		_, err := s.judgeIn(ctx, id, applies, t)
		return err
	})
}

// judgeIn is judge inside the caller's unit; it reports whether the run moved. A run that no
// longer exists is no error: there is nothing left to judge.
func (s *Service) judgeIn(ctx context.Context, id kernel.ID, applies func(Run, time.Time) bool, t Trigger) (bool, error) {
	r, err := s.store.Run(ctx, id)
	if kernel.CodeOf(err) == kernel.CodeNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	now := s.now()
	if !applies(r, now) {
		return false, nil
	}
	if err := s.move(ctx, &r, t, kernel.NilID, now); err != nil {
		return false, err
	}
	return true, s.store.UpdateRun(ctx, r)
}
