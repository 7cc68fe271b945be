package httpapi

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// RunUseCases is what the run routes call; *runs.Service implements it.
type RunUseCases interface {
	Get(ctx context.Context, actor kernel.Actor, id kernel.ID) (runs.Run, error)
	ListThread(ctx context.Context, actor kernel.Actor, threadID kernel.ID, p chat.Page) ([]runs.Run, bool, error)
	Cancel(ctx context.Context, actor kernel.Actor, id kernel.ID) (runs.Run, error)
	Start(ctx context.Context, actor kernel.Actor, id kernel.ID, token string) (runs.Run, error)
	Patch(ctx context.Context, actor kernel.Actor, id kernel.ID, token string, p runs.Patch) (runs.Run, error)
	Finish(ctx context.Context, actor kernel.Actor, id kernel.ID, token string, f runs.Finish) (runs.Run, error)
	RenewToken(ctx context.Context, actor kernel.Actor, id kernel.ID) (runs.InvocationToken, error)
}

// InvocationTokenHeader carries the invocation token of the agent's run calls.
const InvocationTokenHeader = "Invocation-Token"

var _ RunUseCases = (*runs.Service)(nil)

// RunRoutes serves what people see of runs (one run with its document, a thread's runs, the
// cancel request) and the agent's own calls: start, patch and finish come with the invocation
// token in Invocation-Token next to the agent's API token; the token's renewal needs the API
// token alone. The agent's calls are decided as run.read on the run (the agent must still read
// its thread), and the run must be the agent's own.
func RunRoutes(svc RunUseCases) []Route {
	rt := runRoutes{svc: svc}
	return []Route{
		{Method: http.MethodGet, Pattern: "/api/v1/runs/{id}", Action: runs.ActRunRead, Handler: withID(rt.getRun)},
		{Method: http.MethodGet, Pattern: "/api/v1/threads/{id}/runs", Action: runs.ActRunRead, Handler: withID(rt.listThreadRuns)},
		// The answer is the run: cancelled at once when it was queued, still running with
		// cancel_requested_at set when its agent holds it (the agent confirms).
		{Method: http.MethodPost, Pattern: "/api/v1/runs/{id}/cancel", Action: runs.ActRunCancel, Handler: withID(rt.cancelRun)},
		{Method: http.MethodPost, Pattern: "/api/v1/runs/{id}/start", Action: runs.ActRunRead, Handler: withID(rt.startRun)},
		{Method: http.MethodPatch, Pattern: "/api/v1/runs/{id}", Action: runs.ActRunRead, Handler: withIDBody(rt.patchRun)},
		{Method: http.MethodPost, Pattern: "/api/v1/runs/{id}/finish", Action: runs.ActRunRead, Handler: withIDBody(rt.finishRun)},
		{Method: http.MethodPost, Pattern: "/api/v1/runs/{id}/token", Action: runs.ActRunRead, Handler: withID(rt.renewToken)},
	}
}

// runRoutes holds the handlers of RunRoutes.
type runRoutes struct{ svc RunUseCases }

func (rt runRoutes) getRun(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.svc.Get(r.Context(), r.Actor, id))
}

func (rt runRoutes) listThreadRuns(r *Request, threadID kernel.ID) (int, any, error) {
	p, err := keysetPage(r)
	if err != nil {
		return 0, nil, err
	}
	return page(rt.svc.ListThread(r.Context(), r.Actor, threadID, p))
}

func (rt runRoutes) cancelRun(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.svc.Cancel(r.Context(), r.Actor, id))
}

func (rt runRoutes) startRun(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.svc.Start(r.Context(), r.Actor, id, r.Header.Get(InvocationTokenHeader)))
}

func (rt runRoutes) patchRun(r *Request, id kernel.ID, p runs.Patch) (int, any, error) {
	return ok(rt.svc.Patch(r.Context(), r.Actor, id, r.Header.Get(InvocationTokenHeader), p))
}

func (rt runRoutes) finishRun(r *Request, id kernel.ID, f runs.Finish) (int, any, error) {
	return ok(rt.svc.Finish(r.Context(), r.Actor, id, r.Header.Get(InvocationTokenHeader), f))
}

func (rt runRoutes) renewToken(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.svc.RenewToken(r.Context(), r.Actor, id))
}
