package tests

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// TestInvokeRevoked is the re-check of the invoker before delivery: a person who holds
// invoke mentions two agents that are offline, an owner then takes invoke from her (she keeps
// post), and the agents connect, one over the REST long poll, one over the gateway. Neither is
// handed the invocation, though both are handed what came after it, and both runs end failed
// with permission_revoked, which a reader of the thread sees.
func TestInvokeRevoked(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		polly, pc := w.in.mustCreateAgent(t, "polly")
		gatsby, gc := w.in.mustCreateAgent(t, "gatsby")
		for _, id := range []string{polly.ID, gatsby.ID} {
			w.in.owner.mustGrant(t, w.shared.ID, id, "view")
		}
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		th := w.sharedTh.Thread.ID
		start := w.in.owner.mustHead(t)
		// Both agents have consumed before: their cursors stand at start, and what comes after it
		// waits for them while they are away.
		for _, c := range []*client{pc, gc} {
			c.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": start}).want(t, http.StatusNoContent)
		}

		mid, state := postedMessage(t, w.alice, th, "@polly @gatsby please have a look")
		if state != "triggered" {
			t.Fatalf("trigger_state %v", state)
		}
		var pg page[runView]
		w.alice.do(t, http.MethodGet, api("threads", th, "runs"), nil).want(t, http.StatusOK).decode(t, &pg)
		runOfAgent := map[string]string{}
		for _, r := range pg.Items {
			if r.TriggerMessageID != nil && *r.TriggerMessageID == mid {
				if r.Status != "queued" {
					t.Fatalf("run %+v before the agents connected", r)
				}
				runOfAgent[r.AgentID] = r.ID
			}
		}
		if len(runOfAgent) != 2 {
			t.Fatalf("runs of the mention %v", runOfAgent)
		}

		// The owner takes invoke from alice; she may still post.
		w.in.owner.do(t, http.MethodPost, api("channels", w.shared.ID, "grants"), map[string]any{
			"principal_id": w.aliceU.ID, "level": "post"}).want(t, http.StatusOK)
		fence := w.in.owner.mustPost(t, th, "after the revoke")

		t.Run("the agent over REST is handed what follows, not the invocation", func(t *testing.T) {
			deadline := time.Now().Add(10 * time.Second)
			for fenced := false; !fenced; {
				if time.Now().After(deadline) {
					t.Fatal("the poll did not reach the message after the revoke within 10s")
				}
				var p struct {
					Events     []event `json:"events"`
					NextCursor int64   `json:"next_cursor"`
				}
				pc.do(t, http.MethodGet, api("agents", "me", "events")+"?wait=1s", nil).want(t, http.StatusOK).decode(t, &p)
				for _, e := range p.Events {
					if e.Type == "agent.invocation" {
						t.Fatalf("handed %v", e.Data)
					}
					fenced = fenced || e.Type == "message.created" && e.Data["id"] == fence.ID
				}
				pc.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": p.NextCursor}).want(t, http.StatusNoContent)
			}
		})

		t.Run("the agent over the gateway is handed what follows, not the invocation", func(t *testing.T) {
			b := mustStartBot(t, "gatsby", w.in.srv.public, gatsby.Token, botclient.WithCursor(start))
			b.waitFor(t, "the message after the revoke", 10*time.Second, func() bool {
				for _, e := range b.events {
					var d struct {
						ID string `json:"id"`
					}
					if e.Type == "message.created" && json.Unmarshal(e.Data, &d) == nil && d.ID == fence.ID {
						return true
					}
				}
				return false
			})
			for _, e := range b.handed() {
				if e.Type == "agent.invocation" {
					t.Fatalf("handed %s", e.Data)
				}
			}
		})

		t.Run("both runs ended failed with permission_revoked", func(t *testing.T) {
			for agent, id := range runOfAgent {
				r := runOf(t, w.in.owner, id)
				if r.Status != "failed" || r.Reason == nil || *r.Reason != "permission_revoked" {
					t.Fatalf("run of %s: %s (%v)", agent, r.Status, r.Reason)
				}
			}
			evs, _ := w.alice.mustAllEvents(t, start)
			ended := 0
			for _, e := range evs {
				if e.Type == "run.state_changed" && e.Data["status"] == "failed" && e.Data["reason"] == "permission_revoked" {
					ended++
				}
			}
			if ended != 2 {
				t.Fatalf("alice saw %d runs fail with permission_revoked, want 2", ended)
			}
		})
	})
}
