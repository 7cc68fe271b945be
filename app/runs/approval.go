package runs

import (
	"context"
	"fmt"
	"slices"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// Approvals: a run asks people whether it may go on (docs/runs.md, Approvals). The agent asks
// with its invocation token (RequestApproval); the run waits for input while an approval of it
// is pending; the thread's readers see the request (approval.requested) and its end
// (approval.decided), which the agent, a reader of the thread, receives on its consumer too. An
// approver decides (Decide); nobody deciding before expires_at denies it (the job
// runs.approval_timeout); the run ending cancels it.

// ApprovalState is the state of an approval.
type ApprovalState string

const (
	ApprovalPending   ApprovalState = "pending"
	ApprovalApproved  ApprovalState = "approved"
	ApprovalDenied    ApprovalState = "denied"
	ApprovalTimedOut  ApprovalState = "timed_out"
	ApprovalCancelled ApprovalState = "cancelled"
)

// Valid reports whether s is one of the five states.
func (s ApprovalState) Valid() bool {
	switch s {
	case ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalTimedOut, ApprovalCancelled:
		return true
	}
	return false
}

// The decisions and scopes of Decide.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
	// ScopeOnce approves this request only; ScopeRun also every later request of the same title
	// in the same run, which then passes without asking.
	ScopeOnce = "once"
	ScopeRun  = "run"
)

// Bounds of a request.
const (
	MaxApprovalTitleBytes  = 200
	MaxApprovalDetailBytes = 4 << 10
	MaxApprovers           = 20
	// MinApprovalTimeout and MaxApprovalTimeout bound timeout_s; DefaultApprovalTimeout is what
	// a request without one waits. One second is allowed so that tests can watch a timeout.
	MinApprovalTimeout     = time.Second
	MaxApprovalTimeout     = 24 * time.Hour
	DefaultApprovalTimeout = time.Hour
	// MaxApprovalsShown bounds the approvals a run's card shows.
	MaxApprovalsShown = 20
	// inboxMaxLimit bounds one page of the inbox.
	inboxMaxLimit, inboxDefaultLimit = 100, 50
)

// Error codes of approvals.
var (
	// CodeNotAnApprover: a decision by someone who may read the thread but is not one of the
	// approval's approvers (HTTP 403).
	CodeNotAnApprover = kernel.NewCode("not_an_approver", kernel.ClassForbidden)
	// CodeApprovalDecided: a decision on an approval that is no longer pending (HTTP 409).
	CodeApprovalDecided = kernel.NewCode("approval_decided", kernel.ClassConflict)
	// CodeApproverInvalid: a listed approver who is not an active person able to read the run's
	// thread, or a run with no such default approver (HTTP 422, field approver_ids).
	CodeApproverInvalid = kernel.NewCode("approver_invalid", kernel.ClassUnprocessable)
)

// timeoutSkew is how much earlier than expires_at the timeout job may deny an approval: the
// queue's due time is another node's wall clock.
const timeoutSkew = time.Second

// JobApprovalTimeout denies a pending approval at its expires_at (TimeoutApproval); enqueued with
// the request, in its Unit of Work; args ApprovalJobArgs.
const JobApprovalTimeout = "runs.approval_timeout"

// ApprovalJobArgs are the arguments of JobApprovalTimeout: the approval's id.
type ApprovalJobArgs struct {
	ApprovalID kernel.ID `json:"approval_id"`
}

// The durable events of approvals, scoped to the run's thread: its readers see the card, the
// approvers find it in their inbox (approver_ids), the agent learns the decision.
var (
	EvApprovalRequested = kernel.DefineEvent[Approval]("approval.requested")
	EvApprovalDecided   = kernel.DefineEvent[Approval]("approval.decided")
)

// Approval is a run's question to people, as the API shows it and both events carry it.
type Approval struct {
	ID          kernel.ID     `json:"id"`
	RunID       kernel.ID     `json:"run_id"`
	AgentID     kernel.ID     `json:"agent_id"`
	ThreadID    kernel.ID     `json:"thread_id"`
	ChannelID   kernel.ID     `json:"channel_id"`
	SpaceID     kernel.ID     `json:"space_id"`
	Title       string        `json:"title"`
	Detail      string        `json:"detail"`
	ApproverIDs []kernel.ID   `json:"approver_ids"`
	State       ApprovalState `json:"state"`
	// Decision is approve or deny once decided (deny for a timeout or a cancel), null while
	// pending; Scope is once or run with it.
	Decision *string `json:"decision"`
	Scope    *string `json:"scope"`
	// By is the approver who decided; null while pending, for a timeout and for a cancel.
	By        *kernel.ID `json:"by"`
	TimedOut  bool       `json:"timed_out"`
	ExpiresAt time.Time  `json:"expires_at"`
	CreatedAt time.Time  `json:"created_at"`
	DecidedAt *time.Time `json:"decided_at"`
	// ChannelKind is loaded with the approval so that it can be authorized without a second read.
	ChannelKind string `json:"-"`
}

// threadResource is the approval's thread, whose readers may see it.
func (a Approval) threadResource() kernel.Resource {
	return kernel.Resource{Kind: kernel.ResThread, ID: a.ThreadID, SpaceID: a.SpaceID, ChannelID: a.ChannelID, ChannelKind: a.ChannelKind}
}

func (a Approval) scope() kernel.Scope {
	return kernel.Scope{SpaceID: a.SpaceID, ChannelID: a.ChannelID, ThreadID: a.ThreadID}
}

// ApprovalStore is the approvals repository (storage/approvals.go, migration approvals). Methods
// join the Unit of Work of ctx when there is one.
type ApprovalStore interface {
	// CreateApproval inserts a with its approvers. Errors: internal.
	CreateApproval(ctx context.Context, a Approval) error
	// Approval loads an approval with its approvers and its channel's kind. Errors: not_found.
	Approval(ctx context.Context, id kernel.ID) (Approval, error)
	// PendingApprovals lists the run's pending approvals, oldest first. Errors: internal.
	PendingApprovals(ctx context.Context, runID kernel.ID) ([]Approval, error)
	// RunsApprovals lists the approvals of the runs, in every state, oldest first (at most
	// MaxApprovalsShown of each run, the latest). Errors: internal.
	RunsApprovals(ctx context.Context, runIDs []kernel.ID) ([]Approval, error)
	// RunGrant returns the approval that approved title for the whole run (scope run), and
	// whether there is one. Errors: internal.
	RunGrant(ctx context.Context, runID kernel.ID, title string) (Approval, bool, error)
	// DecideApproval writes a's state, decision, scope, by and decided_at if the stored one is
	// still pending. Errors: not_found, approval_decided (it was decided meanwhile).
	DecideApproval(ctx context.Context, a Approval) error
	// ApproverInbox lists at most limit approvals of which principal is an approver, in state
	// (any when empty), newest first, with ids below before when it is set. Errors: internal.
	ApproverInbox(ctx context.Context, principal kernel.ID, state ApprovalState, before kernel.ID, limit int) ([]Approval, error)
}

// ApprovalInput is the body of the agent's request.
type ApprovalInput struct {
	Title       string      `json:"title"`
	Detail      string      `json:"detail"`
	ApproverIDs []kernel.ID `json:"approver_ids"`
	// TimeoutS is the wait in seconds; 0 is DefaultApprovalTimeout.
	TimeoutS int64 `json:"timeout_s"`
}

// Decision is the body of an approver's decision.
type Decision struct {
	Decision string `json:"decision"`
	Scope    string `json:"scope"`
}

func (in ApprovalInput) validate() (time.Duration, error) {
	if in.Title == "" {
		return 0, kernel.Invalid("title", "title must not be empty")
	}
	if err := checkText("title", in.Title, MaxApprovalTitleBytes); err != nil {
		return 0, err
	}
	if err := checkText("detail", in.Detail, MaxApprovalDetailBytes); err != nil {
		return 0, err
	}
	if len(in.ApproverIDs) > MaxApprovers {
		return 0, kernel.Invalid("approver_ids", "at most %d approvers", MaxApprovers)
	}
	timeout := DefaultApprovalTimeout
	if in.TimeoutS != 0 {
		timeout = time.Duration(in.TimeoutS) * time.Second
		if in.TimeoutS < 0 || timeout < MinApprovalTimeout || timeout > MaxApprovalTimeout {
			return 0, kernel.Invalid("timeout_s", "timeout_s must be between %d and %d seconds",
				int64(MinApprovalTimeout/time.Second), int64(MaxApprovalTimeout/time.Second))
		}
	}
	return timeout, nil
}

// RequestApproval is the agent asking people whether its run may go on: a pending approval whose
// approvers are in.ApproverIDs (each an active person who may read the run's thread) or, without
// them, the person who invoked the run. The run, running, waits for input (run.state_changed);
// approval.requested goes to the thread; runs.approval_timeout is enqueued for expires_at, all in
// one Unit of Work. When the run holds an approval for the run of the same title, the answer is
// approved at once, and nothing waits or is shown. Errors: unauthenticated, not_found,
// invocation_token_invalid, invocation_token_expired, run_ended, conflict (a queued run),
// validation_failed (title, detail, approver_ids, timeout_s), approver_invalid.
func (s *Service) RequestApproval(ctx context.Context, actor kernel.Actor, runID kernel.ID, token string, in ApprovalInput) (Approval, error) {
	if s.approvals == nil {
		return Approval{}, kernel.Errorf(kernel.CodeNotFound, "approvals are not wired")
	}
	timeout, err := in.validate()
	if err != nil {
		return Approval{}, err
	}
	if _, err := s.CheckToken(ctx, actor, token, runID); err != nil {
		return Approval{}, err
	}
	var out Approval
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		r, err := s.ownRunWith(ctx, actor, runID, s.store.RunHead)
		if err != nil {
			return err
		}
		if r.Status.Terminal() {
			return kernel.Errorf(CodeRunEnded, "the run has ended: it is %s", r.Status)
		}
		if r.Status == StatusQueued {
			return kernel.Errorf(kernel.CodeConflict, "the run is queued: start it before asking for approval")
		}
		approvers, err := s.approvers(ctx, r, in.ApproverIDs)
		if err != nil {
			return err
		}
		now := s.now()
		a := Approval{ID: kernel.NewID(), RunID: r.ID, AgentID: r.AgentID, ThreadID: r.ThreadID, ChannelID: r.ChannelID,
			SpaceID: r.SpaceID, Title: in.Title, Detail: in.Detail, ApproverIDs: approvers, State: ApprovalPending,
			ExpiresAt: now.Add(timeout), CreatedAt: now, ChannelKind: r.ChannelKind}
		grant, granted, err := s.approvals.RunGrant(ctx, r.ID, in.Title)
		if err != nil {
			return err
		}
		if granted {
			decided(&a, ApprovalApproved, DecisionApprove, ScopeRun, grant.By, now)
			out = a
			return s.approvals.CreateApproval(ctx, a)
		}
		if err := s.approvals.CreateApproval(ctx, a); err != nil {
			return err
		}
		s.events.Append(ctx, EvApprovalRequested.Event(kernel.Event{Scope: a.scope(), SubjectID: a.ID, ActorID: actor.ID}, a))
		if err := s.jobs.Enqueue(ctx, kernel.Job{Name: JobApprovalTimeout, Args: ApprovalJobArgs{ApprovalID: a.ID},
			At: a.ExpiresAt, Key: string(a.ID)}); err != nil {
			return err
		}
		// Asking is a sign of life: the stall check counts the wait from the answer, not from the
		// last patch.
		r.LastActivityAt, r.UpdatedAt = now, now
		if r.Status == StatusRunning {
			if err := s.move(ctx, &r, WaitInput, actor.ID, now); err != nil {
				return err
			}
		}
		out = a
		return s.store.UpdateRun(ctx, r)
	})
	return out, err
}

// approvers checks the listed approvers of a request on run r, or names the default one: each
// must be an active person who may read the thread. Duplicates count once, in their first place.
func (s *Service) approvers(ctx context.Context, r Run, listed []kernel.ID) ([]kernel.ID, error) {
	ids := listed
	if len(ids) == 0 {
		ids = []kernel.ID{r.InvokedBy}
	}
	out := make([]kernel.ID, 0, len(ids))
	thread := kernel.Resource{Kind: kernel.ResThread, ID: r.ThreadID, SpaceID: r.SpaceID, ChannelID: r.ChannelID, ChannelKind: r.ChannelKind}
	for _, id := range ids {
		if slices.Contains(out, id) {
			continue
		}
		ok := false
		if !id.IsZero() {
			p, active, err := s.agents.Principal(ctx, id)
			if err != nil && !kernel.IsCode(err, kernel.CodeNotFound) {
				return nil, err
			}
			if err == nil && active && p.Kind == kernel.KindPerson {
				if ok, err = s.allowed(ctx, p, chat.ActThreadRead, thread); err != nil {
					return nil, err
				}
			}
		}
		if !ok {
			e := kernel.Errorf(CodeApproverInvalid, "approver %s is not an active person who may read the thread", id)
			if len(listed) == 0 {
				e = kernel.Errorf(CodeApproverInvalid, "the run's invoker cannot approve: name approver_ids")
			}
			e.Field = "approver_ids"
			return nil, e
		}
		out = append(out, id)
	}
	return out, nil
}

// decided fills the end of a.
func decided(a *Approval, state ApprovalState, decision, scope string, by *kernel.ID, now time.Time) {
	a.State, a.Decision, a.Scope, a.By, a.DecidedAt = state, &decision, &scope, by, &now
	a.TimedOut = state == ApprovalTimedOut
}

// GetApproval returns an approval to whoever may read its thread. Errors: unauthenticated,
// not_found.
func (s *Service) GetApproval(ctx context.Context, actor kernel.Actor, id kernel.ID) (Approval, error) {
	if s.approvals == nil {
		return Approval{}, kernel.ErrNotFound
	}
	a, err := s.approvals.Approval(ctx, id)
	if err != nil {
		return Approval{}, err
	}
	if err := s.authz.Authorize(ctx, actor, chat.ActThreadRead, a.threadResource()); err != nil {
		return Approval{}, err
	}
	return a, nil
}

// Decide is an approver's answer: approve or deny, for this request (once) or, approving, for
// every request of the same title in the run (run: the run's other pending ones of that title
// are approved with it). Each decision is approval.decided; the run goes on (running) when no
// approval of it is pending any more. Errors: unauthenticated, not_found (also for one whose
// thread the actor may not read), not_an_approver, approval_decided, validation_failed
// (decision, scope).
func (s *Service) Decide(ctx context.Context, actor kernel.Actor, id kernel.ID, d Decision) (Approval, error) {
	state := ApprovalApproved
	switch d.Decision {
	case DecisionApprove:
	case DecisionDeny:
		state = ApprovalDenied
	default:
		return Approval{}, kernel.Invalid("decision", "decision must be approve or deny")
	}
	if d.Scope == "" {
		d.Scope = ScopeOnce
	}
	if d.Scope != ScopeOnce && d.Scope != ScopeRun {
		return Approval{}, kernel.Invalid("scope", "scope must be once or run")
	}
	var out Approval
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		a, err := s.GetApproval(ctx, actor, id)
		if err != nil {
			return err
		}
		if !slices.Contains(a.ApproverIDs, actor.ID) {
			return kernel.Errorf(CodeNotAnApprover, "you are not an approver of this request")
		}
		if a.State != ApprovalPending {
			return kernel.Errorf(CodeApprovalDecided, "the approval is %s already", a.State)
		}
		now := s.now()
		by := actor.ID
		decided(&a, state, d.Decision, d.Scope, &by, now)
		ended := []Approval{a}
		if state == ApprovalApproved && d.Scope == ScopeRun {
			pending, err := s.approvals.PendingApprovals(ctx, a.RunID)
			if err != nil {
				return err
			}
			for _, p := range pending {
				if p.ID != a.ID && p.Title == a.Title {
					decided(&p, state, d.Decision, d.Scope, &by, now)
					ended = append(ended, p)
				}
			}
		}
		if err := s.endApprovals(ctx, ended, actor.ID); err != nil {
			return err
		}
		out = a
		return s.resumeIfAnswered(ctx, a.RunID, actor.ID, now)
	})
	return out, err
}

// endApprovals stores each of as decided and appends its approval.decided.
func (s *Service) endApprovals(ctx context.Context, as []Approval, actorID kernel.ID) error {
	for _, a := range as {
		if err := s.approvals.DecideApproval(ctx, a); err != nil {
			return err
		}
		s.events.Append(ctx, EvApprovalDecided.Event(kernel.Event{Scope: a.scope(), SubjectID: a.ID, ActorID: actorID}, a))
	}
	return nil
}

// resumeIfAnswered moves run id from waiting_input back to running when none of its approvals
// is pending; its stall timer starts again from now.
func (s *Service) resumeIfAnswered(ctx context.Context, runID, actorID kernel.ID, now time.Time) error {
	pending, err := s.approvals.PendingApprovals(ctx, runID)
	if err != nil || len(pending) > 0 {
		return err
	}
	r, err := s.store.RunHead(ctx, runID)
	if err != nil || r.Status != StatusWaitingInput {
		return err
	}
	if err := s.move(ctx, &r, Resume, actorID, now); err != nil {
		return err
	}
	r.LastActivityAt = now
	return s.store.UpdateRun(ctx, r)
}

// TimeoutApproval is the job runs.approval_timeout: an approval still pending at its expires_at
// is denied, timed out, by nobody (approval.decided), and its run goes on when nothing else of it
// is pending. One decided meanwhile, or gone, is left as it is. A job that runs more than
// timeoutSkew before expires_at (the clocks of two nodes) fails, to be tried again.
// Errors: internal, unavailable.
func (s *Service) TimeoutApproval(ctx context.Context, id kernel.ID) error {
	if s.approvals == nil {
		return nil
	}
	return s.uow.Do(ctx, func(ctx context.Context) error {
		a, err := s.approvals.Approval(ctx, id)
		if kernel.IsCode(err, kernel.CodeNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		now := s.now()
		if a.State != ApprovalPending {
			return nil
		}
		if now.Add(timeoutSkew).Before(a.ExpiresAt) {
			// The queue's clock ran ahead of this node's: the job is tried again shortly, so
			// that the approval is not left pending for good.
			return fmt.Errorf("runs: approval %s is due at %s, not yet", a.ID, a.ExpiresAt.Format(time.RFC3339Nano))
		}
		decided(&a, ApprovalTimedOut, DecisionDeny, ScopeOnce, nil, now)
		if err := s.endApprovals(ctx, []Approval{a}, kernel.NilID); err != nil {
			return err
		}
		return s.resumeIfAnswered(ctx, a.RunID, kernel.NilID, now)
	})
}

// cancelApprovals ends the pending approvals of run id cancelled (denied, by nobody), in the
// caller's Unit of Work: the run ended or a person asked it to stop, so nobody is to answer them.
func (s *Service) cancelApprovals(ctx context.Context, runID, actorID kernel.ID, now time.Time) (int, error) {
	if s.approvals == nil {
		return 0, nil
	}
	pending, err := s.approvals.PendingApprovals(ctx, runID)
	if err != nil || len(pending) == 0 {
		return 0, err
	}
	for i := range pending {
		decided(&pending[i], ApprovalCancelled, DecisionDeny, ScopeOnce, nil, now)
	}
	return len(pending), s.endApprovals(ctx, pending, actorID)
}

// InboxPage is one page of a person's approvals.
type InboxPage struct {
	Before kernel.ID
	Limit  int
	State  ApprovalState
}

// Inbox lists the approvals of which actor is an approver and whose thread it may still read,
// newest first: the pending ones by default ("waiting on me"). It answers whether more lie
// beyond the page. Errors: unauthenticated, validation_failed (state, limit).
func (s *Service) Inbox(ctx context.Context, actor kernel.Actor, p InboxPage) ([]Approval, bool, error) {
	if err := s.authz.Authorize(ctx, actor, ActApprovalInbox, kernel.Resource{Kind: kernel.ResPrincipal, ID: actor.ID}); err != nil {
		return nil, false, err
	}
	if p.State != "" && !p.State.Valid() {
		return nil, false, kernel.Invalid("state", "state must be pending, approved, denied, timed_out or cancelled")
	}
	if p.Limit == 0 {
		p.Limit = inboxDefaultLimit
	}
	if p.Limit < 0 || p.Limit > inboxMaxLimit {
		return nil, false, kernel.Invalid("limit", "limit must be between 1 and %d", inboxMaxLimit)
	}
	if s.approvals == nil {
		return []Approval{}, false, nil
	}
	out := []Approval{}
	before := p.Before
	for {
		batch, err := s.approvals.ApproverInbox(ctx, actor.ID, p.State, before, p.Limit+1)
		if err != nil {
			return nil, false, err
		}
		for i, a := range batch {
			if i == p.Limit {
				break
			}
			before = a.ID
			ok, err := s.allowed(ctx, actor, chat.ActThreadRead, a.threadResource())
			if err != nil {
				return nil, false, err
			}
			if !ok {
				continue
			}
			if len(out) == p.Limit {
				return out, true, nil
			}
			out = append(out, a)
		}
		if len(batch) <= p.Limit {
			return out, false, nil
		}
	}
}

// Approvals returns the pending approvals of run id to whoever may read its thread, for the
// run's view. Errors: unauthenticated, not_found.
func (s *Service) RunApprovals(ctx context.Context, actor kernel.Actor, runID kernel.ID) ([]Approval, error) {
	if _, err := s.Get(ctx, actor, runID); err != nil {
		return nil, err
	}
	if s.approvals == nil {
		return []Approval{}, nil
	}
	return s.approvals.PendingApprovals(ctx, runID)
}

// ApprovalsOfRuns returns the approvals of rs, in every state, by run, for the cards of a
// thread's runs: each run must be readable by actor (run.read), as the runs a thread's page
// shows are. One read for all of them. Errors: unauthenticated, not_found.
func (s *Service) ApprovalsOfRuns(ctx context.Context, actor kernel.Actor, rs []Run) (map[kernel.ID][]Approval, error) {
	out := map[kernel.ID][]Approval{}
	if s.approvals == nil || len(rs) == 0 {
		return out, nil
	}
	ids := make([]kernel.ID, 0, len(rs))
	checked := map[kernel.ID]bool{}
	for _, r := range rs {
		if !checked[r.ThreadID] {
			if err := s.authz.Authorize(ctx, actor, ActRunRead, r.Resource()); err != nil {
				return nil, err
			}
			checked[r.ThreadID] = true
		}
		ids = append(ids, r.ID)
	}
	as, err := s.approvals.RunsApprovals(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		out[a.RunID] = append(out[a.RunID], a)
	}
	return out, nil
}
