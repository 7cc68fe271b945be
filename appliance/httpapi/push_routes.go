package httpapi

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/push"
)

// PushUseCases is what the Web Push routes call; *push.Service implements it.
type PushUseCases interface {
	Subscribe(ctx context.Context, actor kernel.Actor, in push.SubscribeInput) (push.Subscription, bool, error)
	List(ctx context.Context, actor kernel.Actor) ([]push.Subscription, error)
	Unsubscribe(ctx context.Context, actor kernel.Actor, id kernel.ID) error
	PublicKey(ctx context.Context, actor kernel.Actor) (string, error)
}

var _ PushUseCases = (*push.Service)(nil)

// PushRoutes serve a person's push subscriptions (one per browser) and the instance's VAPID
// public key, which a browser subscribes with.
func PushRoutes(p PushUseCases) []Route {
	rt := pushRoutes{p: p}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/me/push-subscriptions", Action: push.ActSubscriptionCreate, Handler: withBody(rt.create)},
		{Method: http.MethodGet, Pattern: "/api/v1/me/push-subscriptions", Action: push.ActSubscriptionList, Handler: rt.list},
		{Method: http.MethodDelete, Pattern: "/api/v1/me/push-subscriptions/{id}", Action: push.ActSubscriptionDelete, Handler: withID(rt.delete)},
		{Method: http.MethodGet, Pattern: "/api/v1/push/vapid-public-key", Action: push.ActVAPIDKeyRead, Handler: rt.publicKey},
	}
}

type pushRoutes struct{ p PushUseCases }

// pushSubscriptionBody is a browser's PushSubscription.toJSON() (whose expirationTime is taken
// and ignored: the push service says when a subscription is gone) and the person's choice of
// previews.
type pushSubscriptionBody struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256DH string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
	ExpirationTime *float64 `json:"expirationTime"`
	Previews       *bool    `json:"previews"`
}

func (rt pushRoutes) create(r *Request, in pushSubscriptionBody) (int, any, error) {
	s, isNew, err := rt.p.Subscribe(r.Context(), r.Actor, push.SubscribeInput{
		Endpoint: in.Endpoint, P256DH: in.Keys.P256DH, Auth: in.Keys.Auth, Previews: in.Previews})
	if err != nil {
		return 0, nil, err
	}
	if isNew {
		return http.StatusCreated, s, nil
	}
	return http.StatusOK, s, nil
}

func (rt pushRoutes) list(r *Request) (int, any, error) {
	return list(rt.p.List(r.Context(), r.Actor))
}

func (rt pushRoutes) delete(r *Request, id kernel.ID) (int, any, error) {
	return noContent(rt.p.Unsubscribe(r.Context(), r.Actor, id))
}

func (rt pushRoutes) publicKey(r *Request) (int, any, error) {
	k, err := rt.p.PublicKey(r.Context(), r.Actor)
	return ok(struct {
		PublicKey string `json:"public_key"`
	}{k}, err)
}
