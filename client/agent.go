package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Outcomes of Finish.
const (
	Succeeded = "succeeded"
	Failed    = "failed"
	Cancelled = "cancelled" // confirms a person's cancel request; refused while none was made
)

// ErrCancelRequested is the cause of a handler's context when a person asked its run to stop
// (run.cancel_requested): context.Cause(ctx) answers it.
var ErrCancelRequested = errors.New("bothy: the run's cancel was requested")

// ErrBudgetExhausted is the cause of a handler's context when the server asked its run to stop
// because the agent's budget is used up (run.cancel_requested with the reason budget_exhausted).
// It wraps ErrCancelRequested: errors.Is(cause, ErrCancelRequested) holds for it too, and the
// cancel is confirmed the same way.
var ErrBudgetExhausted = fmt.Errorf("%w: the agent's budget is used up", ErrCancelRequested)

// RunError is the reason of a failed run: Code is lower-case letters, digits and underscores
// (agent_error when Finish is given an error of another type).
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

func (e *RunError) Error() string { return e.Code + ": " + e.Message }

// RunStep is one step of a run's document; a patch upserts steps by ID and changes only the
// fields set.
type RunStep struct {
	ID     string `json:"id"`
	Kind   string `json:"kind,omitempty"`   // thought, tool_call, message, task
	Title  string `json:"title,omitempty"`  //
	Status string `json:"status,omitempty"` // pending, running, done, failed
	Detail string `json:"detail,omitempty"`
}

// RunPatch is one change of a run's document. Nil Status and Output leave them as they are;
// Output replaces the output before OutputAppend is appended.
type RunPatch struct {
	Status       *string
	Steps        []RunStep
	Output       *string
	OutputAppend string
	// Usage reports what the run consumed so far, cumulative over the run (the totals, not
	// the increase since the last patch); nil reports nothing. The server counts it against
	// the agent's budget.
	Usage *RunUsage
}

// RunUsage is a run's consumption: tokens in and out, and what they cost in US dollars.
type RunUsage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// InvocationCommand is the slash command that invoked the agent ("/name args"): Name without
// the slash or the @handle, Args the rest of the message after it, trimmed.
type InvocationCommand struct {
	Name string `json:"name"`
	Args string `json:"args"`
}

// RunDocument is what a run shows while it works.
type RunDocument struct {
	Version int       `json:"version"`
	Status  string    `json:"status"`
	Steps   []RunStep `json:"steps"`
	Output  string    `json:"output"`
}

// Run is a run of an agent as the REST API answers it.
type Run struct {
	ID        string      `json:"id"`
	AgentID   string      `json:"agent_id"`
	ThreadID  string      `json:"thread_id"`
	ChannelID string      `json:"channel_id"`
	Status    string      `json:"status"` // queued, running, waiting_input, succeeded, failed, cancelled
	Reason    *string     `json:"reason"`
	Document  RunDocument `json:"document"`
}

// IsCode reports whether err is an *APIError with the code (already_started,
// run_version_conflict, run_ended, …).
func IsCode(err error, code string) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == code
}

// DefaultMaxConcurrent is how many handlers an Agent runs at once when MaxConcurrent is 0.
const DefaultMaxConcurrent = 8

// Agent follows the agent's consumer, over the gateway (Run) or the REST long poll
// (RunLongPoll), and hands each agent.invocation to a handler, up to MaxConcurrent at once. It
// acknowledges an invocation only once its handler is done, and never past one that is not: the
// consumer's acks, reconnects and the invocation token are its business, not the handler's.
type Agent struct {
	// MaxConcurrent bounds the handlers that run at once: 0 is DefaultMaxConcurrent, 1 hands
	// the invocations one at a time, in seq order. Set it before Run.
	MaxConcurrent int

	c *Client
	// renewBefore: a token with less than this left is renewed before a call.
	renewBefore time.Duration
	// pollWait is the wait of each long poll (the server allows up to 25 s).
	pollWait time.Duration
	// onInteraction handles interaction.created (OnInteraction, interactions.go); nil: none.
	// It is guarded by mu.
	onInteraction func(context.Context, *Interaction) error

	mu        sync.Mutex
	running   map[string]context.CancelCauseFunc // run id → cancel of its handler
	cancelled map[string]error                   // cancel requests seen before their handler ran, with their cause
	flight    *flight                            // the handlers of the Run that runs, or nil
	approvals approvals                          // RequestApproval's waiters
}

// NewAgent returns an agent of the instance at baseURL that authenticates with its API token.
// The options are the Client's (WithLogger, WithBackoff, …).
func NewAgent(baseURL, token string, opts ...Option) *Agent {
	a := &Agent{
		c:           New(baseURL, token, opts...),
		renewBefore: 30 * time.Second,
		pollWait:    25 * time.Second,
		running:     map[string]context.CancelCauseFunc{},
		cancelled:   map[string]error{},
	}
	a.c.peek = a.peek
	return a
}

// Client is the agent's client, for the other REST calls (Me, PostMessage, …).
func (a *Agent) Client() *Client { return a.c }

// Run follows the gateway until ctx ends or the server refuses the agent for good (see
// Client.Run), and calls handle for each agent.invocation, in a goroutine of its own, up to
// MaxConcurrent at once; the invocations beyond wait their turn in seq order, and while they
// wait Run stops taking frames from the connection (after a bounded buffer), so that the
// server, not the agent's memory, holds the backlog. The other events (messages, …) are
// acknowledged as they pass.
//
// The acknowledged seq is a low-water mark: it never passes an invocation whose handler has
// not returned, so a crash redelivers exactly the unfinished ones (a Start of a run started
// before then answers already_started, see Start).
//
// The handler's ctx is cancelled, with the cause ErrCancelRequested, when a person asks the run
// to stop (ErrBudgetExhausted, which wraps it, when the server does because the agent's budget
// is used up); when the handler then returns, Run confirms the cancel (Finish cancelled) unless the
// handler finished the run itself. A handler that returns nil after Start without Finish
// finishes the run succeeded. A handler that returns an error ends Run with it, wrapped: the
// other handlers' contexts are cancelled, Run waits for them, and the failed invocation and
// any after it that were not done are not acknowledged: the next Run gets them again.
func (a *Agent) Run(ctx context.Context, handle func(ctx context.Context, inv *Invocation) error) error {
	if handle == nil {
		return errors.New("client: Agent.Run needs a handler")
	}
	f, err := a.begin(ctx, handle)
	if err != nil {
		return err
	}
	err = a.c.Run(f.ctx, func(ev Event) error {
		if !a.handles(ev.Type) {
			f.forget(ev.Seq)
			return nil
		}
		// The reader delivered it already (peek); Run's cursor, the ack's bound, moves past it
		// only when this returns.
		return f.wait(f.deliver(ev))
	})
	return a.end(ctx, f, err)
}

// begin starts the handlers' bookkeeping of one Run.
func (a *Agent) begin(ctx context.Context, handle func(context.Context, *Invocation) error) (*flight, error) {
	n := a.MaxConcurrent
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	f := newFlight(ctx, a, handle, n)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.flight != nil {
		f.stop(nil)
		return nil, errors.New("client: the Agent is running already")
	}
	a.flight = f
	return f, nil
}

// end waits for the handlers of f and returns what ended its Run: the first handler's error,
// else ctx's, else err.
func (a *Agent) end(ctx context.Context, f *flight, err error) error {
	f.stop(nil)
	f.wg.Wait()
	a.mu.Lock()
	a.flight = nil
	a.mu.Unlock()
	f.mu.Lock()
	failed := f.failed
	f.mu.Unlock()
	switch {
	case failed != nil:
		return failed
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}

// peek sees each logged event as it arrives, before Run hands it: it cancels the handler of a
// run whose cancel was requested, and starts the handler of an invocation while earlier ones
// still run.
func (a *Agent) peek(ev Event) {
	switch ev.Type {
	case "agent.invocation", "interaction.created":
		a.mu.Lock()
		f := a.flight
		a.mu.Unlock()
		if f != nil && ev.Seq > a.c.Cursor() && a.handles(ev.Type) {
			f.deliver(ev)
		}
		return
	case "approval.decided":
		a.approvalDecided(ev)
		return
	case "run.cancel_requested":
	default:
		return
	}
	var d struct {
		RunID  string  `json:"run_id"`
		Reason *string `json:"reason"`
	}
	if json.Unmarshal(ev.Data, &d) != nil || d.RunID == "" {
		return
	}
	cause := ErrCancelRequested
	if d.Reason != nil && *d.Reason == "budget_exhausted" {
		cause = ErrBudgetExhausted
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if cancel := a.running[d.RunID]; cancel != nil {
		cancel(cause)
		return
	}
	a.cancelled[d.RunID] = cause
}

func (a *Agent) invoke(ctx context.Context, ev Event, handle func(context.Context, *Invocation) error) error {
	if ev.Type == "interaction.created" {
		return a.interact(ctx, ev)
	}
	var d struct {
		RunID     string             `json:"run_id"`
		ThreadID  string             `json:"thread_id"`
		ChannelID string             `json:"channel_id"`
		SpaceID   string             `json:"space_id"`
		MessageID string             `json:"message_id"`
		InvokedBy string             `json:"invoked_by"`
		Token     string             `json:"invocation_token"`
		ExpiresAt time.Time          `json:"expires_at"`
		Content   *string            `json:"content"`
		Command   *InvocationCommand `json:"command"`
		// Attachments are the invoking message's files; absent when it carries none.
		Attachments []Attachment `json:"attachments"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil || d.RunID == "" {
		return fmt.Errorf("client: agent.invocation %d does not decode: %w", ev.Seq, err)
	}
	inv := &Invocation{
		a: a, Seq: ev.Seq, RunID: d.RunID, ThreadID: d.ThreadID, ChannelID: d.ChannelID,
		SpaceID: d.SpaceID, InvokedBy: d.InvokedBy, Command: d.Command, token: d.Token, expiresAt: d.ExpiresAt,
	}
	inv.Message.ID, inv.Message.ThreadID, inv.Message.Attachments = d.MessageID, d.ThreadID, d.Attachments
	if d.Content != nil {
		inv.Message.Content = *d.Content
	} else if d.MessageID != "" {
		m, err := a.fetchMessage(ctx, d.MessageID)
		if err != nil {
			return fmt.Errorf("client: run %s: read its message: %w", d.RunID, err)
		}
		inv.Message = m
	}
	// The event names the invoking message's files; where it names none, the message read
	// from the API may.
	inv.Attachments = d.Attachments
	if inv.Attachments == nil {
		inv.Attachments = inv.Message.Attachments
	}

	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	a.mu.Lock()
	a.running[d.RunID] = cancel
	if cause := a.cancelled[d.RunID]; cause != nil {
		delete(a.cancelled, d.RunID)
		cancel(cause)
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.running, d.RunID)
		a.mu.Unlock()
	}()

	err := handle(hctx, inv)
	cancelRequested := errors.Is(context.Cause(hctx), ErrCancelRequested)
	if ctx.Err() != nil {
		// Run stops: a handler that is done is done; one that left its run started is not,
		// and comes again.
		if err == nil && inv.isStarted() && !inv.isFinished() {
			err = ctx.Err()
		}
		return err
	}
	switch {
	case cancelRequested && (err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrCancelRequested)):
		if !inv.isFinished() {
			if ferr := inv.Finish(ctx, Cancelled, nil); ferr != nil && !IsCode(ferr, "run_ended") {
				return ferr
			}
		}
		return nil
	case err != nil:
		return err
	case inv.isStarted() && !inv.isFinished():
		return inv.Finish(ctx, Succeeded, nil)
	}
	return nil
}

func (a *Agent) fetchMessage(ctx context.Context, id string) (Message, error) {
	var m Message
	err := a.c.do(ctx, http.MethodGet, "/api/v1/messages/"+url.PathEscape(id), nil, &m)
	return m, err
}

// Invocation is one agent.invocation: the run the agent was asked to do and the message that
// asked. Its methods carry the run's invocation token, renewed before it expires, and keep the
// run document's version. They may be called from the handler's goroutines, one at a time.
type Invocation struct {
	a *Agent
	// Seq is the event's place in the log.
	Seq       int64
	RunID     string
	ThreadID  string
	ChannelID string
	SpaceID   string
	InvokedBy string
	// Message is the message that invoked the agent, its content included.
	Message Message
	// Command is the slash command the message invoked the agent with, nil for a mention or
	// any other invocation.
	Command *InvocationCommand
	// Attachments are the files of the invoking message, in order (nil for none): the agent
	// downloads them with its own token (Client().DownloadFile), as far as its rights on the
	// channel let it read them.
	Attachments []Attachment

	mu        sync.Mutex
	token     string
	expiresAt time.Time
	version   int
	started   bool
	finished  bool
	replies   int
}

// Version is the run document's version the last Update left (0 before the first).
func (inv *Invocation) Version() int {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.version
}

func (inv *Invocation) isStarted() bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.started
}

func (inv *Invocation) isFinished() bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.finished
}

// call sends one request with the invocation token, renewing it first when it is about to
// expire, and once more after the server said it expired (a refused token changed nothing).
func (inv *Invocation) call(ctx context.Context, method, path string, body, out any) error {
	tok, err := inv.Token(ctx)
	if err != nil {
		return err
	}
	err = inv.a.c.doHeader(ctx, method, path, body, out, http.Header{"Invocation-Token": {tok}})
	if !IsCode(err, "invocation_token_expired") {
		return err
	}
	if _, err := inv.renew(ctx); err != nil {
		return err
	}
	inv.mu.Lock()
	tok = inv.token
	inv.mu.Unlock()
	return inv.a.c.doHeader(ctx, method, path, body, out, http.Header{"Invocation-Token": {tok}})
}

// Token is the run's invocation token, renewed first when less than 30 seconds are left, for
// calls the Invocation does not make itself.
func (inv *Invocation) Token(ctx context.Context) (string, error) {
	inv.mu.Lock()
	tok, exp := inv.token, inv.expiresAt
	inv.mu.Unlock()
	if tok != "" && time.Until(exp) > inv.a.renewBefore {
		return tok, nil
	}
	return inv.renew(ctx)
}

func (inv *Invocation) renew(ctx context.Context) (string, error) {
	var t struct {
		Token     string    `json:"invocation_token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := inv.a.c.do(ctx, http.MethodPost, inv.runPath("/token"), nil, &t); err != nil {
		return "", fmt.Errorf("client: renew the invocation token of run %s: %w", inv.RunID, err)
	}
	inv.mu.Lock()
	inv.token, inv.expiresAt = t.Token, t.ExpiresAt
	inv.mu.Unlock()
	return t.Token, nil
}

func (inv *Invocation) runPath(suffix string) string {
	return "/api/v1/runs/" + url.PathEscape(inv.RunID) + suffix
}

// Start takes the run: queued → running. When the run was started already (the invocation came
// again after a crash) it answers the run as it is, with its document's version adopted, and the
// *APIError already_started, which the caller may take as success (IsCode).
func (inv *Invocation) Start(ctx context.Context) (Run, error) {
	var r Run
	err := inv.call(ctx, http.MethodPost, inv.runPath("/start"), nil, &r)
	if IsCode(err, "already_started") {
		var cur Run
		if gerr := inv.a.c.do(ctx, http.MethodGet, inv.runPath(""), nil, &cur); gerr != nil {
			return r, gerr
		}
		r = cur
	} else if err != nil {
		return r, err
	}
	inv.mu.Lock()
	inv.started, inv.version = true, r.Document.Version
	inv.mu.Unlock()
	return r, err
}

// Update applies patch to the run's document with the next version. A conflict
// (run_version_conflict: something else patched the run) is returned, not retried.
func (inv *Invocation) Update(ctx context.Context, patch RunPatch) (Run, error) {
	inv.mu.Lock()
	next := inv.version + 1
	inv.mu.Unlock()
	body := map[string]any{"version": next}
	if patch.Status != nil {
		body["status"] = *patch.Status
	}
	if patch.Steps != nil {
		body["steps"] = patch.Steps
	}
	if patch.Output != nil {
		body["output"] = *patch.Output
	}
	if patch.OutputAppend != "" {
		body["output_append"] = patch.OutputAppend
	}
	if patch.Usage != nil {
		body["usage"] = patch.Usage
	}
	var r Run
	if err := inv.call(ctx, http.MethodPatch, inv.runPath(""), body, &r); err != nil {
		return r, err
	}
	inv.mu.Lock()
	inv.version = max(inv.version, next)
	inv.mu.Unlock()
	return r, nil
}

// SetStatus replaces the run's status line.
func (inv *Invocation) SetStatus(ctx context.Context, status string) error {
	_, err := inv.Update(ctx, RunPatch{Status: &status})
	return err
}

// AppendOutput appends text to the run's output.
func (inv *Invocation) AppendOutput(ctx context.Context, text string) error {
	_, err := inv.Update(ctx, RunPatch{OutputAppend: text})
	return err
}

// Reply posts content into the run's thread as the run's answer (the message's run_id). Its
// client_msg_id is derived from the run id and the number of the reply, so a retry after a
// crash answers the message posted the first time instead of posting it twice.
func (inv *Invocation) Reply(ctx context.Context, content string) (Message, error) {
	inv.mu.Lock()
	inv.replies++
	id := "run-" + inv.RunID
	if inv.replies > 1 {
		id += "-" + strconv.Itoa(inv.replies)
	}
	inv.mu.Unlock()
	var m Message
	err := inv.call(ctx, http.MethodPost, "/api/v1/threads/"+url.PathEscape(inv.ThreadID)+"/messages",
		map[string]any{"content": content, "client_msg_id": id}, &m)
	return m, err
}

// Finish ends the run with outcome (Succeeded, Failed or Cancelled). For Failed, reason says
// why: a *RunError gives its code, any other error the code agent_error with its text.
func (inv *Invocation) Finish(ctx context.Context, outcome string, reason error) error {
	body := map[string]any{"outcome": outcome}
	if reason != nil && outcome == Failed {
		var re *RunError
		if !errors.As(reason, &re) {
			re = &RunError{Code: "agent_error", Message: reason.Error()}
		}
		body["error"] = re
	}
	if err := inv.call(ctx, http.MethodPost, inv.runPath("/finish"), body, nil); err != nil {
		return err
	}
	inv.mu.Lock()
	inv.finished = true
	inv.mu.Unlock()
	return nil
}
