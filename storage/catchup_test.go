package storage_test

import (
	"context"
	"encoding/json"
	"testing"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage/storetest"
)

func TestCatchUpOnTheLog(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newMsgEnv(t, eng)
		hidden := e.chatEnv.channel(t, e.channel.SpaceID, "hidden")
		var visible []kernel.ID
		for i := 0; i < 3; i++ {
			visible = append(visible, e.post(t, e.alice, e.mainID, "seen", "").ID)
			e.post(t, e.alice, hidden.MainThreadID, "unseen", "")
		}
		for i := 0; i < 30; i++ {
			e.post(t, e.alice, hidden.MainThreadID, "unseen", "")
		}
		e.az.deny[hidden.ID] = true
		svc := catchup.New(catchup.Deps{Log: e.db, Scoper: e.az})
		head := e.db.Head()

		t.Run("skips the events of an invisible channel", func(t *testing.T) {
			p, err := svc.CatchUp(ctx, e.bob, e.startSeq, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []kernel.ID
			for _, ev := range p.Events {
				if ev.Scope.ChannelID == hidden.ID {
					t.Fatalf("got an event of the hidden channel: %+v", ev)
				}
				var m messaging.Message
				if err := json.Unmarshal(ev.Payload, &m); err != nil {
					t.Fatal(err)
				}
				got = append(got, m.ID)
			}
			if len(got) != 3 || got[0] != visible[0] || got[2] != visible[2] {
				t.Fatalf("got %v, want %v", got, visible)
			}
			if p.NextAfter != head || p.HeadSeq != head {
				t.Fatalf("next_after %d head %d, want both %d", p.NextAfter, p.HeadSeq, head)
			}
		})
		t.Run("moves next_after on when every scanned event was invisible", func(t *testing.T) {
			from := head - 30
			p, err := svc.CatchUp(ctx, e.bob, from, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Events) != 0 || p.NextAfter != from+catchup.ScanFactor {
				t.Fatalf("events %d next_after %d, want 0 and %d", len(p.Events), p.NextAfter, from+catchup.ScanFactor)
			}
		})
		t.Run("sees the hidden channel again once allowed, from the same cursor", func(t *testing.T) {
			delete(e.az.deny, hidden.ID)
			defer func() { e.az.deny[hidden.ID] = true }()
			p, err := svc.CatchUp(ctx, e.bob, e.startSeq, 1000)
			if err != nil || int64(len(p.Events)) != head-e.startSeq {
				t.Fatalf("events %d, want %d, %v", len(p.Events), head-e.startSeq, err)
			}
		})
		t.Run("refuses a cursor beyond the head", func(t *testing.T) {
			if _, err := svc.CatchUp(ctx, e.bob, head+1, 0); !kernel.IsCode(err, kernel.CodeCursorInvalid) {
				t.Fatalf("err = %v", err)
			}
		})
	})
}
