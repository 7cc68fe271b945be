package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
)

// CatchUpUseCase is what the event routes call; *catchup.Service implements it.
type CatchUpUseCase interface {
	CatchUp(ctx context.Context, actor kernel.Actor, after int64, limit int) (catchup.Page, error)
}

var _ CatchUpUseCase = (*catchup.Service)(nil)

// eventJSON is one event as catch-up answers it; data is the payload exactly as logged.
type eventJSON struct {
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"created_at"`
	SpaceID   kernel.ID       `json:"space_id,omitempty"`
	ChannelID kernel.ID       `json:"channel_id,omitempty"`
	ThreadID  kernel.ID       `json:"thread_id,omitempty"`
}

// eventsJSON is evs as catch-up answers them.
func eventsJSON(evs []kernel.LoggedEvent) []eventJSON {
	out := make([]eventJSON, len(evs))
	for i, e := range evs {
		out[i] = eventJSON{Seq: e.Seq, Type: e.Type, Data: json.RawMessage(e.Payload), CreatedAt: e.CreatedAt,
			SpaceID: e.Scope.SpaceID, ChannelID: e.Scope.ChannelID, ThreadID: e.Scope.ThreadID}
	}
	return out
}

type eventPageJSON struct {
	Events    []eventJSON `json:"events"`
	HeadSeq   int64       `json:"head_seq"`
	NextAfter int64       `json:"next_after"`
}

// EventRoutes serves catch-up on the event log: GET /api/v1/events?after=SEQ&limit=N.
func EventRoutes(s CatchUpUseCase) []Route {
	rt := eventRoutes{s: s}
	return []Route{
		{Method: http.MethodGet, Pattern: "/api/v1/events", Action: catchup.ActEventsCatchUp, Handler: rt.catchUp},
	}
}

// eventRoutes holds the handler of EventRoutes.
type eventRoutes struct{ s CatchUpUseCase }

func (rt eventRoutes) catchUp(r *Request) (int, any, error) {
	q := r.URL.Query()
	after, _, err := seqParam("after", q.Get("after"))
	if err != nil {
		return 0, nil, err
	}
	limit, err := eventLimit(q.Get("limit"))
	if err != nil {
		return 0, nil, err
	}
	p, err := rt.s.CatchUp(r.Context(), r.Actor, after, limit)
	if err != nil {
		return 0, nil, resyncProblem(err, "after")
	}
	return http.StatusOK, eventPageJSON{Events: eventsJSON(p.Events), HeadSeq: p.HeadSeq, NextAfter: p.NextAfter}, nil
}

// resyncProblem gives a cursor that retention has passed (catchup.ResyncRequired) its 410
// with head_seq and oldest_seq, the cursor's parameter as its field; any other error is left
// as it is.
func resyncProblem(err error, field string) error {
	re := (*catchup.ResyncRequired)(nil)
	if !errors.As(err, &re) {
		return err
	}
	ke := *re.Unwrap().(*kernel.Error)
	ke.Field = field
	return &extendedProblem{error: &ke, members: map[string]any{"head_seq": re.HeadSeq, "oldest_seq": re.OldestSeq}}
}

// seqParam reads the query parameter name as a seq of the event log; set is false when it is
// absent.
func seqParam(name, v string) (seq int64, set bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, &kernel.Error{Code: kernel.CodeCursorInvalid, Field: name, Message: name + " must be a seq (an integer of 0 or more)"}
	}
	return n, true, nil
}

// eventLimit reads the ?limit= of an event page: absent is 0, the use case's default; the use
// case refuses one above its maximum.
func eventLimit(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, kernel.Invalid("limit", "limit must be an integer from 1 to %d", catchup.MaxLimit)
	}
	return n, nil
}
