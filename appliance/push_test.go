package appliance

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/push"
	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/appliance/pushtest"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/storetest"
)

// TestPushJobs runs the send of Web Push notifications in a running appliance, on both engines:
// Enqueue in a Unit of Work, the job runner, the egress client and the fake push service, which
// decrypts each payload with its browser's keys and verifies the VAPID header.
func TestPushJobs(t *testing.T) {
	engines := map[string]func(t *testing.T) config.Config{
		"sqlite": func(t *testing.T) config.Config { return testConfig(t) },
		"postgres": func(t *testing.T) config.Config {
			ref := mustPostgresRef(t)
			if c, code := runCLI(t, "", append([]string{"migrate", "up"}, pgArgs(ref)...)...); code != 0 {
				t.Fatalf("migrate up = %d: %s", code, c.stderr)
			}
			c := testConfig(t)
			c.Database.Driver, c.Database.URLRef = string(engine.Postgres), ref
			return c
		},
	}
	for name, cfgOf := range engines {
		t.Run(name, func(t *testing.T) {
			cfg := cfgOf(t)
			cfg.Push.AllowPrivateEndpoints = true
			cfg.Push.Subject = "mailto:ops@example.com"
			a := mustNew(t, cfg)
			mustRun(t, a)
			fake := pushtest.New()
			t.Cleanup(fake.Close)
			ctx := context.Background()
			ada := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "ada"}
			storetest.Principal(t, a.DB, ada)
			key, err := a.Push.PublicKey(ctx, ada)
			if err != nil {
				t.Fatal(err)
			}
			fake.ExpectKey(key)
			subscribe := func(t *testing.T) (pushtest.Subscription, push.Subscription) {
				t.Helper()
				b := fake.Subscribe()
				s, isNew, err := a.Push.Subscribe(ctx, ada, push.SubscribeInput{Endpoint: b.Endpoint, P256DH: b.Keys.P256DH, Auth: b.Keys.Auth})
				if err != nil || !isNew {
					t.Fatalf("subscribe: %v %v", isNew, err)
				}
				return b, s
			}
			notify := func(t *testing.T, n push.Notification) {
				t.Helper()
				if err := a.DB.Do(ctx, func(ctx context.Context) error { return a.Push.Enqueue(ctx, ada.ID, n) }); err != nil {
					t.Fatal(err)
				}
			}
			received := func(endpoint string) []pushtest.Received {
				var out []pushtest.Received
				for _, r := range fake.Received() {
					if r.Endpoint == endpoint {
						out = append(out, r)
					}
				}
				return out
			}
			subscribed := func(id kernel.ID) bool {
				l, err := a.Push.List(ctx, ada)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range l {
					if s.ID == id {
						return true
					}
				}
				return false
			}

			t.Run("a notification reaches the browser encrypted for it and signed with the instance's VAPID key", func(t *testing.T) {
				b, _ := subscribe(t)
				n := push.Notification{MessageID: kernel.NewID(), ChannelID: kernel.NewID(), ThreadID: kernel.NewID(), Reason: "mention"}
				notify(t, n)
				if !fake.Wait(10*time.Second, func(*pushtest.Service) bool { return len(received(b.Endpoint)) == 1 }) {
					t.Fatalf("nothing arrived; refused: %v", fake.Refused())
				}
				r := received(b.Endpoint)[0]
				f := r.Fields()
				if f["message_id"] != string(n.MessageID) || f["channel_id"] != string(n.ChannelID) || f["thread_id"] != string(n.ThreadID) ||
					f["reason"] != "mention" || f["preview"] != nil {
					t.Fatalf("payload %s", r.Payload)
				}
				if r.VAPID.PublicKey != key || r.VAPID.Subject != "mailto:ops@example.com" || r.TTL != "86400" {
					t.Fatalf("request %+v", r)
				}
			})
			t.Run("410 from the push service deletes the subscription", func(t *testing.T) {
				b, s := subscribe(t)
				fake.Answer(b.Endpoint, 410)
				notify(t, push.Notification{MessageID: kernel.NewID(), Reason: "dm"})
				deadline := time.Now().Add(10 * time.Second)
				for subscribed(s.ID) {
					if time.Now().After(deadline) {
						t.Fatalf("still subscribed after 10 s; attempts %d", fake.Attempts(b.Endpoint))
					}
					time.Sleep(20 * time.Millisecond)
				}
				if got := fake.Attempts(b.Endpoint); got != 1 {
					t.Fatalf("%d attempts", got)
				}
			})
			t.Run("500 from the push service is tried again after the backoff and then delivered", func(t *testing.T) {
				b, s := subscribe(t)
				fake.Answer(b.Endpoint, 500, 201)
				n := push.Notification{MessageID: kernel.NewID(), Reason: "thread"}
				notify(t, n)
				// The first backoff is 1 s; the periodic sweep, every minute, must not be what sends it.
				if !fake.Wait(6*time.Second, func(*pushtest.Service) bool { return len(received(b.Endpoint)) == 2 }) {
					t.Fatalf("%d requests arrived, want the failed one and its retry", len(received(b.Endpoint)))
				}
				got := received(b.Endpoint)
				if got[0].Status != 500 || got[1].Status != 201 || got[1].Fields()["message_id"] != string(n.MessageID) {
					t.Fatalf("%+v", got)
				}
				if !subscribed(s.ID) {
					t.Fatal("a 500 removed the subscription")
				}
			})
		})
	}
}
