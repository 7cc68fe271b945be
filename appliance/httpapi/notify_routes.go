package httpapi

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/notify"
)

// NotifyUseCases is what the notification routes call; *notify.Service implements it.
type NotifyUseCases interface {
	Level(ctx context.Context, actor kernel.Actor, channelID kernel.ID) (notify.ChannelLevel, error)
	SetLevel(ctx context.Context, actor kernel.Actor, channelID kernel.ID, level string) (notify.ChannelLevel, error)
	Subscription(ctx context.Context, actor kernel.Actor, threadID kernel.ID) (notify.Subscription, error)
	SetSubscription(ctx context.Context, actor kernel.Actor, threadID kernel.ID, level string) (notify.Subscription, error)
}

var _ NotifyUseCases = (*notify.Service)(nil)

// NotifyRoutes serves a person's notification level of a channel or DM and subscription of a
// thread.
func NotifyRoutes(n NotifyUseCases) []Route {
	rt := notifyRoutes{n: n}
	return []Route{
		{Method: http.MethodGet, Pattern: "/api/v1/channels/{id}/notifications", Action: notify.ActLevelRead, Handler: withID(rt.level)},
		{Method: http.MethodPut, Pattern: "/api/v1/channels/{id}/notifications", Action: notify.ActLevelSet, Handler: withIDBody(rt.setLevel)},
		{Method: http.MethodGet, Pattern: "/api/v1/threads/{id}/subscription", Action: notify.ActSubscriptionRead, Handler: withID(rt.subscription)},
		{Method: http.MethodPut, Pattern: "/api/v1/threads/{id}/subscription", Action: notify.ActSubscriptionSet, Handler: withIDBody(rt.setSubscription)},
	}
}

type notifyRoutes struct{ n NotifyUseCases }

// levelBody is a level to set; a missing level is refused as an unknown one.
type levelBody struct {
	Level string `json:"level"`
}

func (rt notifyRoutes) level(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.n.Level(r.Context(), r.Actor, id))
}

func (rt notifyRoutes) setLevel(r *Request, id kernel.ID, in levelBody) (int, any, error) {
	return ok(rt.n.SetLevel(r.Context(), r.Actor, id, in.Level))
}

func (rt notifyRoutes) subscription(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.n.Subscription(r.Context(), r.Actor, id))
}

func (rt notifyRoutes) setSubscription(r *Request, id kernel.ID, in levelBody) (int, any, error) {
	return ok(rt.n.SetSubscription(r.Context(), r.Actor, id, in.Level))
}
