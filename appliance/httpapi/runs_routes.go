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
}

var _ RunUseCases = (*runs.Service)(nil)

// RunRoutes serves what people see of runs: one run with its document, a thread's runs, and the
// cancel request. The agent's own calls (start, patch, finish) come with the invocation token.
func RunRoutes(svc RunUseCases) []Route {
	return []Route{
		{Method: http.MethodGet, Pattern: "/api/v1/runs/{id}", Action: kernel.ActRunRead, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			run, err := svc.Get(r.Context(), r.Actor, id)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, run, nil
		}},
		{Method: http.MethodGet, Pattern: "/api/v1/threads/{id}/runs", Action: kernel.ActRunRead, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			p, err := keysetPage(r)
			if err != nil {
				return 0, nil, err
			}
			items, more, err := svc.ListThread(r.Context(), r.Actor, id, p)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, itemsPage[runs.Run]{Items: nonNil(items), HasMore: more}, nil
		}},
		// The answer is the run: cancelled at once when it was queued, still running with
		// cancel_requested_at set when its agent holds it (the agent confirms).
		{Method: http.MethodPost, Pattern: "/api/v1/runs/{id}/cancel", Action: kernel.ActRunCancel, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			run, err := svc.Cancel(r.Context(), r.Actor, id)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, run, nil
		}},
	}
}
