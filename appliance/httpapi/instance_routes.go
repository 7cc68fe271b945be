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
	Rename(ctx context.Context, actor kernel.Actor, name string) (instance.Settings, error)
}

var _ InstanceUseCases = (*instance.Service)(nil)

// InstanceRoutes serves the instance's settings: any principal reads them, owners change them.
func InstanceRoutes(svc InstanceUseCases) []Route {
	return []Route{
		{Method: http.MethodGet, Pattern: "/api/v1/instance", Action: kernel.ActInstanceRead, Handler: func(r *Request) (int, any, error) {
			st, err := svc.Settings(r.Context(), r.Actor)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, st, nil
		}},

		{Method: http.MethodPut, Pattern: "/api/v1/instance", Action: kernel.ActInstanceUpdate, Handler: func(r *Request) (int, any, error) {
			var in struct {
				Name string `json:"name"`
			}
			if err := r.Decode(&in); err != nil {
				return 0, nil, err
			}
			st, err := svc.Rename(r.Context(), r.Actor, in.Name)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, st, nil
		}},
	}
}
