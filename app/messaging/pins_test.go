package messaging_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage/storetest"
)

func TestPins(t *testing.T) {
	ctx := context.Background()
	t.Run("pins once, answers the same pin again and appends message.pinned once", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "a")
		p, created, err := f.svc.PinMessage(ctx, bob, m.ID)
		if err != nil || !created {
			t.Fatalf("pin: %v (created %v)", err, created)
		}
		if p.MessageID != m.ID || p.ChannelID != m.ChannelID || p.ThreadID != m.ThreadID || p.PinnedBy != bob.ID || p.PinnedAt.IsZero() {
			t.Fatalf("pin = %+v", p)
		}
		if c := f.authz.Last(); c.Action != messaging.ActMessagePin || c.Resource.ID != m.ID || c.Resource.OwnerID != alice.ID {
			t.Fatalf("authorized %+v", c)
		}
		again, created, err := f.svc.PinMessage(ctx, alice, m.ID)
		if err != nil || created || again != p {
			t.Fatalf("second pin: %+v %v %v, want %+v", again, created, err, p)
		}
		evs := f.events(t)[1:]
		if len(evs) != 1 || evs[0].Type != messaging.EvMessagePinned.Name || evs[0].Scope != m.Scope() || evs[0].SubjectID != m.ID {
			t.Fatalf("events = %+v", evs)
		}
		if got := storetest.Payload[messaging.Pin](t, evs[0]); got != p {
			t.Fatalf("payload %+v, want %+v", got, p)
		}
	})

	t.Run("unpins once, with the pin as it was in message.unpinned", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "a")
		p, _, err := f.svc.PinMessage(ctx, bob, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []bool{true, false} {
			removed, err := f.svc.UnpinMessage(ctx, alice, m.ID)
			if err != nil || removed != want {
				t.Fatalf("unpin %d: removed %v, %v", i, removed, err)
			}
		}
		if c := f.authz.Last(); c.Action != messaging.ActMessageUnpin {
			t.Fatalf("authorized %+v", c)
		}
		evs := f.events(t)[2:]
		if len(evs) != 1 || evs[0].Type != messaging.EvMessageUnpinned.Name || evs[0].Scope != m.Scope() {
			t.Fatalf("events = %+v", evs)
		}
		if got := storetest.Payload[messaging.Pin](t, evs[0]); got != p {
			t.Fatalf("payload %+v, want %+v", got, p)
		}
		if pins, err := f.svc.ListPins(ctx, alice, f.channel.ID); err != nil || len(pins) != 0 {
			t.Fatalf("pins after unpin: %+v %v", pins, err)
		}
	})

	t.Run("lists the channel's pins newest first, a thread's message among them", func(t *testing.T) {
		f := mustMessaging(t)
		a, b := mustPost(t, f, alice, "a"), mustPost(t, f, alice, "b")
		_, reply, _, err := f.svc.Reply(ctx, bob, a.ID, messaging.NewReply{Content: "in the thread"})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []messaging.Message{b, reply, a} {
			f.clock.Advance(time.Second)
			if _, _, err := f.svc.PinMessage(ctx, bob, m.ID); err != nil {
				t.Fatal(err)
			}
		}
		pins, err := f.svc.ListPins(ctx, carol, f.channel.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c := f.authz.Last(); c.Action != messaging.ActMessageRead || c.Resource.ID != f.channel.ID {
			t.Fatalf("authorized %+v", c)
		}
		if len(pins) != 3 || pins[0].MessageID != a.ID || pins[1].MessageID != reply.ID || pins[2].MessageID != b.ID {
			t.Fatalf("pins = %+v", pins)
		}
		if pins[1].ThreadID != reply.ThreadID || pins[1].Message.Content != "in the thread" {
			t.Fatalf("the thread's pin = %+v", pins[1])
		}
	})

	t.Run("deleting a pinned message unpins it in the same unit, before message.deleted", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "a")
		if _, _, err := f.svc.PinMessage(ctx, bob, m.ID); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.DeleteMessage(ctx, alice, m.ID); err != nil {
			t.Fatal(err)
		}
		evs := f.events(t)[2:]
		if len(evs) != 2 || evs[0].Type != messaging.EvMessageUnpinned.Name || evs[1].Type != messaging.EvMessageDeleted.Name {
			t.Fatalf("events = %+v", evs)
		}
		if pins, err := f.svc.ListPins(ctx, alice, f.channel.ID); err != nil || len(pins) != 0 {
			t.Fatalf("pins after delete: %+v %v", pins, err)
		}
		if _, _, err := f.svc.PinMessage(ctx, bob, m.ID); !kernel.IsCode(err, messaging.CodeMessageDeleted) {
			t.Fatalf("pin of a deleted message: %v", err)
		}
		if removed, err := f.svc.UnpinMessage(ctx, bob, m.ID); err != nil || removed {
			t.Fatalf("unpin of a deleted message: %v %v", removed, err)
		}
	})

	t.Run("refuses a pin beyond the channel's bound and pins again once one is unpinned", func(t *testing.T) {
		f := mustMessaging(t)
		var first messaging.Message
		for i := range messaging.MaxPinsPerChannel {
			m := mustPost(t, f, alice, fmt.Sprint("m", i))
			if i == 0 {
				first = m
			}
			if _, _, err := f.svc.PinMessage(ctx, alice, m.ID); err != nil {
				t.Fatal(err)
			}
		}
		extra := mustPost(t, f, alice, "one too many")
		n := len(f.events(t))
		if _, _, err := f.svc.PinMessage(ctx, alice, extra.ID); !kernel.IsCode(err, messaging.CodePinLimit) || len(f.events(t)) != n {
			t.Fatalf("pin %d: %v", messaging.MaxPinsPerChannel+1, err)
		}
		if _, _, err := f.svc.PinMessage(ctx, alice, first.ID); err != nil {
			t.Fatalf("a pinned message answers its pin at the bound: %v", err)
		}
		if _, err := f.svc.UnpinMessage(ctx, alice, first.ID); err != nil {
			t.Fatal(err)
		}
		if _, created, err := f.svc.PinMessage(ctx, alice, extra.ID); err != nil || !created {
			t.Fatalf("pin after an unpin: %v %v", created, err)
		}
	})

	t.Run("refuses what the authorizer refuses and an unknown message, changing nothing", func(t *testing.T) {
		f := mustMessaging(t)
		m := mustPost(t, f, alice, "a")
		f.authz.Fn = func(actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
			if actor.ID == carol.ID && (action == messaging.ActMessagePin || action == messaging.ActMessageUnpin) {
				return kernel.Errorf(kernel.CodeForbidden, "no")
			}
			return nil
		}
		n := len(f.events(t))
		if _, _, err := f.svc.PinMessage(ctx, carol, m.ID); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("pin: %v", err)
		}
		if _, err := f.svc.UnpinMessage(ctx, carol, m.ID); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("unpin: %v", err)
		}
		if _, _, err := f.svc.PinMessage(ctx, bob, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("unknown message: %v", err)
		}
		if _, err := f.svc.ListPins(ctx, bob, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("unknown channel: %v", err)
		}
		if len(f.events(t)) != n {
			t.Fatalf("events %d → %d", n, len(f.events(t)))
		}
	})
}
