package runs

import (
	"context"
	"slices"
	"strings"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// Deps are the ports the service uses; all but Clock are required. runs publishes no
// in-transaction event: it subscribes to messaging.MessageDeciding (OnMessageDeciding),
// messaging.MessagePosted (OnMessagePosted) and agents.AgentDisabled (OnAgentDisabled), which the
// appliance registers on its bus.
type Deps struct {
	Store     Store
	Agents    Agents
	Structure Structure
	UoW       kernel.UnitOfWork
	Events    kernel.EventLog
	Authz     kernel.Authorizer
	Clock     kernel.Clock
	// Keys signs and checks the invocation tokens; the agent's calls need it (nil: they fail
	// with internal).
	Keys *Keyring
	// Jobs enqueues runs.queued_expiry with each new run and runs.cancel_timeout with each
	// cancel request of a started run, in their Units of Work (required).
	Jobs kernel.Jobs
	// DMs answers the participants of a direct message, whose agents a person's message there
	// invokes without a mention (nil: none do).
	DMs DMParticipants
	// Approvals stores what runs ask people (approval.go); nil answers every request of one
	// not_found.
	Approvals ApprovalStore
}

// Config tunes runs. DefaultConfig holds the defaults, which the configuration schema shows
// (agent.*). Every value must be set, and New refuses the service otherwise.
type Config struct {
	// Issuer is the iss claim of the tokens: the instance's public URL, or "bothy".
	Issuer string
	// TokenTTL is how long an invocation token is valid (agent.invocation_token_ttl).
	TokenTTL time.Duration
	// QueuedTimeout (agent.queued_timeout), StallTimeout (agent.stall_timeout) and CancelGrace
	// (agent.cancel_grace) time the jobs; StallBatch bounds the runs one stall check fails.
	QueuedTimeout, StallTimeout, CancelGrace time.Duration
	StallBatch                               int
	// MaxHandoffDepth is how many agent-to-agent handoffs a chain may take before the next
	// mention is refused with handoff_depth_exceeded (runs.max_handoff_depth; 0 allows none).
	MaxHandoffDepth int
}

// DefaultConfig returns the defaults of runs.
func DefaultConfig() Config {
	return Config{Issuer: "bothy", TokenTTL: 15 * time.Minute, QueuedTimeout: 5 * time.Minute,
		StallTimeout: 5 * time.Minute, CancelGrace: 30 * time.Second, StallBatch: 100, MaxHandoffDepth: 5}
}

// problems lists the values of c that New refuses.
func (c Config) problems() []string {
	var out []string
	if c.Issuer == "" {
		out = append(out, "Issuer must be set")
	}
	for name, d := range map[string]time.Duration{"TokenTTL": c.TokenTTL, "QueuedTimeout": c.QueuedTimeout,
		"StallTimeout": c.StallTimeout, "CancelGrace": c.CancelGrace} {
		if d <= 0 {
			out = append(out, name+" must be positive")
		}
	}
	if c.StallBatch <= 0 {
		out = append(out, "StallBatch must be positive")
	}
	if c.MaxHandoffDepth < 0 {
		out = append(out, "MaxHandoffDepth must not be negative")
	}
	slices.Sort(out)
	return out
}

// Service holds the use cases of runs.
type Service struct {
	store     Store
	agents    Agents
	structure Structure
	uow       kernel.UnitOfWork
	events    kernel.EventLog
	authz     kernel.Authorizer
	clock     kernel.Clock
	keys      *Keyring
	issuer    string
	tokenTTL  time.Duration
	jobs      kernel.Jobs

	queuedTimeout, stallTimeout, cancelGrace time.Duration
	stallBatch                               int
	maxHandoffDepth                          int

	// onPatched is told of every stored patch after its commit (OnPatched).
	onPatched func(context.Context, Patched)

	// verified are the invocation tokens this node verified (tokencache.go).
	verified verifiedTokens

	dms       DMParticipants
	approvals ApprovalStore
}

// Patched is a patch after its commit: the run as it is now, with the whole document at the
// patch's version (read back in the patch's Unit of Work, output included, so that the gateway
// can send it as a snapshot), and the patch as the agent sent it. The gateway fans it out as
// run.updated.
type Patched struct {
	Run   Run
	Patch Patch
}

// OnPatched registers f to be told of every stored patch, after its commit, on the goroutine of
// the agent's request (so it must not block). Patches are not logged (they are ephemeral: see docs/runs.md): f is their only
// way to the clients, and a client that missed one reads the stored document. Call it before the
// service is used; a second call replaces the first.
func (s *Service) OnPatched(f func(context.Context, Patched)) { s.onPatched = f }

// New returns the runs service.
func New(d Deps, cfg Config) *Service {
	if d.Store == nil || d.Agents == nil || d.Structure == nil || d.UoW == nil || d.Events == nil || d.Authz == nil || d.Jobs == nil {
		panic("runs: New needs Store, Agents, Structure, UoW, Events, Authz and Jobs")
	}
	if p := cfg.problems(); len(p) > 0 {
		panic("runs: Config: " + strings.Join(p, "; "))
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	return &Service{store: d.Store, agents: d.Agents, structure: d.Structure, uow: d.UoW, events: d.Events,
		authz: d.Authz, clock: d.Clock, keys: d.Keys, issuer: cfg.Issuer, tokenTTL: cfg.TokenTTL, jobs: d.Jobs,
		queuedTimeout: cfg.QueuedTimeout, stallTimeout: cfg.StallTimeout, cancelGrace: cfg.CancelGrace, stallBatch: cfg.StallBatch, dms: d.DMs, approvals: d.Approvals,
		maxHandoffDepth: cfg.MaxHandoffDepth}
}

// now is the clock's time at the precision the store keeps.
func (s *Service) now() time.Time { return s.clock.Now().UTC().Truncate(time.Microsecond) }

// Get returns a run with its latest document (run.read: whoever may read its thread).
// Errors: unauthenticated, not_found (also for a run the actor may not see).
func (s *Service) Get(ctx context.Context, actor kernel.Actor, id kernel.ID) (Run, error) {
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return Run{}, err
	}
	if err := s.authz.Authorize(ctx, actor, ActRunRead, r.Resource()); err != nil {
		return Run{}, err
	}
	return r, nil
}

// ListThread returns one page of a thread's runs in id order, each with its latest document
// (run.read on the thread), and whether more lie beyond it.
// Errors: unauthenticated, not_found, validation_failed (page).
func (s *Service) ListThread(ctx context.Context, actor kernel.Actor, threadID kernel.ID, p chat.Page) ([]Run, bool, error) {
	th, err := s.structure.Thread(ctx, threadID)
	if err != nil {
		return nil, false, err
	}
	if err := s.authz.Authorize(ctx, actor, ActRunRead, th.Resource()); err != nil {
		return nil, false, err
	}
	if p, err = p.Normalize(); err != nil {
		return nil, false, err
	}
	return s.store.ThreadRuns(ctx, th.ID, p)
}

// Cancel asks a run to stop (run.cancel: the one who invoked it, or a manager of its channel).
// It marks cancel_requested_at and appends run.cancel_requested to the agent, in one Unit of Work;
// a run that is still queued, which no agent holds yet, ends cancelled at once (run.state_changed).
// A running run goes on until the agent confirms or agent.cancel_grace passes: the job
// runs.cancel_timeout, enqueued in the same unit, then ends it cancelled with cancel_timeout. Asking again while the first request stands answers the run as it is and appends
// nothing. Errors: unauthenticated, not_found, forbidden, run_ended.
func (s *Service) Cancel(ctx context.Context, actor kernel.Actor, id kernel.ID) (Run, error) {
	var out Run
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		r, err := s.store.Run(ctx, id)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActRunCancel, r.Resource()); err != nil {
			return err
		}
		if r.Status.Terminal() {
			return kernel.Errorf(CodeRunEnded, "the run has ended: it is %s", r.Status)
		}
		if r.CancelRequestedAt != nil {
			out = r
			return nil
		}
		if err := s.requestCancel(ctx, &r, actor.ID, nil, s.now()); err != nil {
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

// requestCancel marks r's cancel request at now, by by (a person, or the agent whose report used
// its budget up), and appends run.cancel_requested with reason (nil for a person's) to the agent.
// Nobody is to answer what a run that stops asked: its pending approvals end cancelled, and a run
// that waited for them goes on to confirm the cancel. A queued run ends cancelled at once; a
// started one gets runs.cancel_timeout, due agent.cancel_grace later. The caller stores r.
func (s *Service) requestCancel(ctx context.Context, r *Run, by kernel.ID, reason *string, now time.Time) error {
	r.CancelRequestedAt, r.UpdatedAt = &now, now
	s.events.Append(ctx, EvRunCancelRequested.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: r.AgentID},
		SubjectID: r.ID, ActorID: by}, CancelRequest{RunID: r.ID, AgentID: r.AgentID, ThreadID: r.ThreadID,
		ChannelID: r.ChannelID, SpaceID: r.SpaceID, RequestedBy: by, RequestedAt: now, Reason: reason}))
	if n, err := s.cancelApprovals(ctx, r.ID, by, now); err != nil {
		return err
	} else if n > 0 && r.Status == StatusWaitingInput {
		if err := s.move(ctx, r, Resume, by, now); err != nil {
			return err
		}
		r.LastActivityAt = now
	}
	if r.Status == StatusQueued {
		return s.move(ctx, r, Cancel, by, now)
	}
	return s.enqueue(ctx, JobCancelTimeout, *r, now.Add(s.cancelGrace))
}

// OnAgentDisabled fails the runs of a disabled agent that have not ended, with agent_disabled,
// inside the Unit of Work that disabled it (subscribed to agents.AgentDisabled). Each change is
// logged as run.state_changed, in the name of the owner who disabled the agent.
func (s *Service) OnAgentDisabled(ctx context.Context, ev agents.AgentDisabled) error {
	rs, err := s.store.UnendedRuns(ctx, ev.AgentID)
	if err != nil {
		return err
	}
	now := s.now()
	for _, r := range rs {
		if err := s.move(ctx, &r, Abort(ReasonAgentDisabled), ev.ActorID, now); err != nil {
			return err
		}
		if err := s.store.UpdateRun(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// move changes r's state on t as Next decides, stamps its times and appends run.state_changed;
// a run that ends cancels its pending approvals. The caller stores r. Errors: those of Next,
// and of the approvals' store.
func (s *Service) move(ctx context.Context, r *Run, t Trigger, actorID kernel.ID, now time.Time) error {
	to, reason, err := Next(r.Status, t)
	if err != nil {
		return err
	}
	from := r.Status
	r.Status, r.Reason, r.UpdatedAt = to, reason, now
	if to == StatusRunning && r.StartedAt == nil {
		r.StartedAt = &now
	}
	if to.Terminal() {
		r.EndedAt = &now
		// A run that ended waits for nobody: what it asked is cancelled with it.
		if from == StatusWaitingInput || from == StatusRunning {
			if _, err := s.cancelApprovals(ctx, r.ID, actorID, now); err != nil {
				return err
			}
		}
	}
	s.logState(ctx, *r, &from, actorID)
	return nil
}

// logState appends run.state_changed for r, which left state from (nil for a new run).
func (s *Service) logState(ctx context.Context, r Run, from *Status, actorID kernel.ID) {
	s.events.Append(ctx, EvRunStateChanged.Event(kernel.Event{Scope: r.Scope(), SubjectID: r.ID, ActorID: actorID},
		StateChange{Summary: r.Summary, PreviousStatus: from}))
}
