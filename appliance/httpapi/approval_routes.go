package httpapi

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// ApprovalUseCases is what the approval routes call; *runs.Service implements it.
type ApprovalUseCases interface {
	RequestApproval(ctx context.Context, actor kernel.Actor, runID kernel.ID, token string, in runs.ApprovalInput) (runs.Approval, error)
	GetApproval(ctx context.Context, actor kernel.Actor, id kernel.ID) (runs.Approval, error)
	Decide(ctx context.Context, actor kernel.Actor, id kernel.ID, d runs.Decision) (runs.Approval, error)
	Inbox(ctx context.Context, actor kernel.Actor, p runs.InboxPage) ([]runs.Approval, bool, error)
	RunApprovals(ctx context.Context, actor kernel.Actor, runID kernel.ID) ([]runs.Approval, error)
}

var _ ApprovalUseCases = (*runs.Service)(nil)

// ApprovalRoutes serves what runs ask people: the agent's request (with the run's invocation
// token), one approval for the readers of its thread, an approver's decision, the caller's
// inbox of approvals, and a run's pending ones.
func ApprovalRoutes(svc ApprovalUseCases) []Route {
	rt := approvalRoutes{svc: svc}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/runs/{id}/approvals", Action: runs.ActRunRead, Handler: withIDBody(rt.request)},
		{Method: http.MethodGet, Pattern: "/api/v1/runs/{id}/approvals", Action: runs.ActRunRead, Handler: withID(rt.runApprovals)},
		{Method: http.MethodGet, Pattern: "/api/v1/approvals/{id}", Action: chat.ActThreadRead, Handler: withID(rt.get)},
		// An approver decides; whoever else reads the thread is told not_an_approver (403).
		{Method: http.MethodPost, Pattern: "/api/v1/approvals/{id}/decide", Action: chat.ActThreadRead, Handler: withIDBody(rt.decide)},
		{Method: http.MethodGet, Pattern: "/api/v1/me/approvals", Action: runs.ActApprovalInbox, Handler: rt.inbox},
	}
}

type approvalRoutes struct{ svc ApprovalUseCases }

func (rt approvalRoutes) request(r *Request, runID kernel.ID, in runs.ApprovalInput) (int, any, error) {
	return created(rt.svc.RequestApproval(r.Context(), r.Actor, runID, r.Header.Get(InvocationTokenHeader), in))
}

func (rt approvalRoutes) runApprovals(r *Request, runID kernel.ID) (int, any, error) {
	items, err := rt.svc.RunApprovals(r.Context(), r.Actor, runID)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, itemsList[runs.Approval]{Items: nonNil(items)}, nil
}

func (rt approvalRoutes) get(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.svc.GetApproval(r.Context(), r.Actor, id))
}

func (rt approvalRoutes) decide(r *Request, id kernel.ID, d runs.Decision) (int, any, error) {
	return ok(rt.svc.Decide(r.Context(), r.Actor, id, d))
}

// inbox reads ?state= (pending by default; all for every state), ?before= and ?limit=.
func (rt approvalRoutes) inbox(r *Request) (int, any, error) {
	kp, err := keysetPage(r)
	if err != nil {
		return 0, nil, err
	}
	p := runs.InboxPage{Before: kp.Before, Limit: kp.Limit, State: runs.ApprovalPending}
	switch s := r.URL.Query().Get("state"); s {
	case "":
	case "all":
		p.State = ""
	default:
		p.State = runs.ApprovalState(s)
	}
	return page(rt.svc.Inbox(r.Context(), r.Actor, p))
}
