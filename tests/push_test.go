package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"

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

// TestPushNotifications sends Web Push through the real binary: a mention of a person who
// registered two browsers reaches both at the fake push service, which decrypts the payload with
// the browser's keys and verifies the VAPID header against the instance's public key; the
// browser that allowed previews gets the start of the text. A browser whose push service
// answers 410 is unsubscribed; one that answers 500 gets the notification on a later attempt.
func TestPushNotifications(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng, "--set", "push.allow_private_endpoints=true", "--set", "push.subject=mailto:ops@example.com")
		fake := pushtest.New()
		t.Cleanup(fake.Close)
		sp := in.owner.mustCreateSpace(t, "Talk")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		bob, bobc := in.mustCreateUser(t, "bob")
		in.owner.mustGrant(t, ch.ID, bob.ID, "post")
		key, _ := bobc.do(t, http.MethodGet, api("push", "vapid-public-key"), nil).want(t, http.StatusOK).obj()["public_key"].(string)
		fake.ExpectKey(key)
		yes := true
		phone, laptop := fake.Subscribe(), fake.Subscribe()
		bobc.do(t, http.MethodPost, api("me", "push-subscriptions"), subscriptionBody(phone, &yes)).want(t, http.StatusCreated)
		var lap pushSub
		bobc.do(t, http.MethodPost, api("me", "push-subscriptions"), subscriptionBody(laptop, nil)).want(t, http.StatusCreated).decode(t, &lap)
		arrived := func(endpoint string, status int) []pushtest.Received {
			var out []pushtest.Received
			for _, r := range fake.Received() {
				if r.Endpoint == endpoint && (status == 0 || r.Status == status) {
					out = append(out, r)
				}
			}
			return out
		}
		waitFor := func(t *testing.T, what string, within time.Duration, cond func() bool) {
			t.Helper()
			if !fake.Wait(within, func(*pushtest.Service) bool { return cond() }) {
				t.Fatalf("%s: not within %s; refused: %v", what, within, fake.Refused())
			}
		}

		t.Run("a mention reaches every browser of the person, encrypted for it and signed with the instance's key", func(t *testing.T) {
			text := "@bob " + strings.Repeat("the quarterly numbers are in ", 10)
			m := in.owner.mustPost(t, ch.MainThreadID, text)
			waitFor(t, "both browsers", 20*time.Second, func() bool { return len(arrived(phone.Endpoint, 0)) == 1 && len(arrived(laptop.Endpoint, 0)) == 1 })
			p, l := arrived(phone.Endpoint, 0)[0], arrived(laptop.Endpoint, 0)[0]
			for _, r := range []pushtest.Received{p, l} {
				f := r.Fields()
				if f["message_id"] != m.ID || f["channel_id"] != ch.ID || f["thread_id"] != ch.MainThreadID || f["reason"] != "mention" {
					t.Fatalf("payload %s", r.Payload)
				}
				if r.VAPID.PublicKey != key || r.VAPID.Subject != "mailto:ops@example.com" || r.TTL == "" {
					t.Fatalf("request %+v", r)
				}
			}
			if prev, _ := p.Fields()["preview"].(string); !strings.HasPrefix(text, strings.TrimSuffix(prev, "…")) || len([]rune(prev)) != 101 {
				t.Fatalf("the phone's preview %q", prev)
			}
			if _, ok := l.Fields()["preview"]; ok {
				t.Fatalf("the laptop allowed no preview and got %s", l.Payload)
			}
		})
		t.Run("a push service's 500 is tried again after the first backoff and delivered", func(t *testing.T) {
			fake.Answer(phone.Endpoint, 500, 201)
			m := in.owner.mustPost(t, ch.MainThreadID, "@bob once more")
			// The first backoff is 1 s; the periodic sweep, every minute, must not be what sends it.
			waitFor(t, "the retry", 6*time.Second, func() bool { return len(arrived(phone.Endpoint, 201)) == 2 })
			got := arrived(phone.Endpoint, 0)
			if got[len(got)-2].Status != 500 || got[len(got)-1].Fields()["message_id"] != m.ID {
				t.Fatalf("%+v", got)
			}
		})
		t.Run("a push service's 410 unsubscribes the browser", func(t *testing.T) {
			fake.Answer(laptop.Endpoint, 410)
			in.owner.mustPost(t, ch.MainThreadID, "@bob are you there")
			deadline := time.Now().Add(20 * time.Second)
			for {
				var l page[pushSub]
				bobc.do(t, http.MethodGet, api("me", "push-subscriptions"), nil).want(t, http.StatusOK).decode(t, &l)
				if len(l.Items) == 1 && l.Items[0].Endpoint == phone.Endpoint {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("still subscribed: %+v", l.Items)
				}
				time.Sleep(50 * time.Millisecond)
			}
			bobc.do(t, http.MethodDelete, api("me", "push-subscriptions", lap.ID), nil).want(t, http.StatusNotFound)
		})
	})
}
