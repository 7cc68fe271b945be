package storage_test

import (
	"slices"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage/storetest"
)

// TestReactionsOf reads what the chat view shows under a page of messages: every reaction on
// the messages asked about, none of another message's.
func TestReactionsOf(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newRunEnv(t, eng)
		a, b, c := e.post(t, e.pia, "a"), e.post(t, e.pia, "b"), e.post(t, e.pia, "c")
		for _, r := range []struct {
			who   kernel.Actor
			m     messaging.Message
			emoji string
		}{{e.pia, a, "👍"}, {e.paul, a, "👍"}, {e.paul, a, "🎉"}, {e.pia, b, "👀"}, {e.pia, c, "❤️"}} {
			if err := e.msgs.AddReaction(bg, r.who, r.m.ID, r.emoji); err != nil {
				t.Fatal(err)
			}
		}
		got, err := e.msgRepo.ReactionsOf(bg, []kernel.ID{a.ID, b.ID})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range got {
			keys = append(keys, string(r.MessageID)+" "+string(r.PrincipalID)+" "+r.Emoji)
			if r.CreatedAt.IsZero() {
				t.Errorf("reaction without its time: %+v", r)
			}
		}
		slices.Sort(keys)
		want := []string{string(a.ID) + " " + string(e.pia.ID) + " 👍", string(a.ID) + " " + string(e.paul.ID) + " 👍",
			string(a.ID) + " " + string(e.paul.ID) + " 🎉", string(b.ID) + " " + string(e.pia.ID) + " 👀"}
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Fatalf("got  %v\nwant %v", keys, want)
		}
		if got, err := e.msgRepo.ReactionsOf(bg, nil); err != nil || len(got) != 0 {
			t.Fatalf("no ids: %v %v", got, err)
		}
	})
}
