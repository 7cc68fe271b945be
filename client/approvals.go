package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// ApprovalRequest is what a run asks people before it goes on (Invocation.RequestApproval).
// ApproverIDs empty asks the person who invoked the run; Timeout 0 takes the server's default.
type ApprovalRequest struct {
	Title, Detail string
	ApproverIDs   []string
	Timeout       time.Duration
}

// ApprovalDecision is how an approval ended. Decision is "approve" or "deny"; Scope is "once"
// or "run" (an approval for the run lets later requests of the same title pass without asking).
// A request nobody decided in time is denied with TimedOut and no By; one whose run ended
// (cancelled, failed) is denied with State "cancelled".
type ApprovalDecision struct {
	ID, Decision, Scope, By string
	TimedOut                bool
	// State is the approval's state: approved, denied, timed_out or cancelled.
	State string
}

// Approved reports whether the decision lets the run go on.
func (d ApprovalDecision) Approved() bool { return d.Decision == "approve" }

// Approval is an approval as the REST API answers it, and the data of approval.requested and
// approval.decided.
type Approval struct {
	ID          string     `json:"id"`
	RunID       string     `json:"run_id"`
	ThreadID    string     `json:"thread_id"`
	Title       string     `json:"title"`
	Detail      string     `json:"detail"`
	ApproverIDs []string   `json:"approver_ids"`
	State       string     `json:"state"`
	Decision    *string    `json:"decision"`
	Scope       *string    `json:"scope"`
	By          *string    `json:"by"`
	TimedOut    bool       `json:"timed_out"`
	ExpiresAt   time.Time  `json:"expires_at"`
	DecidedAt   *time.Time `json:"decided_at"`
}

// Decided reports whether the approval is no longer pending.
func (a Approval) Decided() bool { return a.State != "" && a.State != "pending" }

func (a Approval) decision() ApprovalDecision {
	d := ApprovalDecision{ID: a.ID, TimedOut: a.TimedOut, State: a.State}
	if a.Decision != nil {
		d.Decision = *a.Decision
	}
	if a.Scope != nil {
		d.Scope = *a.Scope
	}
	if a.By != nil {
		d.By = *a.By
	}
	return d
}

// approvals routes approval.decided from the reader to the RequestApproval that waits for it.
// A decision may overtake the answer of its own request (a quick person), so the decisions of
// the agent's running runs that nobody waits for yet are kept until asked for.
type approvals struct {
	mu      sync.Mutex
	waiting map[string]chan ApprovalDecision
	early   map[string]ApprovalDecision
	order   []string // early's ids, oldest first, to bound it
}

// maxEarlyDecisions bounds the decisions kept before their request answered.
const maxEarlyDecisions = 256

// decided hands d to its waiter, or keeps it for one that comes.
func (ap *approvals) decided(d ApprovalDecision) {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	if ch := ap.waiting[d.ID]; ch != nil {
		delete(ap.waiting, d.ID)
		ch <- d
		return
	}
	if ap.early == nil {
		ap.early = map[string]ApprovalDecision{}
	}
	if _, ok := ap.early[d.ID]; ok {
		return
	}
	ap.early[d.ID] = d
	ap.order = append(ap.order, d.ID)
	if len(ap.order) > maxEarlyDecisions {
		delete(ap.early, ap.order[0])
		ap.order = ap.order[1:]
	}
}

// wait registers a waiter for approval id; a decision already kept comes at once.
func (ap *approvals) wait(id string) chan ApprovalDecision {
	ch := make(chan ApprovalDecision, 1)
	ap.mu.Lock()
	defer ap.mu.Unlock()
	if d, ok := ap.early[id]; ok {
		delete(ap.early, id)
		ch <- d
		return ch
	}
	if ap.waiting == nil {
		ap.waiting = map[string]chan ApprovalDecision{}
	}
	ap.waiting[id] = ch
	return ch
}

func (ap *approvals) forget(id string) {
	ap.mu.Lock()
	delete(ap.waiting, id)
	ap.mu.Unlock()
}

// approvalDecided is peek's part for approval.decided: the decisions of the agent's own
// running runs go to their waiters.
func (a *Agent) approvalDecided(ev Event) {
	var ap Approval
	if json.Unmarshal(ev.Data, &ap) != nil || ap.ID == "" || !ap.Decided() {
		return
	}
	a.mu.Lock()
	_, mine := a.running[ap.RunID]
	a.mu.Unlock()
	if mine {
		a.approvals.decided(ap.decision())
	}
}

// RequestApproval asks people whether the run may go on (POST /api/v1/runs/{id}/approvals) and
// blocks until it is decided: approval.decided for it reaches the agent, or the answer already
// says decided (the same title was approved for the run earlier), or ctx ends. While it waits
// the run is waiting_input and the thread shows the request as a card to its approvers.
// A denied, timed-out or cancelled request is no error: read the decision.
func (inv *Invocation) RequestApproval(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error) {
	body := map[string]any{"title": req.Title, "detail": req.Detail}
	if len(req.ApproverIDs) > 0 {
		body["approver_ids"] = req.ApproverIDs
	}
	if req.Timeout > 0 {
		body["timeout_s"] = max(1, int64(req.Timeout/time.Second))
	}
	var ap Approval
	if err := inv.call(ctx, http.MethodPost, inv.runPath("/approvals"), body, &ap); err != nil {
		return ApprovalDecision{}, err
	}
	if ap.Decided() {
		return ap.decision(), nil
	}
	ch := inv.a.approvals.wait(ap.ID)
	defer inv.a.approvals.forget(ap.ID)
	// A decision made before the waiter stood and not seen by the reader (a reconnect in
	// between) is read once; later ones come as events.
	var cur Approval
	if err := inv.a.c.do(ctx, http.MethodGet, "/api/v1/approvals/"+url.PathEscape(ap.ID), nil, &cur); err == nil && cur.Decided() {
		return cur.decision(), nil
	}
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		return ApprovalDecision{}, fmt.Errorf("client: approval %s: %w", ap.ID, context.Cause(ctx))
	}
}
