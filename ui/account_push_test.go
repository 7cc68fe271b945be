package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/push"
)

// fakePush is push's use cases with function fields; a nil field is not expected to be called.
type fakePush struct {
	subscribe   func(in push.SubscribeInput) (push.Subscription, bool, error)
	list        func() ([]push.Subscription, error)
	unsubscribe func(id kernel.ID) error
	publicKey   func() (string, error)
}

var _ PushUseCases = (*fakePush)(nil)

func (f *fakePush) Subscribe(_ context.Context, _ kernel.Actor, in push.SubscribeInput) (push.Subscription, bool, error) {
	return f.subscribe(in)
}
func (f *fakePush) List(context.Context, kernel.Actor) ([]push.Subscription, error) { return f.list() }
func (f *fakePush) Unsubscribe(_ context.Context, _ kernel.Actor, id kernel.ID) error {
	return f.unsubscribe(id)
}
func (f *fakePush) PublicKey(context.Context, kernel.Actor) (string, error) { return f.publicKey() }

func pushConsole(p *fakePush) *Console { return New(Deps{Identity: noIdentity{}, Push: p}) }

// script is the push script's request: body as JSON.
func script(t *testing.T, c *Console, h pageHandler, method, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, "/console/push/subscriptions", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if err := r.ParseForm(); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	rq := &request{w: w, r: r, actor: kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}, csrf: "tok"}
	if err := h(rq); err != nil {
		c.fail(rq, err)
	}
	return w
}

const browserSubscription = `{"endpoint":"https://push.example.com/abc","expirationTime":null,"keys":{"p256dh":"BKEY","auth":"AUTH"},"previews":true}`

func TestPushEndpoints(t *testing.T) {
	t.Run("the key endpoint answers the VAPID key as JSON", func(t *testing.T) {
		c := pushConsole(&fakePush{publicKey: func() (string, error) { return "BPUBLIC", nil }})
		w := script(t, c, c.pushKey, http.MethodGet, "")
		var got map[string]string
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK || got["public_key"] != "BPUBLIC" ||
			w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("answered %d %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
	})

	t.Run("a browser's subscription is registered with its keys and previews, 201 and a flash", func(t *testing.T) {
		var in push.SubscribeInput
		c := pushConsole(&fakePush{subscribe: func(i push.SubscribeInput) (push.Subscription, bool, error) {
			in = i
			return push.Subscription{ID: kernel.NewID(), Endpoint: i.Endpoint, Previews: true, CreatedAt: time.Now()}, true, nil
		}})
		w := script(t, c, c.pushSubscribe, http.MethodPost, browserSubscription)
		if w.Code != http.StatusCreated || !strings.Contains(w.Body.String(), `"endpoint":"https://push.example.com/abc"`) {
			t.Fatalf("answered %d: %s", w.Code, w.Body.String())
		}
		if in.Endpoint != "https://push.example.com/abc" || in.P256DH != "BKEY" || in.Auth != "AUTH" || in.Previews == nil || !*in.Previews {
			t.Fatalf("subscribed %+v", in)
		}
		if fl := flashOf(t, w); fl.Kind != "ok" || !strings.Contains(fl.Text, "on for this browser") {
			t.Fatalf("flash %+v", fl)
		}
	})

	t.Run("a renewed subscription answers 200", func(t *testing.T) {
		c := pushConsole(&fakePush{subscribe: func(i push.SubscribeInput) (push.Subscription, bool, error) {
			return push.Subscription{ID: kernel.NewID(), Endpoint: i.Endpoint}, false, nil
		}})
		if w := script(t, c, c.pushSubscribe, http.MethodPost, browserSubscription); w.Code != http.StatusOK {
			t.Fatalf("answered %d", w.Code)
		}
	})

	t.Run("a refused endpoint answers 422 with the reason as text", func(t *testing.T) {
		c := pushConsole(&fakePush{subscribe: func(push.SubscribeInput) (push.Subscription, bool, error) {
			return push.Subscription{}, false, kernel.Errorf(push.CodeEndpointRefused, "the endpoint must be https")
		}})
		w := script(t, c, c.pushSubscribe, http.MethodPost, browserSubscription)
		if w.Code != http.StatusUnprocessableEntity || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") ||
			!strings.Contains(w.Body.String(), "the endpoint must be https") {
			t.Fatalf("answered %d: %s", w.Code, w.Body.String())
		}
	})

	t.Run("another person's endpoint answers 409", func(t *testing.T) {
		c := pushConsole(&fakePush{subscribe: func(push.SubscribeInput) (push.Subscription, bool, error) {
			return push.Subscription{}, false, kernel.Errorf(push.CodeEndpointTaken, "taken")
		}})
		if w := script(t, c, c.pushSubscribe, http.MethodPost, browserSubscription); w.Code != http.StatusConflict {
			t.Fatalf("answered %d", w.Code)
		}
	})

	t.Run("a body that is not JSON answers 400 and subscribes nothing", func(t *testing.T) {
		c := pushConsole(&fakePush{subscribe: func(push.SubscribeInput) (push.Subscription, bool, error) {
			t.Fatal("subscribed from a body that is not JSON")
			return push.Subscription{}, false, nil
		}})
		if w := script(t, c, c.pushSubscribe, http.MethodPost, "endpoint=x"); w.Code != http.StatusBadRequest {
			t.Fatalf("answered %d", w.Code)
		}
	})

	t.Run("Remove of a device removed already says so rather than failing", func(t *testing.T) {
		id := kernel.NewID()
		c := pushConsole(&fakePush{unsubscribe: func(got kernel.ID) error {
			if got != id {
				t.Fatalf("removed %s", got)
			}
			return kernel.ErrNotFound
		}})
		r := httptest.NewRequest(http.MethodPost, "/console/push/subscriptions/"+string(id)+"/delete", nil)
		r.SetPathValue("id", string(id))
		w := httptest.NewRecorder()
		if err := c.pushRemove(&request{w: w, r: r, csrf: "tok"}); err != nil {
			t.Fatal(err)
		}
		if fl := flashOf(t, w); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/account#push" || !strings.Contains(fl.Text, "already") {
			t.Fatalf("answered %d to %q with %+v", w.Code, w.Header().Get("Location"), fl)
		}
	})
}

func TestCSRFOf(t *testing.T) {
	t.Run("a form's field is its token", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("csrf_token=field"))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set(csrfHeader, "header")
		if got := csrfOf(r); got != "field" {
			t.Fatalf("token %q", got)
		}
	})
	t.Run("a JSON post carries its token in the header", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"csrf_token":"body"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(csrfHeader, "header")
		if err := r.ParseForm(); err != nil {
			t.Fatal(err)
		}
		if got := csrfOf(r); got != "header" {
			t.Fatalf("token %q", got)
		}
	})
}

func TestEndpointHost(t *testing.T) {
	for in, want := range map[string]string{
		"https://fcm.googleapis.com/fcm/send/abc": "fcm.googleapis.com",
		"https://push.example.com:8443/x":         "push.example.com:8443",
		"not a url":                               "unknown push service",
	} {
		if got := endpointHost(in); got != want {
			t.Errorf("endpointHost(%q) = %q, want %q", in, got, want)
		}
	}
}
