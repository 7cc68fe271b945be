package ui

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/push"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// The account page's "Notifications on this device": the person's push subscriptions, one per
// browser, with a Remove form each (which works without the script), and the endpoints the
// page's script (static/push.js) subscribes a browser with: the instance's VAPID key and the
// registration of the browser's PushSubscription. They call push's use cases as
// /api/v1/me/push-subscriptions does.

// PushUseCases is what the account page calls on push subscriptions; *push.Service implements
// it.
type PushUseCases interface {
	Subscribe(ctx context.Context, actor kernel.Actor, in push.SubscribeInput) (push.Subscription, bool, error)
	List(ctx context.Context, actor kernel.Actor) ([]push.Subscription, error)
	Unsubscribe(ctx context.Context, actor kernel.Actor, id kernel.ID) error
	PublicKey(ctx context.Context, actor kernel.Actor) (string, error)
}

var _ PushUseCases = (*push.Service)(nil)

// pushRoutes registers the push endpoints of the account page.
func (c *Console) pushRoutes() {
	c.handle("GET /console/push/key", signedIn, c.pushKey)
	c.handle("POST /console/push/subscriptions", signedIn, c.pushSubscribe)
	c.handle("POST /console/push/subscriptions/{id}/delete", signedIn, c.pushRemove)
}

// csrfHeader carries the CSRF token of a post whose body is JSON, not a form (the script's
// registration of a subscription).
const csrfHeader = "Bothy-CSRF"

// csrfOf is the CSRF token a post carries: its form field, else its header.
func csrfOf(r *http.Request) string {
	if t := r.PostFormValue(csrfField); t != "" {
		return t
	}
	return r.Header.Get(csrfHeader)
}

var errNoPush = kernel.Errorf(kernel.CodeNotFound, "push is not wired")

// pushDevices are the person's subscriptions as the account page lists them.
func (c *Console) pushDevices(rq *request) (*pages.PushView, error) {
	if c.d.Push == nil {
		return nil, nil
	}
	subs, err := c.d.Push.List(rq.ctx(), rq.actor)
	if err != nil {
		return nil, err
	}
	v := &pages.PushView{Devices: make([]pages.PushDevice, 0, len(subs))}
	for _, s := range subs {
		at := s.CreatedAt.UTC()
		v.Devices = append(v.Devices, pages.PushDevice{ID: string(s.ID), Host: endpointHost(s.Endpoint), Endpoint: s.Endpoint,
			Created: at.Format(shortTimeLayout), Stamp: at.Format(time.RFC3339), Previews: s.Previews, LastError: s.LastError})
	}
	return v, nil
}

// endpointHost is the push service of an endpoint, which is what tells one browser's from
// another's (the rest of the address is a long secret of the browser's).
func endpointHost(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "unknown push service"
	}
	return u.Host
}

// pushKey answers the instance's VAPID public key, {"public_key": …}: the applicationServerKey
// the script subscribes the browser with.
func (c *Console) pushKey(rq *request) error {
	if c.d.Push == nil {
		return errNoPush
	}
	k, err := c.d.Push.PublicKey(rq.ctx(), rq.actor)
	if err != nil {
		return err
	}
	return writeJSON(rq, http.StatusOK, map[string]string{"public_key": k})
}

// pushSubscriptionBody is what the script posts: the browser's PushSubscription.toJSON() and
// the person's choice of previews.
type pushSubscriptionBody struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256DH string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
	Previews *bool `json:"previews"`
}

// pushSubscribe registers the browser's subscription (push.Subscribe), posted by the script as
// JSON with the CSRF token in its header. It answers the subscription as JSON, 201 when new,
// 200 when the browser renewed one it had, and leaves a flash for the page the script reloads;
// a refusal answers its reason as text, as the console's other script posts do.
func (c *Console) pushSubscribe(rq *request) error {
	if c.d.Push == nil {
		return errNoPush
	}
	var in pushSubscriptionBody
	if err := json.NewDecoder(rq.r.Body).Decode(&in); err != nil {
		refuseFragment(rq, http.StatusBadRequest, "The browser's subscription could not be read.")
		return nil
	}
	s, isNew, err := c.d.Push.Subscribe(rq.ctx(), rq.actor, push.SubscribeInput{Endpoint: in.Endpoint, P256DH: in.Keys.P256DH,
		Auth: in.Keys.Auth, Previews: in.Previews})
	switch {
	case err == nil:
	case refusal(err, push.CodeEndpointRefused, push.CodeKeysInvalid, kernel.CodeValidation):
		refuseFragment(rq, http.StatusUnprocessableEntity, "The server refused this browser's subscription: "+refusalText(err))
		return nil
	case refusal(err, push.CodeEndpointTaken):
		refuseFragment(rq, http.StatusConflict, "Another account has turned on notifications in this browser: it must remove them first.")
		return nil
	case refusal(err, push.CodeSubscriptionLimit):
		refuseFragment(rq, http.StatusConflict, "You have turned on notifications on too many devices: remove one first.")
		return nil
	default:
		return err
	}
	status, text := http.StatusOK, "Notifications were already on for this browser."
	if isNew {
		status, text = http.StatusCreated, "Notifications are on for this browser."
	}
	c.setFlash(rq.w, layouts.Flash{Kind: "ok", Text: text})
	return writeJSON(rq, status, s)
}

// pushRemove deletes one of the person's subscriptions (push.Unsubscribe) and goes back to the
// account page.
func (c *Console) pushRemove(rq *request) error {
	if c.d.Push == nil {
		return errNoPush
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	flash := layouts.Flash{Kind: "ok", Text: "That device gets no more notifications."}
	switch err := c.d.Push.Unsubscribe(rq.ctx(), rq.actor, id); {
	case err == nil:
	case refusal(err, kernel.CodeNotFound):
		flash.Text = "That device was removed already."
	default:
		return err
	}
	c.redirect(rq, "/console/account#push", flash)
	return nil
}

// refusalText is the use case's own words for a refusal.
func refusalText(err error) string {
	var ke *kernel.Error
	if errors.As(err, &ke) && ke.Message != "" {
		return ke.Message
	}
	return err.Error()
}

// writeJSON answers v as JSON with status.
func writeJSON(rq *request, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	rq.w.Header().Set("Content-Type", "application/json")
	rq.w.WriteHeader(status)
	_, _ = rq.w.Write(b)
	return nil
}
