package chat_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/storetest"
)

func TestOperator(t *testing.T) {
	ctx := context.Background()
	bot := chat.PrincipalRef{ID: kernel.NewID(), Kind: kernel.KindAgent, Active: true}
	sleeping := chat.PrincipalRef{ID: kernel.NewID(), Kind: kernel.KindAgent, Active: false}
	person := chat.PrincipalRef{ID: alice.ID, Kind: kernel.KindPerson, Active: true}
	errDown := errors.New("the database is gone")

	// fixture is a channel in a space and the principals above.
	fixture := func(t *testing.T) (*chatFixture, chat.Channel) {
		f := mustChat(t)
		for _, p := range []chat.PrincipalRef{bot, sleeping} {
			storetest.Agent(t, f.db, p.ID, alice.ID, p.Active)
		}
		sp := mustSpace(t, f, alice, "Home")
		c := mustChannel(t, f, alice, sp.ID, "general")
		f.authz.Calls = nil
		return f, c
	}
	// denyFor makes authorize refuse action with err (for anyone, or only for the agent).
	denyFor := func(f *chatFixture, action kernel.Action, onlyAgent bool, err error) {
		f.authz.Fn = func(a kernel.Actor, act kernel.Action, r kernel.Resource) error {
			if act == action && (!onlyAgent || a.Kind == kernel.KindAgent) {
				return err
			}
			return nil
		}
	}

	refusals := []struct {
		name      string
		agent     kernel.ID
		deny      func(f *chatFixture)
		wantCode  kernel.Code
		wantField string
		wantText  string
	}{
		{name: "refuses an id no principal has", agent: kernel.NewID(), wantCode: kernel.CodeValidation, wantField: "agent_id"},
		{name: "refuses a person", agent: person.ID, wantCode: kernel.CodeValidation, wantField: "agent_id"},
		{name: "refuses a disabled agent", agent: sleeping.ID, wantCode: kernel.CodeValidation, wantField: "agent_id"},
		{name: "refuses an agent that cannot see the channel", agent: bot.ID, wantCode: kernel.CodeValidation, wantField: "agent_id",
			wantText: "grant it view", deny: func(f *chatFixture) { denyFor(f, chat.ActChannelRead, true, kernel.ErrNotFound) }},
		{name: "refuses an agent that sees the channel but may not read it", agent: bot.ID, wantCode: kernel.CodeValidation,
			wantField: "agent_id", deny: func(f *chatFixture) {
				denyFor(f, chat.ActChannelRead, true, kernel.Errorf(kernel.CodeForbidden, "no"))
			}},
		{name: "passes on a failure of the read check as it is", agent: bot.ID, wantCode: kernel.CodeInternal,
			deny: func(f *chatFixture) { denyFor(f, chat.ActChannelRead, true, errDown) }},
		{name: "refuses a caller without manage before it looks at the agent", agent: kernel.NewID(), wantCode: kernel.CodeForbidden,
			deny: func(f *chatFixture) {
				denyFor(f, chat.ActChannelOperatorSet, false, kernel.Errorf(kernel.CodeForbidden, "no"))
			}},
		{name: "hides a channel the caller may not see", agent: bot.ID, wantCode: kernel.CodeNotFound,
			deny: func(f *chatFixture) { denyFor(f, chat.ActChannelOperatorSet, false, kernel.ErrNotFound) }},
	}
	for _, tt := range refusals {
		t.Run(tt.name+" and changes nothing", func(t *testing.T) {
			f, c := fixture(t)
			if tt.deny != nil {
				tt.deny(f)
			}
			before := len(f.events(t))
			_, err := f.svc.SetOperator(ctx, alice, c.ID, tt.agent)
			if kernel.CodeOf(err) != tt.wantCode {
				t.Fatalf("err = %v, want %s", err, tt.wantCode)
			}
			var ke *kernel.Error
			if tt.wantField != "" && (!errors.As(err, &ke) || ke.Field != tt.wantField) {
				t.Fatalf("err = %#v, want field %s", err, tt.wantField)
			}
			if tt.wantText != "" && !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("err = %v, want it to say %q", err, tt.wantText)
			}
			if got, n := f.channel(t, c.ID), len(f.events(t)); got.OperatorID != nil || n != before {
				t.Fatalf("the channel is %+v and %d events were appended", got, n-before)
			}
		})
	}

	t.Run("an unknown channel is not found", func(t *testing.T) {
		f, _ := fixture(t)
		if _, err := f.svc.SetOperator(ctx, alice, kernel.NewID(), bot.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err = %v", err)
		}
		if _, err := f.svc.ClearOperator(ctx, alice, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("clear: err = %v", err)
		}
	})

	t.Run("names an active agent that may read the channel, once", func(t *testing.T) {
		f, c := fixture(t)
		f.clock.Advance(1500)
		got, err := f.svc.SetOperator(ctx, alice, c.ID, bot.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.OperatorID == nil || *got.OperatorID != bot.ID || !got.UpdatedAt.After(c.UpdatedAt) {
			t.Fatalf("channel = %+v", got)
		}
		if st := f.channel(t, c.ID); st.OperatorID == nil || *st.OperatorID != bot.ID {
			t.Fatalf("stored %+v", st)
		}
		calls := f.authz.Calls
		if len(calls) != 2 || calls[0].Action != chat.ActChannelOperatorSet || calls[0].Resource.ID != c.ID ||
			calls[1].Action != chat.ActChannelRead || calls[1].Resource.ChannelID != c.ID {
			t.Fatalf("authorized %+v: want channel.operator.set for the caller, then channel.read for the agent", calls)
		}
		evs := f.events(t)
		last := evs[len(evs)-1]
		if last.Type != chat.EvChannelUpdated.Name || last.Scope != (kernel.Scope{SpaceID: c.SpaceID, ChannelID: c.ID}) ||
			last.SubjectID != c.ID || last.ActorID != alice.ID {
			t.Fatalf("event %+v", last)
		}
		if p := storetest.Payload[chat.Channel](t, last); p.OperatorID == nil || *p.OperatorID != bot.ID {
			t.Fatalf("payload %+v", p)
		}

		n := len(f.events(t))
		again, err := f.svc.SetOperator(ctx, alice, c.ID, bot.ID)
		if m := len(f.events(t)); err != nil || again.UpdatedAt != got.UpdatedAt || m != n {
			t.Fatalf("naming it again: %+v, %v, %d new events", again, err, m-n)
		}
	})

	t.Run("clears the operator, once", func(t *testing.T) {
		f, c := fixture(t)
		if _, err := f.svc.SetOperator(ctx, alice, c.ID, bot.ID); err != nil {
			t.Fatal(err)
		}
		n := len(f.events(t))
		got, err := f.svc.ClearOperator(ctx, alice, c.ID)
		if err != nil || got.OperatorID != nil || f.channel(t, c.ID).OperatorID != nil {
			t.Fatalf("clear: %+v, %v", got, err)
		}
		evs := f.events(t)
		if len(evs) != n+1 || evs[n].Type != chat.EvChannelUpdated.Name || storetest.Payload[chat.Channel](t, evs[n]).OperatorID != nil {
			t.Fatalf("events %+v", evs[n:])
		}
		if f.authz.Last().Action != chat.ActChannelOperatorSet {
			t.Fatalf("authorized %+v", f.authz.Last())
		}
		if _, err := f.svc.ClearOperator(ctx, alice, c.ID); err != nil || len(f.events(t)) != n+1 {
			t.Fatalf("clearing again: %v, %d events", err, len(f.events(t))-n)
		}
	})

	t.Run("a caller without manage may not clear the operator either", func(t *testing.T) {
		f, c := fixture(t)
		if _, err := f.svc.SetOperator(ctx, alice, c.ID, bot.ID); err != nil {
			t.Fatal(err)
		}
		denyFor(f, chat.ActChannelOperatorSet, false, kernel.Errorf(kernel.CodeForbidden, "no"))
		if _, err := f.svc.ClearOperator(ctx, alice, c.ID); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("err = %v", err)
		}
		if f.channel(t, c.ID).OperatorID == nil {
			t.Fatal("the operator was cleared")
		}
	})
}
