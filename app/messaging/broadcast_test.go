package messaging_test

import (
	"context"
	"slices"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// members is a messaging.Audience that answers the same members for every channel.
type members []kernel.ID

func (m members) ChannelMembers(context.Context, kernel.ID) ([]kernel.ID, error) { return m, nil }

// policy is a messaging.BroadcastPolicy with a fixed setting.
type policy string

func (p policy) BroadcastMentions(context.Context) (string, error) { return string(p), nil }

var (
	_ messaging.Audience        = members(nil)
	_ messaging.BroadcastPolicy = policy("")
)

// withBroadcast gives f's service an audience and a setting for @here and @channel.
func withBroadcast(f *msgFixture, aud members, p policy) {
	f.svc = messaging.New(messaging.Deps{Store: f.store, Threads: f.threads, Directory: f.store, Redactor: f.redactor,
		UoW: f.db, Events: f.db, Authz: f.authz, Clock: f.clock, Audience: aud, Policy: p})
}

// mentionRows counts the people of the fixture whose mentions inbox (the store's mention rows)
// holds message id.
func mentionRows(t *testing.T, f *msgFixture, id kernel.ID) int {
	t.Helper()
	n := 0
	for _, who := range []kernel.ID{alice.ID, bob.ID, carol.ID} {
		items, _, err := storage.NewInboxStore(f.db).Mentions(context.Background(), who, kernel.NilID, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if it.Message.ID == id {
				n++
			}
		}
	}
	return n
}

func TestBroadcastMentions(t *testing.T) {
	ctx := context.Background()
	t.Run("@here mentions every member but the author; the message shows its explicit mentions and the broadcast", func(t *testing.T) {
		f := mustMessaging(t)
		withBroadcast(f, members{alice.ID, bob.ID, carol.ID}, "post")
		m := mustPost(t, f, alice, "@here look, @Bob")
		if !slices.Equal(m.Mentions, []kernel.ID{bob.ID}) || m.Broadcast != "here" {
			t.Fatalf("mentions %v broadcast %q", m.Mentions, m.Broadcast)
		}
		if n := mentionRows(t, f, m.ID); n != 2 {
			t.Fatalf("%d mention rows, want bob and carol", n)
		}
		if c := f.authz.Last(); c.Action != messaging.ActMentionBroadcast || c.Resource.ChannelID != f.channel.ID {
			t.Fatalf("authorized %+v", c)
		}
		got, err := f.svc.GetMessage(ctx, bob, m.ID)
		if err != nil || !slices.Equal(got.Mentions, []kernel.ID{bob.ID}) || got.Broadcast != "here" {
			t.Fatalf("read back: %v %q %v", got.Mentions, got.Broadcast, err)
		}
		evs := f.events(t)
		if p := storetest.Payload[messaging.Message](t, evs[len(evs)-1]); p.Broadcast != "here" || !slices.Equal(p.Mentions, []kernel.ID{bob.ID}) {
			t.Fatalf("message.created carries %v %q", p.Mentions, p.Broadcast)
		}
	})
	t.Run("@channel of a poster without the right is plain text", func(t *testing.T) {
		f := mustMessaging(t)
		withBroadcast(f, members{alice.ID, bob.ID}, "post")
		f.authz.Fn = func(_ kernel.Actor, a kernel.Action, _ kernel.Resource) error {
			if a == messaging.ActMentionBroadcast {
				return kernel.Errorf(kernel.CodeForbidden, "no")
			}
			return nil
		}
		m := mustPost(t, f, alice, "@channel hello")
		if len(m.Mentions) != 0 || m.Broadcast != "" || mentionRows(t, f, m.ID) != 0 {
			t.Fatalf("mentions %v broadcast %q rows %d", m.Mentions, m.Broadcast, mentionRows(t, f, m.ID))
		}
	})
	t.Run("the setting manage asks for the managers' right", func(t *testing.T) {
		f := mustMessaging(t)
		withBroadcast(f, members{alice.ID, bob.ID}, "manage")
		m := mustPost(t, f, alice, "@channel hello")
		if m.Broadcast != "channel" || f.authz.Last().Action != messaging.ActMentionBroadcastManaged {
			t.Fatalf("broadcast %q, authorized %+v", m.Broadcast, f.authz.Last())
		}
	})
	t.Run("without an audience @here is plain text, and a person called here is no mention of it", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "@here")
		if len(m.Mentions) != 0 || m.Broadcast != "" {
			t.Fatalf("mentions %v broadcast %q", m.Mentions, m.Broadcast)
		}
	})
	t.Run("an edit that adds @here mentions the members, one that drops it forgets them", func(t *testing.T) {
		f := mustMessaging(t)
		withBroadcast(f, members{alice.ID, bob.ID, carol.ID}, "post")
		m := mustPost(t, f, alice, "hello")
		m, err := f.svc.EditMessage(ctx, alice, m.ID, "hello @here")
		if err != nil || m.Broadcast != "here" || mentionRows(t, f, m.ID) != 2 {
			t.Fatalf("edit: %q %v", m.Broadcast, err)
		}
		m, err = f.svc.EditMessage(ctx, alice, m.ID, "hello")
		if err != nil || m.Broadcast != "" || mentionRows(t, f, m.ID) != 0 {
			t.Fatalf("edit back: %q %v", m.Broadcast, err)
		}
	})
}
