package tests

import (
	"net/http"
	"testing"
)

// triggersOf reads a message's triggers as agent id → [state, run id].
func triggersOf(tb testing.TB, msg map[string]any) [][3]any {
	tb.Helper()
	list, ok := msg["triggers"].([]any)
	if !ok {
		tb.Fatalf("the message has no triggers: %v", msg)
	}
	var out [][3]any
	for _, e := range list {
		o := e.(map[string]any)
		out = append(out, [3]any{o["agent_id"], o["state"], o["run_id"]})
	}
	return out
}

// TestMessageTriggers holds that a message naming several agents says, for each, whether it ran
// or why not: one agent's run hides no other agent's refusal, in the answer of the post, in GET
// and in message.created.
func TestMessageTriggers(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		runner, _ := w.in.mustCreateAgent(t, "runner")
		off, _ := w.in.mustCreateAgent(t, "sleeper")
		blind, _ := w.in.mustCreateAgent(t, "blind")
		w.in.owner.mustGrant(t, w.shared.ID, runner.ID, "view")
		w.in.owner.mustGrant(t, w.shared.ID, off.ID, "view")
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		w.in.owner.do(t, http.MethodPost, api("agents", off.ID, "disable"), nil).want(t, http.StatusOK)
		th := w.sharedTh.Thread.ID
		start := w.in.owner.mustHead(t)

		posted := w.alice.do(t, http.MethodPost, api("threads", th, "messages"),
			map[string]any{"content": "@runner @sleeper @blind please look"}).want(t, http.StatusCreated).obj()
		mid := posted["id"].(string)
		check := func(t *testing.T, where string, msg map[string]any) {
			t.Helper()
			if msg["trigger_state"] != "triggered" {
				t.Fatalf("%s: trigger_state %v, want triggered", where, msg["trigger_state"])
			}
			got := triggersOf(t, msg)
			if len(got) != 3 {
				t.Fatalf("%s: triggers %v, want one per agent", where, got)
			}
			byAgent := map[any][3]any{}
			for _, e := range got {
				byAgent[e[0]] = e
			}
			ran := byAgent[runner.ID]
			if ran[1] != "triggered" || ran[2] == nil || ran[2] == "" {
				t.Fatalf("%s: the agent that runs: %v", where, ran)
			}
			if r := runOf(t, w.alice, ran[2].(string)); r.AgentID != runner.ID || r.TriggerMessageID == nil || *r.TriggerMessageID != mid {
				t.Fatalf("%s: the run named is %+v", where, r)
			}
			if e := byAgent[off.ID]; e[1] != "agent_disabled" || e[2] != nil {
				t.Fatalf("%s: the disabled agent: %v", where, e)
			}
			if e := byAgent[blind.ID]; e[1] != "agent_cannot_read" || e[2] != nil {
				t.Fatalf("%s: the agent that cannot read: %v", where, e)
			}
		}

		t.Run("the answer of the post shows the run and both refusals", func(t *testing.T) {
			check(t, "POST", posted)
		})
		t.Run("GET shows the same triggers", func(t *testing.T) {
			check(t, "GET", w.alice.do(t, http.MethodGet, api("messages", mid), nil).want(t, http.StatusOK).obj())
		})
		t.Run("message.created carries them", func(t *testing.T) {
			evs, _ := w.alice.mustAllEvents(t, start)
			for _, e := range evs {
				if e.Type == "message.created" && e.Data["id"] == mid {
					check(t, "message.created", e.Data)
					return
				}
			}
			t.Fatal("no message.created for the message")
		})
		t.Run("a message that concerns no agent has no triggers", func(t *testing.T) {
			msg := w.alice.do(t, http.MethodPost, api("threads", th, "messages"),
				map[string]any{"content": "hello @bob"}).want(t, http.StatusCreated).obj()
			if _, ok := msg["triggers"]; ok || msg["trigger_state"] != nil {
				t.Fatalf("triggers %v, trigger_state %v", msg["triggers"], msg["trigger_state"])
			}
		})
	})
}
