package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
)

// Outcome is how the agent ends its run with Finish.
type Outcome string

const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	// OutcomeCancelled confirms a person's cancel request (run.cancel_requested); it is refused
	// while no cancel was asked for, so an agent cannot pass off giving up as someone's cancel.
	OutcomeCancelled Outcome = "cancelled"
)

// RunError is the error an agent gives with outcome failed: Code becomes the run's reason (see
// Fail), Message the run's error_message, which the thread's readers see with it.
type RunError struct {
	Code    Reason `json:"code"`
	Message string `json:"message,omitempty"`
}

// Finish is the body of the agent's finish call.
type Finish struct {
	Outcome Outcome   `json:"outcome"`
	Error   *RunError `json:"error,omitempty"`
}

// InvocationToken is a signed invocation token with its expiry.
type InvocationToken struct {
	Token     string    `json:"invocation_token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Start is the agent taking its run: queued → running, logged as run.state_changed.
// Errors: unauthenticated, not_found, invocation_token_invalid, invocation_token_expired,
// already_started (a second start), run_ended.
func (s *Service) Start(ctx context.Context, actor kernel.Actor, id kernel.ID, token string) (Run, error) {
	return s.agentChange(ctx, actor, id, token, func(ctx context.Context, r *Run, now time.Time) error {
		if err := s.move(ctx, r, Start, actor.ID, now); err != nil {
			return err
		}
		r.LastActivityAt = now
		return nil
	})
}

// Patch applies the agent's patch to the run document (ApplyHead) and stores it with its new
// version (Store.PatchRun: the output by parts, so the write costs the patch, not the output so
// far); a patch is not logged, but told to OnPatched after the commit. It answers the run whole,
// as GET does, read back in the same Unit of Work. Errors: unauthenticated, not_found,
// invocation_token_invalid, invocation_token_expired, run_ended, conflict (the run is still
// queued: start it first), run_version_conflict, validation_failed.
func (s *Service) Patch(ctx context.Context, actor kernel.Actor, id kernel.ID, token string, p Patch) (Run, error) {
	if _, err := s.CheckToken(ctx, actor, token, id); err != nil {
		return Run{}, err
	}
	var out Run
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		r, err := s.ownRunWith(ctx, actor, id, s.store.RunHead)
		if err != nil {
			return err
		}
		if r.Status.Terminal() {
			return kernel.Errorf(CodeRunEnded, "the run has ended: it is %s", r.Status)
		}
		if r.Status == StatusQueued {
			return kernel.Errorf(kernel.CodeConflict, "the run is queued: start it before patching it")
		}
		doc, n, err := ApplyHead(r.Document, r.OutputBytes, p)
		if err != nil {
			return err
		}
		now := s.now()
		r.Document, r.OutputBytes, r.Version, r.LastActivityAt, r.UpdatedAt = doc, n, doc.Version, now, now
		prev := r.Usage
		if p.Usage != nil {
			r.Usage = prev.max(*p.Usage)
		}
		if err := s.store.PatchRun(ctx, r, p); err != nil {
			return err
		}
		if err := s.countUsage(ctx, r, prev, now); err != nil {
			return err
		}
		// PATCH answers the run as GET does, with the whole output: it is read, not rewritten.
		out, err = s.store.Run(ctx, id)
		return err
	})
	if err == nil && s.onPatched != nil {
		// The request may end the moment it is answered; the fan-out must not end with it. The
		// usage is the agent's owner's business, not the thread's: run.updated leaves it out.
		p.Usage = nil
		s.onPatched(context.WithoutCancel(ctx), Patched{Run: out, Patch: p})
	}
	return out, err
}

// Finish ends the run as the agent says: succeeded, failed (with its error code as the reason,
// agent_error without one) or cancelled (only after a cancel request), logged as
// run.state_changed. Errors: unauthenticated, not_found, invocation_token_invalid,
// invocation_token_expired, run_ended, validation_failed (outcome, reason, error.message), conflict
// (finishing a queued run, or cancelled without a cancel request).
func (s *Service) Finish(ctx context.Context, actor kernel.Actor, id kernel.ID, token string, f Finish) (Run, error) {
	var t Trigger
	switch f.Outcome {
	case OutcomeSucceeded:
		t = Succeed
	case OutcomeFailed:
		var reason Reason
		if f.Error != nil {
			reason = f.Error.Code
			if err := checkText("error.message", f.Error.Message, MaxErrorMessageBytes); err != nil {
				return Run{}, err
			}
		}
		t = Fail(reason)
	case OutcomeCancelled:
		t = Cancel
	default:
		return Run{}, kernel.Invalid("outcome", "outcome must be succeeded, failed or cancelled")
	}
	return s.agentChange(ctx, actor, id, token, func(ctx context.Context, r *Run, now time.Time) error {
		if f.Outcome == OutcomeCancelled && r.CancelRequestedAt == nil && !r.Status.Terminal() {
			return kernel.Errorf(kernel.CodeConflict, "nobody asked to cancel the run: finish it as succeeded or failed")
		}
		if f.Outcome == OutcomeFailed && f.Error != nil && f.Error.Message != "" {
			msg := f.Error.Message
			r.ErrorMessage = &msg // before move, so that run.state_changed carries it
		}
		if err := s.move(ctx, r, t, actor.ID, now); err != nil {
			return err
		}
		r.LastActivityAt = now
		return nil
	})
}

// MaxErrorMessageBytes bounds the message an agent gives with a failure: a sentence or a few,
// not a log.
const MaxErrorMessageBytes = 2 << 10

// RenewToken signs a new invocation token for the agent's own run that has not ended. The agent's
// API token is enough: the run must be its own, and it must still be allowed to read the thread.
// Errors: unauthenticated, not_found, run_ended, internal (no key).
func (s *Service) RenewToken(ctx context.Context, actor kernel.Actor, id kernel.ID) (InvocationToken, error) {
	r, err := s.ownRun(ctx, actor, id)
	if err != nil {
		return InvocationToken{}, err
	}
	if r.Status.Terminal() {
		return InvocationToken{}, kernel.Errorf(CodeRunEnded, "the run has ended: it is %s", r.Status)
	}
	return s.IssueToken(ctx, r)
}

// IssueToken signs an invocation token for r's agent (the delivery of agent.invocation and
// RenewToken). It does not check permissions. Errors: internal.
func (s *Service) IssueToken(ctx context.Context, r Run) (InvocationToken, error) {
	if s.keys == nil {
		return InvocationToken{}, errors.New("runs: no keyring to sign invocation tokens")
	}
	key, kid, err := s.keys.Signer(ctx)
	if err != nil {
		return InvocationToken{}, err
	}
	c := NewInvocationClaims(s.issuer, r.Summary, s.clock.Now(), s.tokenTTL)
	tok, err := Issue(key, kid, c)
	if err != nil {
		return InvocationToken{}, err
	}
	return InvocationToken{Token: tok, ExpiresAt: time.Unix(c.ExpiresAt, 0).UTC()}, nil
}

// CheckToken verifies an invocation token sent by actor and returns its claims: the token must
// be valid now, for run wantRun (NilID: any run) and issued to actor, and signed by the current
// key or a retired one within its verification window (Keyring). Errors:
// invocation_token_invalid (also a key id no such key has), invocation_token_expired, internal
// (no keyring, or the keys could not be read).
func (s *Service) CheckToken(ctx context.Context, actor kernel.Actor, token string, wantRun kernel.ID) (InvocationClaims, error) {
	if token == "" {
		return InvocationClaims{}, kernel.Errorf(CodeInvocationTokenInvalid, "send the invocation token as Invocation-Token")
	}
	if s.keys == nil {
		return InvocationClaims{}, errors.New("runs: no keyring to check invocation tokens")
	}
	c, err := s.verifiedClaims(ctx, token)
	if err != nil {
		return InvocationClaims{}, err
	}
	if err := c.validAt(s.clock.Now(), wantRun); err != nil {
		return InvocationClaims{}, err
	}
	if c.Subject != actor.ID {
		return InvocationClaims{}, invalidToken("the invocation token is for another agent", nil)
	}
	return c, nil
}

// ownRun reads run id for its agent: another principal's run is not_found, and the agent must
// still be allowed to read the run's thread (run.read).
func (s *Service) ownRun(ctx context.Context, actor kernel.Actor, id kernel.ID) (Run, error) {
	return s.ownRunWith(ctx, actor, id, s.store.Run)
}

// ownRunWith is ownRun reading the run with read (Store.Run, or Store.RunHead for a patch).
func (s *Service) ownRunWith(ctx context.Context, actor kernel.Actor, id kernel.ID,
	read func(context.Context, kernel.ID) (Run, error)) (Run, error) {
	if !actor.Authenticated() {
		return Run{}, kernel.Errorf(kernel.CodeUnauthenticated, "no principal")
	}
	r, err := read(ctx, id)
	if err != nil {
		return Run{}, err
	}
	if err := s.authz.Authorize(ctx, actor, ActRunRead, r.Resource()); err != nil {
		return Run{}, err
	}
	if r.AgentID != actor.ID {
		return Run{}, kernel.ErrNotFound
	}
	return r, nil
}

// agentChange checks the token, reads the agent's own run and applies change to it in one Unit
// of Work, then stores it.
func (s *Service) agentChange(ctx context.Context, actor kernel.Actor, id kernel.ID, token string,
	change func(ctx context.Context, r *Run, now time.Time) error) (Run, error) {
	if _, err := s.CheckToken(ctx, actor, token, id); err != nil {
		return Run{}, err
	}
	var out Run
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		r, err := s.ownRun(ctx, actor, id)
		if err != nil {
			return err
		}
		if err := change(ctx, &r, s.now()); err != nil {
			return err
		}
		if err := s.store.UpdateRun(ctx, r); err != nil {
			return err
		}
		out = r
		return nil
	})
	return out, err
}

// Prepare is the last step before agent.invocation reaches its agent (the REST poll and the
// gateway): it re-checks that the run has not ended, that the agent may still read its thread
// and that whoever invoked it still may (mayStillInvoke), and adds data.invocation_token and
// data.expires_at to the payload. Other events pass unchanged. An invocation that must not be
// delivered answers deliver false; when the agent lost the right to read the thread of a queued
// run, or its invoker the right to invoke, that run fails with permission_revoked in its own
// Unit of Work (run.state_changed), so that nobody waits for it. Errors: internal.
func (s *Service) Prepare(ctx context.Context, agent kernel.Actor, e kernel.LoggedEvent) (payload []byte, deliver bool, err error) {
	if e.Type == EvInteractionCreated.Name && e.Scope.PrincipalID == agent.ID && agent.Kind == kernel.KindAgent {
		return s.prepareInteraction(ctx, agent, e)
	}
	if e.Type != EvAgentInvocation.Name || e.Scope.PrincipalID != agent.ID {
		return e.Payload, true, nil
	}
	inv, err := EvAgentInvocation.Decode(e)
	if err != nil {
		return nil, false, err
	}
	r, err := s.store.Run(ctx, inv.RunID)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if r.AgentID != agent.ID || r.Status.Terminal() {
		return nil, false, nil
	}
	reads, err := s.allowed(ctx, agent, ActRunRead, r.Resource())
	if err != nil {
		return nil, false, err
	}
	invokes := true
	if reads {
		if invokes, err = s.mayStillInvoke(ctx, r); err != nil {
			return nil, false, err
		}
	}
	if !reads || !invokes {
		if r.Status == StatusQueued {
			if err := s.revoke(ctx, r.ID); err != nil {
				return nil, false, err
			}
		}
		return nil, false, nil
	}
	tok, err := s.IssueToken(ctx, r)
	if err != nil {
		return nil, false, err
	}
	if payload, err = json.Marshal(prepared(inv, tok)); err != nil {
		return nil, false, fmt.Errorf("runs: agent.invocation %d: %w", e.Seq, err)
	}
	return payload, true, nil
}

// PreparedInvocation is the data of agent.invocation as Prepare delivers it to its agent: the
// logged Invocation with the run's invocation token. Its members are in the order of their names.
type PreparedInvocation struct {
	AgentID kernel.ID `json:"agent_id"`
	// Attachments are the files of the invoking message; absent when it carries none.
	Attachments []files.Attachment `json:"attachments,omitempty"`
	ChannelID   kernel.ID          `json:"channel_id"`
	// Command is the slash command that invoked the agent; absent for any other invocation.
	Command         *InvocationCommand `json:"command,omitempty"`
	ExpiresAt       time.Time          `json:"expires_at"`
	InvocationToken string             `json:"invocation_token"`
	InvokedBy       kernel.ID          `json:"invoked_by"`
	MessageID       kernel.ID          `json:"message_id"`
	RunID           kernel.ID          `json:"run_id"`
	SpaceID         kernel.ID          `json:"space_id"`
	ThreadID        kernel.ID          `json:"thread_id"`
}

func prepared(inv Invocation, tok InvocationToken) PreparedInvocation {
	return PreparedInvocation{AgentID: inv.AgentID, Attachments: inv.Attachments, ChannelID: inv.ChannelID, Command: inv.Command, ExpiresAt: tok.ExpiresAt,
		InvocationToken: tok.Token, InvokedBy: inv.InvokedBy, MessageID: inv.MessageID, RunID: inv.RunID,
		SpaceID: inv.SpaceID, ThreadID: inv.ThreadID}
}

// mayStillInvoke re-checks, before a delivery, the right the trigger checked of the one who
// invoked r (see docs/runs.md): the invoker must be active and hold invoke on the run's channel
// (agent.invoke). The run the operator of a channel got from a new thread asked no invoke of the
// thread's author (OnMessageDeciding: whoever may open a thread invokes it), so for it the author
// must still be allowed to open a thread there (thread.create); it is told apart by the agent
// being the channel's operator and the invoker the thread's creator, read only when invoke is
// refused. A run with no invoker asks nothing. Errors: internal.
func (s *Service) mayStillInvoke(ctx context.Context, r Run) (bool, error) {
	if r.InvokedBy.IsZero() {
		return true, nil
	}
	invoker, active, err := s.agents.Principal(ctx, r.InvokedBy)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return false, nil
	}
	if err != nil || !active {
		return false, err
	}
	channel := kernel.Resource{Kind: kernel.ResChannel, ID: r.ChannelID, SpaceID: r.SpaceID, ChannelID: r.ChannelID,
		ChannelKind: r.ChannelKind}
	ok, err := s.allowed(ctx, invoker, ActAgentInvoke, channel)
	if ok || err != nil {
		return ok, err
	}
	ch, err := s.structure.Channel(ctx, r.ChannelID)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return false, nil
	}
	if err != nil || ch.OperatorID == nil || *ch.OperatorID != r.AgentID {
		return false, err
	}
	th, err := s.structure.Thread(ctx, r.ThreadID)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return false, nil
	}
	if err != nil || th.CreatedBy != r.InvokedBy {
		return false, err
	}
	return s.allowed(ctx, invoker, chat.ActThreadCreate, channel)
}

// revoke fails queued run id with permission_revoked, in its own Unit of Work; a run that moved
// on meanwhile is left as it is.
func (s *Service) revoke(ctx context.Context, id kernel.ID) error {
	return s.uow.Do(ctx, func(ctx context.Context) error {
		r, err := s.store.Run(ctx, id)
		if err != nil {
			return err
		}
		if r.Status != StatusQueued {
			return nil
		}
		if err := s.move(ctx, &r, Abort(ReasonPermissionRevoked), kernel.NilID, s.now()); err != nil {
			return err
		}
		return s.store.UpdateRun(ctx, r)
	})
}
