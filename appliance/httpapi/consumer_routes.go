package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"bothy.dev/bothy/app/kernel"
	appsync "bothy.dev/bothy/app/sync"
)

// ConsumerUseCases is what the consumer routes call; *sync.Consumer implements it.
type ConsumerUseCases interface {
	Poll(ctx context.Context, actor kernel.Actor, cursor *int64, wait time.Duration, limit int) (appsync.Page, error)
	Ack(ctx context.Context, actor kernel.Actor, seq int64) error
}

var _ ConsumerUseCases = (*appsync.Consumer)(nil)

type consumerPageJSON struct {
	Events     []eventJSON `json:"events"`
	NextCursor int64       `json:"next_cursor"`
	HeadSeq    int64       `json:"head_seq"`
}

// ConsumerRoutes serve an agent's consumer over REST, for agents that do not hold a WebSocket:
// GET /api/v1/agents/me/events?cursor=SEQ&wait=30s&limit=N (a long poll) and
// POST /api/v1/agents/me/ack {seq}.
func ConsumerRoutes(s ConsumerUseCases) []Route {
	return []Route{
		{Method: http.MethodGet, Pattern: "/api/v1/agents/me/events", Action: kernel.ActAgentConsume, Handler: func(r *Request) (int, any, error) {
			q := r.URL.Query()
			var cursor *int64
			if v := q.Get("cursor"); v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return 0, nil, &kernel.Error{Code: kernel.CodeCursorInvalid, Field: "cursor", Message: "cursor must be a seq (an integer of 0 or more)"}
				}
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
			limit := 0
			if v := q.Get("limit"); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					return 0, nil, kernel.Invalid("limit", "limit must be an integer from 1 to %d", appsync.MaxLimit)
				}
				limit = n
			}
			p, err := s.Poll(r.Context(), r.Actor, cursor, wait, limit)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, consumerPageJSON{Events: eventsJSON(p.Events), NextCursor: p.NextAfter, HeadSeq: p.HeadSeq}, nil
		}},
		{Method: http.MethodPost, Pattern: "/api/v1/agents/me/ack", Action: kernel.ActAgentConsume, Handler: func(r *Request) (int, any, error) {
			var in struct {
				Seq *int64 `json:"seq"`
			}
			if err := r.Decode(&in); err != nil {
				return 0, nil, err
			}
			if in.Seq == nil {
				return 0, nil, kernel.Invalid("seq", "seq is required")
			}
			if err := s.Ack(r.Context(), r.Actor, *in.Seq); err != nil {
				return 0, nil, err
			}
			return http.StatusNoContent, nil, nil
		}},
	}
}
