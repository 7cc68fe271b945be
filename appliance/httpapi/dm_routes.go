package httpapi

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/dms"
	"bothy.dev/bothy/app/kernel"
)

// DMUseCases is what the direct-message routes call; *dms.Service implements it.
type DMUseCases interface {
	Create(ctx context.Context, actor kernel.Actor, others []kernel.ID) (dms.DM, bool, error)
	List(ctx context.Context, actor kernel.Actor) ([]dms.DM, error)
	Leave(ctx context.Context, actor kernel.Actor, id kernel.ID) (dms.DM, error)
}

var _ DMUseCases = (*dms.Service)(nil)

// DMRoutes serves direct messages: start one (or find the one of the same participants), list
// the caller's, leave a group DM. A DM's messages go through the message routes of its main
// thread, like any channel's.
func DMRoutes(d DMUseCases) []Route {
	rt := dmRoutes{d: d}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/dms", Action: dms.ActDMCreate, Handler: withBody(rt.create)},
		{Method: http.MethodGet, Pattern: "/api/v1/dms", Action: dms.ActDMList, Handler: rt.list},
		{Method: http.MethodPost, Pattern: "/api/v1/dms/{id}/leave", Action: dms.ActDMLeave, Handler: withID(rt.leave)},
	}
}

type dmRoutes struct{ d DMUseCases }

type dmBody struct {
	ParticipantIDs []string `json:"participant_ids"`
}

func (rt dmRoutes) create(r *Request, in dmBody) (int, any, error) {
	ids := make([]kernel.ID, 0, len(in.ParticipantIDs))
	for _, s := range in.ParticipantIDs {
		id, err := kernel.ParseID(s)
		if err != nil {
			return 0, nil, kernel.Invalid("participant_ids", "participant_ids must be ids")
		}
		ids = append(ids, id)
	}
	dm, isNew, err := rt.d.Create(r.Context(), r.Actor, ids)
	if err != nil {
		return 0, nil, err
	}
	if isNew {
		return http.StatusCreated, dm, nil
	}
	return http.StatusOK, dm, nil
}

func (rt dmRoutes) list(r *Request) (int, any, error) {
	return list(rt.d.List(r.Context(), r.Actor))
}

func (rt dmRoutes) leave(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.d.Leave(r.Context(), r.Actor, id))
}
