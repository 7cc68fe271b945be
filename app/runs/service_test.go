package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage/storetest"
)

var bg = context.Background()

// onlyRun returns the one run of the fixture, failing when there is not exactly one.
func (f *fixture) onlyRun(tb testing.TB) runs.Run {
	tb.Helper()
	all := f.allRuns(tb)
	if len(all) != 1 {
		tb.Fatalf("%d runs, want 1", len(all))
	}
	return all[0]
}

func TestTrigger(t *testing.T) {
	t.Run("a mention by a person with invoke makes a queued run, agent.invocation and run.state_changed", func(t *testing.T) {
		f := mustRuns(t)
		m := f.message(invoker, echo)
		if state := f.post(t, invoker, m, false); state != "triggered" {
			t.Fatalf("trigger state %q", state)
		}
		r := f.onlyRun(t)
		now := f.clock.Now().Truncate(time.Microsecond)
		if r.AgentID != echo || r.ThreadID != m.ThreadID || r.ChannelID != m.ChannelID || r.SpaceID != m.SpaceID ||
			r.TriggerMessageID == nil || *r.TriggerMessageID != m.ID || r.InvokedBy != invoker.ID || r.Status != runs.StatusQueued ||
			r.Reason != "" || r.Version != 0 || r.Document.Version != 0 || !r.CreatedAt.Equal(now) || !r.LastActivityAt.Equal(now) ||
			r.StartedAt != nil || r.EndedAt != nil || r.CancelRequestedAt != nil || r.ChannelKind != chat.KindChannel {
			t.Fatalf("run %+v", r)
		}
		evs := f.events(t)
		if got := typesOf(evs); !slices.Equal(got, []string{runs.EvAgentInvocation.Name, runs.EvRunStateChanged.Name}) {
			t.Fatalf("events %v", got)
		}
		inv := evs[0]
		if inv.Scope != (kernel.Scope{PrincipalID: echo}) || inv.SubjectID != r.ID || inv.ActorID != invoker.ID ||
			!reflect.DeepEqual(storetest.Payload[runs.Invocation](t, inv), runs.Invocation{RunID: r.ID, AgentID: echo, ThreadID: m.ThreadID, ChannelID: m.ChannelID, SpaceID: m.SpaceID,
				MessageID: m.ID, InvokedBy: invoker.ID}) {
			t.Fatalf("agent.invocation %+v", inv)
		}
		st := evs[1]
		sc := storetest.Payload[runs.StateChange](t, st)
		if st.Scope != r.Scope() || st.SubjectID != r.ID || sc.PreviousStatus != nil || sc.Status != runs.StatusQueued || sc.ID != r.ID {
			t.Fatalf("run.state_changed %+v", st)
		}
		b := st.Payload
		var obj map[string]any
		_ = json.Unmarshal(b, &obj)
		if obj["previous_status"] != nil || obj["reason"] != nil || obj["status"] != "queued" || obj["document"] != nil {
			t.Fatalf("run.state_changed encodes as %s", b)
		}
		if c := f.authz.Calls; len(c) != 2 || c[0].Action != runs.ActAgentInvoke || c[1].Action != chat.ActChannelRead ||
			c[0].Resource.Kind != kernel.ResChannel || c[0].Resource.ID != f.channel.ID {
			t.Fatalf("decisions %+v", c)
		}
	})

	refusals := []struct {
		name  string
		by    kernel.Actor
		agent kernel.ID
		want  string
	}{
		{"a person with post only invokes nobody", poster, echo, "no_invoke_right"},
		{"a person who cannot see the channel invokes nobody", stranger, echo, "no_invoke_right"},
		{"an agent without a grant on the channel is not invoked", invoker, mute, "agent_cannot_read"},
		{"a disabled agent is not invoked", invoker, off, "agent_disabled"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			f := mustRuns(t)
			if state := f.post(t, tc.by, f.message(tc.by, tc.agent), false); state != tc.want {
				t.Fatalf("trigger state %q, want %q", state, tc.want)
			}
			if len(f.allRuns(t)) != 0 || len(f.events(t)) != 0 {
				t.Fatalf("a refused mention made %d runs and %v", len(f.allRuns(t)), typesOf(f.events(t)))
			}
		})
	}

	t.Run("an owner invokes without a grant", func(t *testing.T) {
		f := mustRuns(t)
		if state := f.post(t, owner, f.message(owner, echo), false); state != "triggered" {
			t.Fatalf("trigger state %q", state)
		}
	})

	t.Run("a message that mentions only people concerns no agent", func(t *testing.T) {
		f := mustRuns(t)
		if state := f.post(t, invoker, f.message(invoker, viewer.ID, poster.ID), false); state != "" {
			t.Fatalf("trigger state %q", state)
		}
		if len(f.allRuns(t)) != 0 || len(f.authz.Calls) != 0 {
			t.Fatal("a mention of people made a run or asked authz")
		}
	})

	t.Run("a message that mentions no one and opens no thread reads nothing", func(t *testing.T) {
		f := mustRuns(t)
		f.setOperator(t, echo)
		if state := f.post(t, invoker, f.message(invoker), false); state != "" {
			t.Fatalf("trigger state %q", state)
		}
		if f.agents.reads != 0 || f.structure.reads != 0 || len(f.authz.Calls) != 0 {
			t.Fatalf("reads: agents %d, structure %d, authz %d", f.agents.reads, f.structure.reads, len(f.authz.Calls))
		}
	})

	t.Run("an agent that mentions itself is not invoked by it", func(t *testing.T) {
		f := mustRuns(t)
		f.levels[echo] = invoke
		me := kernel.Actor{ID: echo, Kind: kernel.KindAgent}
		if state := f.post(t, me, f.message(me, echo), false); state != "" || len(f.allRuns(t)) != 0 {
			t.Fatalf("trigger state %q, %d runs", state, len(f.allRuns(t)))
		}
	})

	t.Run("several agents: each one invoked gets its run, and one is enough to be triggered", func(t *testing.T) {
		f := mustRuns(t)
		m := f.message(invoker, echo, mute, helper, viewer.ID)
		if state := f.post(t, invoker, m, false); state != "triggered" {
			t.Fatalf("trigger state %q", state)
		}
		var got []kernel.ID
		for _, r := range f.allRuns(t) {
			got = append(got, r.AgentID)
		}
		slices.Sort(got)
		want := []kernel.ID{echo, helper}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("runs for %v, want %v", got, want)
		}
		n := 0
		for _, c := range f.authz.Calls {
			if c.Action == runs.ActAgentInvoke {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("the author's invoke right was asked %d times", n)
		}
	})

	t.Run("without a run the message shows the refusal the author can do most about", func(t *testing.T) {
		f := mustRuns(t)
		if state := f.post(t, invoker, f.message(invoker, mute, off), false); state != "agent_disabled" {
			t.Fatalf("trigger state %q, want agent_disabled", state)
		}
		f.setOperator(t, off)
		if state := f.post(t, poster, f.newThread(t, poster, mute), true); state != "no_invoke_right" {
			t.Fatalf("trigger state %q, want no_invoke_right", state)
		}
	})

	t.Run("the operator is invoked by every new thread, for whoever may open one", func(t *testing.T) {
		f := mustRuns(t)
		f.setOperator(t, echo)
		m := f.newThread(t, poster)
		if state := f.post(t, poster, m, true); state != "triggered" {
			t.Fatalf("trigger state %q", state)
		}
		r := f.onlyRun(t)
		if r.AgentID != echo || r.ThreadID != m.ThreadID || *r.TriggerMessageID != m.ID || r.InvokedBy != poster.ID {
			t.Fatalf("run %+v", r)
		}
		for _, c := range f.authz.Calls {
			if c.Action == runs.ActAgentInvoke {
				t.Fatal("the operator's trigger asked for the invoke right")
			}
		}
	})

	t.Run("a new thread that also mentions the operator makes one run", func(t *testing.T) {
		f := mustRuns(t)
		f.setOperator(t, echo)
		f.post(t, invoker, f.newThread(t, invoker, echo), true)
		if len(f.allRuns(t)) != 1 {
			t.Fatalf("%d runs", len(f.allRuns(t)))
		}
	})

	t.Run("a message in a thread that exists does not invoke the operator", func(t *testing.T) {
		f := mustRuns(t)
		f.setOperator(t, echo)
		if state := f.post(t, poster, f.message(poster), false); state != "" || len(f.allRuns(t)) != 0 {
			t.Fatalf("trigger state %q, %d runs", state, len(f.allRuns(t)))
		}
	})

	t.Run("the operator opening a thread where it operates does not invoke itself", func(t *testing.T) {
		f := mustRuns(t)
		f.setOperator(t, echo)
		me := kernel.Actor{ID: echo, Kind: kernel.KindAgent}
		if state := f.post(t, me, f.newThread(t, me), true); state != "" || len(f.allRuns(t)) != 0 {
			t.Fatalf("trigger state %q, %d runs", state, len(f.allRuns(t)))
		}
	})

	t.Run("an operator that cannot read the channel is not invoked", func(t *testing.T) {
		f := mustRuns(t)
		f.setOperator(t, mute)
		if state := f.post(t, poster, f.newThread(t, poster), true); state != "agent_cannot_read" || len(f.allRuns(t)) != 0 {
			t.Fatalf("trigger state %q, %d runs", state, len(f.allRuns(t)))
		}
	})

	t.Run("a store failure vetoes the message's unit", func(t *testing.T) {
		f := mustRuns(t)
		f.store.fail = errors.New("disk full")
		var state string
		err := f.db.Do(bg, func(ctx context.Context) error {
			return f.posted(ctx, invoker, f.message(invoker, echo), false, &state)
		})
		if err == nil || len(f.events(t)) != 0 {
			t.Fatalf("err %v, events %v", err, typesOf(f.events(t)))
		}
	})
}

func TestGet(t *testing.T) {
	f := mustRuns(t)
	f.post(t, invoker, f.message(invoker, echo), false)
	r := f.onlyRun(t)
	for _, who := range []kernel.Actor{viewer, invoker, owner, {ID: echo, Kind: kernel.KindAgent}} {
		got, err := f.svc.Get(bg, who, r.ID)
		if err != nil || got.ID != r.ID {
			t.Fatalf("%v reads %+v, %v", who.ID, got, err)
		}
	}
	if _, err := f.svc.Get(bg, stranger, r.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
		t.Fatalf("a stranger: %v", err)
	}
	if c := f.authz.Last(); c.Action != runs.ActRunRead || c.Resource.Kind != kernel.ResRun || c.Resource.OwnerID != invoker.ID {
		t.Fatalf("decided %+v", c)
	}
	if _, err := f.svc.Get(bg, viewer, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
		t.Fatalf("an unknown run: %v", err)
	}

	t.Run("lists a thread's runs to its readers", func(t *testing.T) {
		f.post(t, invoker, f.message(invoker, helper), false)
		items, more, err := f.svc.ListThread(bg, viewer, f.main.ID, chat.Page{})
		if err != nil || more || len(items) != 2 || items[0].ID > items[1].ID {
			t.Fatalf("items %+v more %v err %v", items, more, err)
		}
		if _, _, err := f.svc.ListThread(bg, stranger, f.main.ID, chat.Page{}); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("a stranger: %v", err)
		}
		if _, _, err := f.svc.ListThread(bg, viewer, kernel.NewID(), chat.Page{}); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("an unknown thread: %v", err)
		}
		if _, _, err := f.svc.ListThread(bg, viewer, f.main.ID, chat.Page{Limit: 201}); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("a page too long: %v", err)
		}
		items, more, err = f.svc.ListThread(bg, viewer, f.main.ID, chat.Page{Limit: 1})
		if err != nil || !more || len(items) != 1 {
			t.Fatalf("a page of one: %d items, more %v, %v", len(items), more, err)
		}
	})
}

func TestCancel(t *testing.T) {
	queued := func(t *testing.T) (*fixture, runs.Run) {
		f := mustRuns(t)
		f.post(t, invoker, f.message(invoker, echo), false)
		return f, f.onlyRun(t)
	}

	t.Run("a queued run ends cancelled at once, and the agent is told", func(t *testing.T) {
		f, r := queued(t)
		n := len(f.events(t))
		f.clock.Advance(time.Second)
		got, err := f.svc.Cancel(bg, invoker, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		now := f.clock.Now().Truncate(time.Microsecond)
		if got.Status != runs.StatusCancelled || got.Reason != "" || got.CancelRequestedAt == nil || !got.CancelRequestedAt.Equal(now) ||
			got.EndedAt == nil || !got.EndedAt.Equal(now) || !got.UpdatedAt.Equal(now) {
			t.Fatalf("run %+v", got)
		}
		if stored := f.run(t, r.ID); stored.Status != runs.StatusCancelled || stored.CancelRequestedAt == nil {
			t.Fatalf("stored %+v", stored)
		}
		evs := f.eventsSince(t, n)
		if got := typesOf(evs); !slices.Equal(got, []string{runs.EvRunCancelRequested.Name, runs.EvRunStateChanged.Name}) {
			t.Fatalf("events %v", got)
		}
		if evs[0].Scope != (kernel.Scope{PrincipalID: echo}) || evs[0].ActorID != invoker.ID ||
			storetest.Payload[runs.CancelRequest](t, evs[0]) != (runs.CancelRequest{RunID: r.ID, AgentID: echo, ThreadID: r.ThreadID, ChannelID: r.ChannelID,
				SpaceID: r.SpaceID, RequestedBy: invoker.ID, RequestedAt: now}) {
			t.Fatalf("run.cancel_requested %+v", evs[0])
		}
		sc := storetest.Payload[runs.StateChange](t, evs[1])
		if *sc.PreviousStatus != runs.StatusQueued || sc.Status != runs.StatusCancelled || evs[1].Scope != r.Scope() {
			t.Fatalf("run.state_changed %+v", sc)
		}
		if _, err := f.svc.Cancel(bg, invoker, r.ID); !kernel.IsCode(err, runs.CodeRunEnded) {
			t.Fatalf("cancel of an ended run: %v", err)
		}
		if len(f.events(t)) != n+2 {
			t.Fatal("the refused cancel appended an event")
		}
	})

	t.Run("a running run is asked to stop and goes on until the agent confirms; asking again changes nothing", func(t *testing.T) {
		f, r := queued(t)
		r.Status = runs.StatusRunning
		f.putRun(t, r)
		n := len(f.events(t))
		got, err := f.svc.Cancel(bg, manager, r.ID)
		if err != nil || got.Status != runs.StatusRunning || got.CancelRequestedAt == nil || got.EndedAt != nil {
			t.Fatalf("run %+v, %v", got, err)
		}
		if got := typesOf(f.eventsSince(t, n)); !slices.Equal(got, []string{runs.EvRunCancelRequested.Name}) {
			t.Fatalf("events %v", got)
		}
		again, err := f.svc.Cancel(bg, invoker, r.ID)
		if err != nil || !again.CancelRequestedAt.Equal(*got.CancelRequestedAt) || len(f.events(t)) != n+1 {
			t.Fatalf("again: %+v, %v, %d events", again, err, len(f.events(t))-n)
		}
	})

	for _, tc := range []struct {
		name string
		who  kernel.Actor
		want kernel.Code
	}{
		{"a reader who did not invoke it may not cancel", viewer, kernel.CodeForbidden},
		{"a person who cannot see the thread does not find the run", stranger, kernel.CodeNotFound},
		{"the agent may not cancel its own run by this door", kernel.Actor{ID: echo, Kind: kernel.KindAgent}, kernel.CodeForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, r := queued(t)
			n := len(f.events(t))
			if _, err := f.svc.Cancel(bg, tc.who, r.ID); !kernel.IsCode(err, tc.want) {
				t.Fatalf("err %v, want %s", err, tc.want)
			}
			if f.run(t, r.ID).Status != runs.StatusQueued || len(f.events(t)) != n {
				t.Fatal("a refused cancel changed something")
			}
		})
	}

	t.Run("an owner may cancel any run", func(t *testing.T) {
		f, r := queued(t)
		if got, err := f.svc.Cancel(bg, owner, r.ID); err != nil || got.Status != runs.StatusCancelled {
			t.Fatalf("%+v, %v", got, err)
		}
	})

	t.Run("an unknown run is not found", func(t *testing.T) {
		f := mustRuns(t)
		if _, err := f.svc.Cancel(bg, owner, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestAgentDisabled(t *testing.T) {
	f := mustRuns(t)
	for range 3 {
		f.post(t, invoker, f.message(invoker, echo, helper), false)
	}
	var mine []runs.Run
	for _, r := range f.allRuns(t) {
		if r.AgentID == echo {
			mine = append(mine, r)
		}
	}
	slices.SortFunc(mine, func(a, b runs.Run) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	mine[1].Status = runs.StatusWaitingInput
	mine[2].Status = runs.StatusSucceeded
	f.putRun(t, mine[1])
	f.putRun(t, mine[2])
	n := len(f.events(t))

	err := f.db.Do(bg, func(ctx context.Context) error {
		return f.svc.OnAgentDisabled(ctx, agents.AgentDisabled{AgentID: echo, ActorID: owner.ID})
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []runs.Status{runs.StatusFailed, runs.StatusFailed, runs.StatusSucceeded} {
		got := f.run(t, mine[i].ID)
		if got.Status != want || (want == runs.StatusFailed) != (got.Reason == runs.ReasonAgentDisabled) ||
			(want == runs.StatusFailed) != (got.EndedAt != nil) {
			t.Errorf("run %d: %s (%s), want %s", i, got.Status, got.Reason, want)
		}
	}
	for _, r := range f.allRuns(t) {
		if r.AgentID == helper && r.Status != runs.StatusQueued {
			t.Errorf("another agent's run is %s", r.Status)
		}
	}
	evs := f.eventsSince(t, n)
	if len(evs) != 2 {
		t.Fatalf("events %v", typesOf(evs))
	}
	for i, e := range evs {
		sc := storetest.Payload[runs.StateChange](t, e)
		if e.Type != runs.EvRunStateChanged.Name || e.ActorID != owner.ID || sc.Status != runs.StatusFailed ||
			sc.Reason != runs.ReasonAgentDisabled || sc.ID != mine[i].ID || *sc.PreviousStatus != mine[i].Status {
			t.Errorf("event %d: %+v", i, e)
		}
	}
}
