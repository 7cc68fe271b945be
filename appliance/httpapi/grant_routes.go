package httpapi

import (
	"context"
	"net/http"
	"time"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/kernel"
)

// GrantUseCases is what the grant routes call; *authz.Service implements it.
type GrantUseCases interface {
	CreateGrant(ctx context.Context, actor kernel.Actor, channelID, principalID kernel.ID, level authz.Level) (authz.Grant, bool, error)
	ListGrants(ctx context.Context, actor kernel.Actor, channelID kernel.ID) ([]authz.Grant, error)
	RevokeGrant(ctx context.Context, actor kernel.Actor, channelID, principalID kernel.ID) error
}

var _ GrantUseCases = (*authz.Service)(nil)

type grantView struct {
	ChannelID   kernel.ID `json:"channel_id"`
	PrincipalID kernel.ID `json:"principal_id"`
	Level       string    `json:"level"`
	CreatedAt   time.Time `json:"created_at"`
}

func viewGrant(g authz.Grant) grantView {
	return grantView{ChannelID: g.ResourceID, PrincipalID: g.PrincipalID, Level: g.Level.String(), CreatedAt: g.CreatedAt.UTC()}
}

// GrantRoutes serves the grants of a channel: 201 for a new grant, 200 when an existing grant
// changed (or kept) its level.
func GrantRoutes(az GrantUseCases) []Route {
	rt := grantRoutes{az: az}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/channels/{id}/grants", Action: authz.ActGrantCreate, Handler: withIDBody(rt.createGrant)},
		{Method: http.MethodGet, Pattern: "/api/v1/channels/{id}/grants", Action: authz.ActGrantRead, Handler: withID(rt.listGrants)},
		{Method: http.MethodDelete, Pattern: "/api/v1/channels/{id}/grants/{principal_id}", Action: authz.ActGrantRevoke, Handler: withID(rt.revokeGrant)},
	}
}

// grantRoutes holds the handlers of GrantRoutes.
type grantRoutes struct{ az GrantUseCases }

type grantBody struct {
	PrincipalID string `json:"principal_id"`
	Level       string `json:"level"`
}

func (rt grantRoutes) createGrant(r *Request, channelID kernel.ID, in grantBody) (int, any, error) {
	level, err := authz.ParseLevel(in.Level)
	if err != nil {
		return 0, nil, err
	}
	principalID, err := kernel.ParseID(in.PrincipalID)
	if err != nil {
		return 0, nil, kernel.Invalid("principal_id", "principal_id must be an id")
	}
	g, isNew, err := rt.az.CreateGrant(r.Context(), r.Actor, channelID, principalID, level)
	if err != nil {
		return 0, nil, err
	}
	return createdStatus(isNew), viewGrant(g), nil
}

func (rt grantRoutes) listGrants(r *Request, channelID kernel.ID) (int, any, error) {
	return listViews(viewGrant)(rt.az.ListGrants(r.Context(), r.Actor, channelID))
}

func (rt grantRoutes) revokeGrant(r *Request, channelID kernel.ID) (int, any, error) {
	principalID, err := r.PathID("principal_id")
	if err != nil {
		return 0, nil, err
	}
	return noContent(rt.az.RevokeGrant(r.Context(), r.Actor, channelID, principalID))
}
