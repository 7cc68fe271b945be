package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/ui/components"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// ApprovalUseCases is what the console calls on what runs ask people: the cards of a thread's
// runs, a decision, and the person's approvals; *runs.Service implements it.
type ApprovalUseCases interface {
	ApprovalsOfRuns(ctx context.Context, actor kernel.Actor, rs []runs.Run) (map[kernel.ID][]runs.Approval, error)
	GetApproval(ctx context.Context, actor kernel.Actor, id kernel.ID) (runs.Approval, error)
	Decide(ctx context.Context, actor kernel.Actor, id kernel.ID, d runs.Decision) (runs.Approval, error)
	Inbox(ctx context.Context, actor kernel.Actor, p runs.InboxPage) ([]runs.Approval, bool, error)
}

var _ ApprovalUseCases = (*runs.Service)(nil)

// approvalsPerPage is how many approvals the Approvals page and the badge count at most.
const approvalsPerPage = 50

func (c *chatView) approvalRoutes() {
	c.handle("GET /console/approvals", signedIn, c.approvalsPage)
	c.handle("POST /console/approvals/{id}/decide", signedIn, c.decideApproval)
}

// runApprovals reads the approvals of the runs a page shows, and who they name, for the
// directory.
func (c *chatView) runApprovals(ctx context.Context, rq *request, list []runs.Run) (map[kernel.ID][]runs.Approval, []kernel.ID, error) {
	if c.d.Approvals == nil || len(list) == 0 {
		return nil, nil, nil
	}
	byRun, err := c.d.Approvals.ApprovalsOfRuns(ctx, rq.actor, list)
	if err != nil {
		return nil, nil, err
	}
	var people []kernel.ID
	for _, as := range byRun {
		for _, a := range as {
			people = append(people, a.ApproverIDs...)
			if a.By != nil {
				people = append(people, *a.By)
			}
		}
	}
	return byRun, people, nil
}

// approvalViews are the cards of as for the person of rq.
func (c *chatView) approvalViews(rq *request, as []runs.Approval, dir *principalDir) []components.ApprovalView {
	if len(as) == 0 {
		return nil
	}
	out := make([]components.ApprovalView, len(as))
	for i, a := range as {
		out[i] = c.approvalView(rq, a, dir)
	}
	return out
}

// approvalView is one approval as its card shows it to the person of rq.
func (c *chatView) approvalView(rq *request, a runs.Approval, dir *principalDir) components.ApprovalView {
	v := components.ApprovalView{ID: string(a.ID), Title: a.Title, Detail: a.Detail, State: string(a.State),
		Pending: a.State == runs.ApprovalPending, CSRF: rq.csrf}
	name := func(id kernel.ID) string {
		if id == rq.actor.ID {
			return "you"
		}
		return dir.get(id).Name
	}
	switch a.State {
	case runs.ApprovalPending:
		names := make([]string, 0, len(a.ApproverIDs))
		for _, id := range a.ApproverIDs {
			names = append(names, name(id))
			v.CanDecide = v.CanDecide || id == rq.actor.ID
		}
		v.Line = "Waiting for " + strings.Join(names, ", ")
		v.Expires = a.ExpiresAt.UTC().Format(time.RFC3339)
		v.Left = timeLeft(a.ExpiresAt.Sub(c.d.Clock.Now()))
	case runs.ApprovalApproved:
		v.Line = "Approved"
		if a.By != nil {
			v.Line += " by " + name(*a.By)
		}
		if a.Scope != nil && *a.Scope == runs.ScopeRun {
			v.Line += " for this run"
		}
	case runs.ApprovalDenied:
		v.Line = "Denied"
		if a.By != nil {
			v.Line += " by " + name(*a.By)
		}
	case runs.ApprovalTimedOut:
		v.Line = "Timed out: nobody decided in time, so it was denied"
	case runs.ApprovalCancelled:
		v.Line = "Cancelled: the run stopped"
	}
	return v
}

// timeLeft says how long a pending approval has left, roughly.
func timeLeft(d time.Duration) string {
	switch {
	case d <= 0:
		return "expiring"
	case d < time.Minute:
		return fmt.Sprintf("%d s left", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min left", int(d.Minutes()))
	}
	return fmt.Sprintf("%d h %d min left", int(d.Hours()), int(d.Minutes())%60)
}

// withApprovals puts the link of the Approvals page in the left column, with how many wait on
// the person (up to a page of them).
func (c *chatView) withApprovals(rq *request, v *pages.ChatView) error {
	if c.d.Approvals == nil {
		return nil
	}
	items, _, err := c.d.Approvals.Inbox(rq.ctx(), rq.actor, runs.InboxPage{State: runs.ApprovalPending, Limit: approvalsPerPage})
	if err != nil {
		return err
	}
	v.ApprovalsShown, v.Approvals = true, len(items)
	return nil
}

// approvalsPage lists what waits on the person, newest first, each with its buttons.
func (c *chatView) approvalsPage(rq *request) error {
	if !c.chatReady() || c.d.Approvals == nil {
		return errNoChat
	}
	items, more, err := c.d.Approvals.Inbox(rq.ctx(), rq.actor, runs.InboxPage{State: runs.ApprovalPending, Limit: approvalsPerPage})
	if err != nil {
		return err
	}
	need := make([]kernel.ID, 0, len(items))
	for _, a := range items {
		need = append(need, a.AgentID)
		need = append(need, a.ApproverIDs...)
	}
	dir, err := c.directory(rq.ctx(), rq.actor, need)
	if err != nil {
		return err
	}
	v := pages.ApprovalsView{Chrome: c.chrome(rq, "Approvals", "chat"), More: more}
	places := map[kernel.ID]string{}
	for _, a := range items {
		place, ok := places[a.ChannelID]
		if !ok {
			place = "a channel"
			if ch, err := c.d.Chat.GetChannel(rq.ctx(), rq.actor, a.ChannelID); err == nil {
				if ch, _, err = c.named(rq, ch); err == nil {
					place = channelPlace(ch)
				}
			}
			places[a.ChannelID] = place
		}
		href := "/console/chat"
		if th, err := c.d.Chat.ThreadRef(rq.ctx(), a.ThreadID); err == nil {
			href = threadHref(th) + "#r-" + string(a.RunID)
		}
		card := c.approvalView(rq, a, dir)
		card.Back = "approvals"
		v.Items = append(v.Items, pages.ApprovalItem{Href: href, Place: place, Agent: dir.get(a.AgentID).Handle, Card: card})
	}
	return c.render(rq, http.StatusOK, pages.Approvals(v))
}

// decideApproval is an approver's button on a card: approve, deny or approve for the run. The
// script gets the run's card back; a plain form goes back to the run in its thread, or to the
// Approvals page when it came from there.
func (c *chatView) decideApproval(rq *request) error {
	id, err := c.runID(rq)
	if err != nil {
		return err
	}
	if c.d.Approvals == nil {
		return errNoChat
	}
	d := runs.Decision{Decision: rq.r.PostFormValue("decision"), Scope: runs.ScopeOnce}
	if d.Decision == "approve_run" {
		d.Decision, d.Scope = runs.DecisionApprove, runs.ScopeRun
	}
	a, err := c.d.Approvals.Decide(rq.ctx(), rq.actor, id, d)
	flash := layouts.Flash{Kind: "ok", Text: "Approved."}
	switch {
	case err == nil:
		if a.State == runs.ApprovalDenied {
			flash.Text = "Denied."
		}
	case refusal(err, runs.CodeApprovalDecided, kernel.CodeValidation):
		flash = layouts.Flash{Kind: "error", Text: "It was decided already."}
		if kernel.IsCode(err, kernel.CodeValidation) {
			flash.Text = formError(err)
		}
		if a, err = c.d.Approvals.GetApproval(rq.ctx(), rq.actor, id); err != nil {
			return err
		}
	default:
		return err
	}
	if wantsFragment(rq) {
		r, err := c.d.Runs.Get(rq.ctx(), rq.actor, a.RunID)
		if err != nil {
			return err
		}
		return c.renderRun(rq, r)
	}
	if rq.r.PostFormValue("back") == "approvals" {
		c.redirect(rq, "/console/approvals", flash)
		return nil
	}
	return c.backToThread(rq, a.ThreadID, "#r-"+string(a.RunID), flash)
}
