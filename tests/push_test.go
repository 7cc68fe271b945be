package tests

import (
	"net/http"
	"strings"
	"testing"

	"bothy.dev/bothy/appliance/pushtest"
)

// pushSub is a push subscription as the API answers it.
type pushSub struct {
	ID        string `json:"id"`
	Endpoint  string `json:"endpoint"`
	Previews  bool   `json:"previews"`
	CreatedAt string `json:"created_at"`
	LastError string `json:"last_error"`
}

// subscriptionBody is what a browser's PushSubscription.toJSON() gives, as the console's
// script would post it.
func subscriptionBody(s pushtest.Subscription, previews *bool) map[string]any {
	b := map[string]any{"endpoint": s.Endpoint, "expirationTime": nil,
		"keys": map[string]any{"p256dh": s.Keys.P256DH, "auth": s.Keys.Auth}}
	if previews != nil {
		b["previews"] = *previews
	}
	return b
}

// TestPushSubscriptions registers, lists and removes push subscriptions through the REST API of
// the real binary with private endpoints allowed (the fake push service listens on loopback),
// and refuses bad ones; a server with the default configuration refuses the fake's endpoint.
func TestPushSubscriptions(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng, "--set", "push.allow_private_endpoints=true")
		fake := pushtest.New()
		t.Cleanup(fake.Close)
		_, bobc := in.mustCreateUser(t, "bob")
		yes := true

		t.Run("the VAPID public key is one uncompressed P-256 point, the same on every read", func(t *testing.T) {
			k1 := in.owner.do(t, http.MethodGet, api("push", "vapid-public-key"), nil).want(t, http.StatusOK).obj()["public_key"]
			k2 := bobc.do(t, http.MethodGet, api("push", "vapid-public-key"), nil).want(t, http.StatusOK).obj()["public_key"]
			if s, _ := k1.(string); len(s) != 87 || !strings.HasPrefix(s, "B") || k1 != k2 {
				t.Fatalf("keys %v and %v", k1, k2)
			}
		})
		b1 := fake.Subscribe()
		var first pushSub
		t.Run("a new endpoint answers 201 and the same again 200 with its new keys", func(t *testing.T) {
			bobc.do(t, http.MethodPost, api("me", "push-subscriptions"), subscriptionBody(b1, &yes)).want(t, http.StatusCreated).decode(t, &first)
			if first.ID == "" || first.Endpoint != b1.Endpoint || !first.Previews {
				t.Fatalf("%+v", first)
			}
			renewed := fake.Subscribe()
			renewed.Endpoint = b1.Endpoint
			var again pushSub
			bobc.do(t, http.MethodPost, api("me", "push-subscriptions"), subscriptionBody(renewed, nil)).want(t, http.StatusOK).decode(t, &again)
			if again.ID != first.ID || !again.Previews {
				t.Fatalf("renewed %+v, first %+v", again, first)
			}
		})
		t.Run("a person lists only their own subscriptions", func(t *testing.T) {
			in.owner.do(t, http.MethodPost, api("me", "push-subscriptions"), subscriptionBody(fake.Subscribe(), nil)).want(t, http.StatusCreated)
			var l page[pushSub]
			bobc.do(t, http.MethodGet, api("me", "push-subscriptions"), nil).want(t, http.StatusOK).decode(t, &l)
			if len(l.Items) != 1 || l.Items[0].ID != first.ID || l.Items[0].Endpoint != b1.Endpoint {
				t.Fatalf("bob's %+v", l.Items)
			}
		})
		t.Run("another person's endpoint, another person's delete and bad keys are refused and change nothing", func(t *testing.T) {
			in.owner.do(t, http.MethodPost, api("me", "push-subscriptions"), subscriptionBody(b1, nil)).
				want(t, http.StatusConflict).wantProblem(t, "push_endpoint_taken")
			in.owner.do(t, http.MethodDelete, api("me", "push-subscriptions", first.ID), nil).
				want(t, http.StatusNotFound).wantProblem(t, "not_found")
			good := fake.Subscribe()
			for _, c := range []struct {
				name string
				body map[string]any
				code string
			}{
				{"a p256dh that is no point", map[string]any{"endpoint": good.Endpoint, "keys": map[string]any{"p256dh": "BAAA", "auth": good.Keys.Auth}}, "push_keys_invalid"},
				{"an auth secret of 3 bytes", map[string]any{"endpoint": good.Endpoint, "keys": map[string]any{"p256dh": good.Keys.P256DH, "auth": "AAAA"}}, "push_keys_invalid"},
				{"an endpoint that is not a URL", map[string]any{"endpoint": "not a url", "keys": map[string]any{"p256dh": good.Keys.P256DH, "auth": good.Keys.Auth}}, "push_endpoint_refused"},
				{"an ftp endpoint", map[string]any{"endpoint": "ftp://push.example.com/x", "keys": map[string]any{"p256dh": good.Keys.P256DH, "auth": good.Keys.Auth}}, "push_endpoint_refused"},
			} {
				bobc.do(t, http.MethodPost, api("me", "push-subscriptions"), c.body).want(t, http.StatusBadRequest).wantProblem(t, c.code)
			}
			bobc.do(t, http.MethodPost, api("me", "push-subscriptions"), map[string]any{"endpoint": good.Endpoint}, breaksDocument()).
				want(t, http.StatusBadRequest)
			bobc.do(t, http.MethodPost, api("me", "push-subscriptions"), map[string]any{"endpoint": good.Endpoint, "keys": map[string]any{}, "extra": 1}, breaksDocument()).
				want(t, http.StatusBadRequest)
			var l page[pushSub]
			bobc.do(t, http.MethodGet, api("me", "push-subscriptions"), nil).want(t, http.StatusOK).decode(t, &l)
			if len(l.Items) != 1 {
				t.Fatalf("bob holds %+v", l.Items)
			}
		})
		t.Run("a person holds at most 20 subscriptions", func(t *testing.T) {
			_, carolc := in.mustCreateUser(t, "carol")
			for range 20 {
				carolc.do(t, http.MethodPost, api("me", "push-subscriptions"), subscriptionBody(fake.Subscribe(), nil)).want(t, http.StatusCreated)
			}
			carolc.do(t, http.MethodPost, api("me", "push-subscriptions"), subscriptionBody(fake.Subscribe(), nil)).
				want(t, http.StatusConflict).wantProblem(t, "push_subscription_limit")
		})
		t.Run("the owner of a subscription deletes it", func(t *testing.T) {
			bobc.do(t, http.MethodDelete, api("me", "push-subscriptions", first.ID), nil).want(t, http.StatusNoContent)
			bobc.do(t, http.MethodDelete, api("me", "push-subscriptions", first.ID), nil).want(t, http.StatusNotFound)
			var l page[pushSub]
			bobc.do(t, http.MethodGet, api("me", "push-subscriptions"), nil).want(t, http.StatusOK).decode(t, &l)
			if len(l.Items) != 0 {
				t.Fatalf("left %+v", l.Items)
			}
		})
		t.Run("an agent has no push subscriptions", func(t *testing.T) {
			_, agentc := in.mustCreateAgent(t, "pushbot")
			agentc.do(t, http.MethodGet, api("me", "push-subscriptions"), nil).want(t, http.StatusForbidden)
		})
	})
}

// TestPushEndpointsMustBePublic: with the default configuration an endpoint must be https on a
// public host; the fake push service's loopback endpoint and every private form are refused.
func TestPushEndpointsMustBePublic(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		fake := pushtest.New()
		t.Cleanup(fake.Close)
		s := fake.Subscribe()
		for _, endpoint := range []string{s.Endpoint, "https://127.0.0.1/push", "https://10.0.0.1/", "https://[::1]/", "https://localhost/",
			"https://169.254.1.1/", "https://100.64.0.1/", "https://[fd12::1]/", "https://pushbox/", "http://push.example.com/"} {
			s.Endpoint = endpoint
			in.owner.do(t, http.MethodPost, api("me", "push-subscriptions"), subscriptionBody(s, nil)).
				want(t, http.StatusBadRequest).wantProblem(t, "push_endpoint_refused")
		}
		s.Endpoint = "https://push.example.com/send/1"
		in.owner.do(t, http.MethodPost, api("me", "push-subscriptions"), subscriptionBody(s, nil)).want(t, http.StatusCreated)
	})
}
