package httpapi

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/app/kernel"
)

// InstanceUseCases is what the instance routes call; *instance.Service implements it.
type InstanceUseCases interface {
	Settings(ctx context.Context, actor kernel.Actor) (instance.Settings, error)
	Update(ctx context.Context, actor kernel.Actor, c instance.Change) (instance.Settings, error)
}

var _ InstanceUseCases = (*instance.Service)(nil)

// InstanceRoutes serves the instance's settings: any principal reads them, owners change them.
func InstanceRoutes(svc InstanceUseCases) []Route {
	rt := instanceRoutes{svc: svc}
	return []Route{
		{Method: http.MethodGet, Pattern: "/api/v1/instance", Action: instance.ActInstanceRead, Handler: rt.settings},
		{Method: http.MethodPut, Pattern: "/api/v1/instance", Action: instance.ActInstanceUpdate, Handler: withBody(rt.rename)},
	}
}

// instanceRoutes holds the handlers of InstanceRoutes.
type instanceRoutes struct{ svc InstanceUseCases }

type instanceBody struct {
	Name string `json:"name"`
	// BroadcastMentions is left as it is when absent.
	BroadcastMentions *string `json:"broadcast_mentions"`
}

func (rt instanceRoutes) settings(r *Request) (int, any, error) {
	return ok(rt.svc.Settings(r.Context(), r.Actor))
}

func (rt instanceRoutes) rename(r *Request, in instanceBody) (int, any, error) {
	return ok(rt.svc.Update(r.Context(), r.Actor, instance.Change{Name: in.Name, BroadcastMentions: in.BroadcastMentions}))
}
