package runs_test

import (
	"context"
	"testing"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// fakeDMs answers the participants of one DM, the fixture's channel when it is made one.
type fakeDMs struct {
	channel      kernel.ID
	participants []kernel.ID
}

func (d *fakeDMs) Participants(ctx context.Context, channelID kernel.ID) ([]kernel.ID, bool, error) {
	if channelID != d.channel {
		return nil, false, nil
	}
	return d.participants, true, nil
}

// dm makes the fixture's channel a DM between the participants, and its messages DM messages.
func (f *fixture) dm(participants ...kernel.ID) {
	f.dms.channel, f.dms.participants = f.channel.ID, participants
}

func TestTriggerInDM(t *testing.T) {
	t.Run("a person's message in a DM invokes its agents without a mention", func(t *testing.T) {
		f := mustRuns(t)
		f.dm(invoker.ID, echo)
		m := f.message(invoker)
		m.ChannelKind = chat.KindDM
		if state := f.post(t, invoker, m, false); state != "triggered" {
			t.Fatalf("trigger state %q", state)
		}
		if r := f.onlyRun(t); r.AgentID != echo || r.InvokedBy != invoker.ID {
			t.Fatalf("run %+v", r)
		}
	})

	t.Run("an agent's message in a DM invokes no other agent of it", func(t *testing.T) {
		f := mustRuns(t)
		f.dm(invoker.ID, echo, helper)
		m := f.message(kernel.Actor{ID: echo, Kind: kernel.KindAgent})
		m.ChannelKind = chat.KindDM
		if state := f.post(t, kernel.Actor{ID: echo, Kind: kernel.KindAgent}, m, false); state != "" {
			t.Fatalf("trigger state %q", state)
		}
		if n := len(f.allRuns(t)); n != 0 {
			t.Fatalf("%d runs", n)
		}
	})

	t.Run("a message in a channel that is no DM invokes nobody without a mention", func(t *testing.T) {
		f := mustRuns(t)
		if state := f.post(t, invoker, f.message(invoker), false); state != "" || len(f.allRuns(t)) != 0 {
			t.Fatalf("trigger state %q", state)
		}
	})
}
