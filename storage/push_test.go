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
		t.Run("the outbox hands out due sends once until their lease ends, and finishes them", func(t *testing.T) {
			s1 := sub(a.ID, "https://push.example.com/o1", t0)
			s2 := sub(a.ID, "https://push.example.com/o2", t0)
			for _, s := range []push.Subscription{s1, s2} {
				if err := st.InsertSubscription(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			pend := func(s push.Subscription, due time.Time) push.Pending {
				return push.Pending{ID: kernel.NewID(), SubscriptionID: s.ID, MessageID: kernel.NewID(), ChannelID: kernel.NewID(),
					ThreadID: kernel.NewID(), Reason: "mention", DueAt: due, CreatedAt: t0}
			}
			p1, p2, p3, later := pend(s1, t0), pend(s1, t0.Add(time.Second)), pend(s2, t0), pend(s2, t0.Add(time.Hour))
			if err := db.Do(ctx, func(ctx context.Context) error { return st.AddPending(ctx, []push.Pending{p1, p2, p3, later}) }); err != nil {
				t.Fatal(err)
			}
			now := t0.Add(2 * time.Second)
			got, err := st.ClaimPending(ctx, now, now.Add(time.Minute), 2)
			if err != nil || len(got) != 2 {
				t.Fatalf("%+v %v", got, err)
			}
			rest, err := st.ClaimPending(ctx, now, now.Add(time.Minute), 10)
			if err != nil || len(rest) != 1 || rest[0].ID == got[0].ID || rest[0].ID == got[1].ID || rest[0].ID == later.ID {
				t.Fatalf("second claim %+v %v", rest, err)
			}
			if again, _ := st.ClaimPending(ctx, now, now.Add(time.Minute), 10); len(again) != 0 {
				t.Fatalf("claimed twice: %+v", again)
			}
			if back, _ := st.ClaimPending(ctx, now.Add(time.Minute), now.Add(2*time.Minute), 10); len(back) != 3 {
				t.Fatalf("after the lease: %+v", back)
			}
			byID := map[kernel.ID]push.Pending{}
			for _, p := range append(got, rest...) {
				byID[p.ID] = p
			}
			if c := byID[p1.ID]; c.SubscriptionID != s1.ID || c.MessageID != p1.MessageID || c.Reason != "mention" || c.Attempts != 0 {
				t.Fatalf("%+v", c)
			}
			retry := p2
			retry.Attempts, retry.DueAt = 1, t0.Add(10*time.Minute)
			if err := db.Do(ctx, func(ctx context.Context) error {
				return st.FinishPending(ctx, []kernel.ID{p1.ID}, []push.Pending{retry}, []kernel.ID{s2.ID},
					[]push.Note{{SubscriptionID: s1.ID, Error: "the push service answered 500"}})
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Subscription(ctx, s2.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("the gone subscription: %v", err)
			}
			if got, _ := st.Subscription(ctx, s1.ID); got.LastError != "the push service answered 500" {
				t.Fatalf("%+v", got)
			}
			next, ok, err := st.NextPendingDue(ctx)
			if err != nil || !ok || !next.Equal(retry.DueAt) {
				t.Fatalf("next %v %v %v: the retry alone is left (the gone subscription's sends went with it)", next, ok, err)
			}
			left, _ := st.ClaimPending(ctx, retry.DueAt, retry.DueAt.Add(time.Minute), 10)
			if len(left) != 1 || left[0].ID != p2.ID || left[0].Attempts != 1 {
				t.Fatalf("%+v", left)
			}
			if err := db.Do(ctx, func(ctx context.Context) error { return st.FinishPending(ctx, []kernel.ID{p2.ID}, nil, nil, nil) }); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := st.NextPendingDue(ctx); ok {
				t.Fatal("the outbox is not empty")
			}
		})
		t.Run("a preview is the text of a message that is not deleted", func(t *testing.T) {
			if text, err := st.Preview(ctx, kernel.NewID()); err != nil || text != "" {
				t.Fatalf("%q, %v", text, err)
			}
		})
	})
}
