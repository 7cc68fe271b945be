package runs_test

import (
	"context"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// TestTriggerPerAgent holds that every agent a message concerns ends in a run or in its own
// refusal on the message, so that one agent's run hides no other agent's refusal.
func TestTriggerPerAgent(t *testing.T) {
	t.Run("a run and refusals side by side: each agent has its entry, in the order of the mentions", func(t *testing.T) {
		f := mustRuns(t)
		m := f.message(invoker, echo, off, viewer.ID, mute, helper)
		if state := f.post(t, invoker, m, false); state != "triggered" {
			t.Fatalf("trigger state %q", state)
		}
		byAgent := map[kernel.ID]kernel.ID{}
		for _, r := range f.allRuns(t) {
			byAgent[r.AgentID] = r.ID
		}
		got := f.decided.Agents
		want := []struct {
			agent kernel.ID
			state string
		}{{echo, "triggered"}, {off, "agent_disabled"}, {mute, "agent_cannot_read"}, {helper, "triggered"}}
		if len(got) != len(want) {
			t.Fatalf("entries %+v, want %d (a person mentioned is no agent's entry)", got, len(want))
		}
		for i, w := range want {
			e := got[i]
			if e.AgentID != w.agent || e.State != w.state {
				t.Fatalf("entry %d is %+v, want %v %s", i, e, w.agent, w.state)
			}
			if w.state == "triggered" {
				if e.RunID == nil || *e.RunID != byAgent[w.agent] {
					t.Fatalf("entry %d names run %v, the agent's run is %v", i, e.RunID, byAgent[w.agent])
				}
			} else if e.RunID != nil {
				t.Fatalf("a refusal names run %v", *e.RunID)
			}
		}
		if len(byAgent) != 2 {
			t.Fatalf("%d runs, want 2", len(byAgent))
		}
		var stored messaging.Message
		f.do(t, func(ctx context.Context) error {
			var err error
			stored, err = f.messages.Message(ctx, m.ID)
			return err
		})
		if len(stored.Triggers) != len(got) || *stored.Triggers[0].RunID != *got[0].RunID || stored.Triggers[2].State != "agent_cannot_read" {
			t.Fatalf("stored triggers %+v, decided %+v", stored.Triggers, got)
		}
	})

	t.Run("an author without invoke gets no_invoke_right for every agent named", func(t *testing.T) {
		f := mustRuns(t)
		if state := f.post(t, poster, f.message(poster, echo, helper), false); state != "no_invoke_right" {
			t.Fatalf("trigger state %q", state)
		}
		got := f.decided.Agents
		if len(got) != 2 || got[0] != (messaging.AgentTrigger{AgentID: echo, State: "no_invoke_right"}) ||
			got[1] != (messaging.AgentTrigger{AgentID: helper, State: "no_invoke_right"}) {
			t.Fatalf("entries %+v", got)
		}
	})

	t.Run("the operator of a new thread has its entry before the mentions", func(t *testing.T) {
		f := mustRuns(t)
		f.setOperator(t, off)
		if state := f.post(t, invoker, f.newThread(t, invoker, echo), true); state != "triggered" {
			t.Fatalf("trigger state %q", state)
		}
		got := f.decided.Agents
		if len(got) != 2 || got[0] != (messaging.AgentTrigger{AgentID: off, State: "agent_disabled"}) ||
			got[1].AgentID != echo || got[1].State != "triggered" || got[1].RunID == nil {
			t.Fatalf("entries %+v", got)
		}
	})

	t.Run("a message that concerns no agent has no entries", func(t *testing.T) {
		f := mustRuns(t)
		f.post(t, invoker, f.message(invoker, viewer.ID), false)
		if f.decided.Agents != nil {
			t.Fatalf("entries %+v", f.decided.Agents)
		}
	})
}
