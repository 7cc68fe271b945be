package httpapi

import (
	"context"
	"net/http"
	"time"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
)

// ConsumerUseCases is what the consumer routes call; *sync.Consumer implements it.
type ConsumerUseCases interface {
	Poll(ctx context.Context, actor kernel.Actor, cursor *int64, wait time.Duration, limit int) (catchup.Page, error)
	Ack(ctx context.Context, actor kernel.Actor, seq int64) error
}

var _ ConsumerUseCases = (*catchup.Consumer)(nil)

type consumerPageJSON struct {
	Events     []eventJSON `json:"events"`
	NextCursor int64       `json:"next_cursor"`
	HeadSeq    int64       `json:"head_seq"`
}

// ConsumerRoutes serve an agent's consumer over REST, for agents that do not hold a WebSocket:
// GET /api/v1/agents/me/events?cursor=SEQ&wait=30s&limit=N (a long poll) and
// POST /api/v1/agents/me/ack {seq}.
func ConsumerRoutes(s ConsumerUseCases) []Route {
	rt := consumerRoutes{s: s}
	return []Route{
		{Method: http.MethodGet, Pattern: "/api/v1/agents/me/events", Action: catchup.ActAgentConsume, Handler: rt.poll},
		{Method: http.MethodPost, Pattern: "/api/v1/agents/me/ack", Action: catchup.ActAgentConsume, Handler: withBody(rt.ack)},
	}
}

// consumerRoutes holds the handlers of ConsumerRoutes.
type consumerRoutes struct{ s ConsumerUseCases }

// ackBody is the seq an agent has handled, required.
type ackBody struct {
	Seq *int64 `json:"seq"`
}

func (b ackBody) check() error {
	if b.Seq == nil {
		return kernel.Invalid("seq", "seq is required")
	}
	return nil
}

func (rt consumerRoutes) poll(r *Request) (int, any, error) {
	q := r.URL.Query()
	n, set, err := seqParam("cursor", q.Get("cursor"))
	if err != nil {
		return 0, nil, err
	}
	var cursor *int64
	if set {
		cursor = &n
	}
	var wait time.Duration
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, nil, kernel.Invalid("wait", "wait must be a duration such as 25s")
		}
		wait = d
	}
	limit, err := eventLimit(q.Get("limit"))
	if err != nil {
		return 0, nil, err
	}
	p, err := rt.s.Poll(r.Context(), r.Actor, cursor, wait, limit)
	if err != nil {
		return 0, nil, resyncProblem(err, "cursor")
	}
	return http.StatusOK, consumerPageJSON{Events: eventsJSON(p.Events), NextCursor: p.NextAfter, HeadSeq: p.HeadSeq}, nil
}

func (rt consumerRoutes) ack(r *Request, in ackBody) (int, any, error) {
	return noContent(rt.s.Ack(r.Context(), r.Actor, *in.Seq))
}
