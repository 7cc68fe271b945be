package storage_test

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/push"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

func TestPushStore(t *testing.T) {
	ctx := context.Background()
	a := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
	b := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sub := func(owner kernel.ID, endpoint string, at time.Time) push.Subscription {
		return push.Subscription{ID: kernel.NewID(), PrincipalID: owner, Endpoint: endpoint, P256DH: "pub", Auth: "auth", CreatedAt: at}
	}

	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		storetest.Principal(t, db, a)
		storetest.Principal(t, db, b)
		st := storage.NewPushStore(db)

		first := sub(a.ID, "https://push.example.com/1", t0)
		first.Previews = true
		second := sub(a.ID, "https://push.example.com/2", t0.Add(time.Second))
		for _, s := range []push.Subscription{second, first, sub(b.ID, "https://push.example.com/3", t0)} {
			if err := st.InsertSubscription(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		t.Run("a person's subscriptions come oldest first with their fields", func(t *testing.T) {
			got, err := st.Subscriptions(ctx, a.ID)
			if err != nil || len(got) != 2 {
				t.Fatalf("%+v, %v", got, err)
			}
			if got[0].ID != first.ID || !got[0].Previews || got[0].Endpoint != first.Endpoint || got[0].P256DH != "pub" ||
				got[0].Auth != "auth" || !got[0].CreatedAt.Equal(t0) || got[0].PrincipalID != a.ID || got[1].ID != second.ID || got[1].Previews {
				t.Fatalf("%+v", got)
			}
		})
		t.Run("an endpoint is unique across people", func(t *testing.T) {
			err := st.InsertSubscription(ctx, sub(b.ID, first.Endpoint, t0))
			if !kernel.IsCode(err, kernel.CodeConflict) {
				t.Fatalf("err %v", err)
			}
		})
		t.Run("a subscription is found by endpoint and by id, and not_found when there is none", func(t *testing.T) {
			got, err := st.SubscriptionByEndpoint(ctx, second.Endpoint)
			if err != nil || got.ID != second.ID {
				t.Fatalf("%+v, %v", got, err)
			}
			if got, err = st.Subscription(ctx, first.ID); err != nil || got.Endpoint != first.Endpoint {
				t.Fatalf("%+v, %v", got, err)
			}
			if _, err := st.Subscription(ctx, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("err %v", err)
			}
		})
		t.Run("an update writes the keys and previews and the last error is set and cleared", func(t *testing.T) {
			if err := st.SetLastError(ctx, second.ID, "the push service answered 503"); err != nil {
				t.Fatal(err)
			}
			if got, _ := st.Subscription(ctx, second.ID); got.LastError != "the push service answered 503" {
				t.Fatalf("%+v", got)
			}
			u := second
			u.P256DH, u.Auth, u.Previews = "pub2", "auth2", true
			if err := st.UpdateSubscription(ctx, u); err != nil {
				t.Fatal(err)
			}
			got, _ := st.Subscription(ctx, second.ID)
			if got.P256DH != "pub2" || got.Auth != "auth2" || !got.Previews || got.LastError != "" {
				t.Fatalf("%+v", got)
			}
		})
		t.Run("a delete for another person deletes nothing; for the owner or anyone it deletes", func(t *testing.T) {
			if ok, err := st.DeleteSubscription(ctx, first.ID, b.ID); err != nil || ok {
				t.Fatalf("%v, %v", ok, err)
			}
			if ok, err := st.DeleteSubscription(ctx, first.ID, a.ID); err != nil || !ok {
				t.Fatalf("%v, %v", ok, err)
			}
			if ok, err := st.DeleteSubscription(ctx, second.ID, ""); err != nil || !ok {
				t.Fatalf("%v, %v", ok, err)
			}
			if got, _ := st.Subscriptions(ctx, a.ID); len(got) != 0 {
				t.Fatalf("left %+v", got)
			}
		})
		t.Run("the first VAPID key stays the instance's key", func(t *testing.T) {
			k1, _ := push.NewVAPIDKey(t0)
			k2, _ := push.NewVAPIDKey(t0.Add(time.Hour))
			got1, err := st.EnsureVAPIDKey(ctx, k1)
			if err != nil {
				t.Fatal(err)
			}
			got2, err := st.EnsureVAPIDKey(ctx, k2)
			if err != nil {
				t.Fatal(err)
			}
			if string(got1.Private) != string(k1.Private) || string(got2.Private) != string(k1.Private) || !got2.CreatedAt.Equal(t0) {
				t.Fatal("the second candidate replaced the first key")
			}
		})
		t.Run("a preview is the text of a message that is not deleted", func(t *testing.T) {
			if text, err := st.Preview(ctx, kernel.NewID()); err != nil || text != "" {
				t.Fatalf("%q, %v", text, err)
			}
		})
	})
}
