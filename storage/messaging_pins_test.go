package storage_test

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage/storetest"
)

// TestMessagePins holds the repository of pins: one pin per message, read back as written, a
// channel's pins newest first with their messages, and an unpin that answers what it removed.
func TestMessagePins(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newRunEnv(t, eng)
		a, b, c := e.post(t, e.pia, "a @paul"), e.post(t, e.pia, "b"), e.post(t, e.pia, "c")
		t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
		pin := func(m messaging.Message, at time.Time) messaging.Pin {
			return messaging.Pin{MessageID: m.ID, ChannelID: m.ChannelID, ThreadID: m.ThreadID, PinnedBy: e.paul.ID, PinnedAt: at}
		}
		in := func(f func(ctx context.Context) error) {
			t.Helper()
			if err := e.db.Do(bg, f); err != nil {
				t.Fatal(err)
			}
		}

		t.Run("a pin is stored once and reads back as written", func(t *testing.T) {
			in(func(ctx context.Context) error {
				for i, m := range []messaging.Message{a, b, c} {
					if ok, err := e.msgRepo.InsertPin(ctx, pin(m, t0.Add(time.Duration(i)*time.Second))); err != nil || !ok {
						t.Fatalf("insert %d: %v %v", i, ok, err)
					}
				}
				again := pin(a, t0.Add(time.Hour))
				if ok, err := e.msgRepo.InsertPin(ctx, again); err != nil || ok {
					t.Fatalf("second pin of a message: inserted %v, %v", ok, err)
				}
				return nil
			})
			got, err := e.msgRepo.Pin(bg, a.ID)
			if err != nil || got != pin(a, t0) {
				t.Fatalf("got %+v, %v; want %+v", got, err, pin(a, t0))
			}
			if n, err := e.msgRepo.CountPins(bg, e.channel.ID); err != nil || n != 3 {
				t.Fatalf("count %d, %v", n, err)
			}
		})

		t.Run("a channel's pins come newest first with their messages", func(t *testing.T) {
			got, err := e.msgRepo.Pins(bg, e.channel.ID, 100)
			if err != nil {
				t.Fatal(err)
			}
			var ids []kernel.ID
			for _, p := range got {
				ids = append(ids, p.MessageID)
				if p.Message.ID != p.MessageID {
					t.Errorf("pin of %s carries message %s", p.MessageID, p.Message.ID)
				}
			}
			if want := []kernel.ID{c.ID, b.ID, a.ID}; len(ids) != 3 || ids[0] != want[0] || ids[1] != want[1] || ids[2] != want[2] {
				t.Fatalf("order %v, want %v", ids, want)
			}
			if last := got[2].Message; last.Content != "a @paul" || len(last.Mentions) != 1 || last.Mentions[0] != e.paul.ID {
				t.Fatalf("message with mentions: %+v", last)
			}
			if top, err := e.msgRepo.Pins(bg, e.channel.ID, 1); err != nil || len(top) != 1 || top[0].MessageID != c.ID {
				t.Fatalf("limit 1: %+v %v", top, err)
			}
			if none, err := e.msgRepo.Pins(bg, kernel.NewID(), 100); err != nil || len(none) != 0 {
				t.Fatalf("another channel: %+v %v", none, err)
			}
		})

		t.Run("an unpin answers the pin it removed, and a second one removes nothing", func(t *testing.T) {
			in(func(ctx context.Context) error {
				p, ok, err := e.msgRepo.DeletePin(ctx, b.ID)
				if err != nil || !ok || p != pin(b, t0.Add(time.Second)) {
					t.Fatalf("unpin: %+v %v %v", p, ok, err)
				}
				if _, ok, err := e.msgRepo.DeletePin(ctx, b.ID); err != nil || ok {
					t.Fatalf("second unpin: %v %v", ok, err)
				}
				return nil
			})
			if _, err := e.msgRepo.Pin(bg, b.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("pin of an unpinned message: %v", err)
			}
			if n, err := e.msgRepo.CountPins(bg, e.channel.ID); err != nil || n != 2 {
				t.Fatalf("count %d, %v", n, err)
			}
		})
	})
}
