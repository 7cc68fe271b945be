package tests

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// invocationsIn returns the agent.invocation events of a poll's page for the run of messageID.
func invocationsIn(p eventPage, messageID string) []event {
	var out []event
	for _, e := range p.Events {
		if e.Type == "agent.invocation" && e.Data["message_id"] == messageID {
			out = append(out, e)
		}
	}
	return out
}

// pollAgent long-polls the agent's own events once, with wait.
func pollAgent(tb testing.TB, ac *client, wait string) (eventPage, time.Duration) {
	tb.Helper()
	var p struct {
		Events     []event `json:"events"`
		NextCursor int64   `json:"next_cursor"`
		HeadSeq    int64   `json:"head_seq"`
	}
	start := time.Now()
	ac.do(tb, http.MethodGet, api("agents", "me", "events")+"?wait="+wait, nil).want(tb, http.StatusOK).decode(tb, &p)
	return eventPage{Events: p.Events, HeadSeq: p.HeadSeq, NextAfter: p.NextCursor}, time.Since(start)
}

// TestAgentFirstConnection holds that a new agent's consumer starts at the agent's creation, not
// at its first connection: an invocation made between the two reaches the agent when it first
// polls or connects to the gateway, once, and the run does not wait for agent.queued_timeout to
// fail agent_unavailable. A token reset keeps the cursor: the new token resumes where the agent
// acknowledged.
func TestAgentFirstConnection(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		th := w.sharedTh.Thread.ID
		newAgent := func(t *testing.T, handle string) (agent, *client) {
			t.Helper()
			a, ac := w.in.mustCreateAgent(t, handle)
			w.in.owner.mustGrant(t, w.shared.ID, a.ID, "post")
			return a, ac
		}

		t.Run("the first long poll gets the invocation made before it, once", func(t *testing.T) {
			_, ac := newAgent(t, "poller")
			mid, state := postedMessage(t, w.in.owner, th, "@poller before you came")
			if state != "triggered" {
				t.Fatalf("trigger_state %v, want triggered", state)
			}
			p, took := pollAgent(t, ac, "10s")
			got := invocationsIn(p, mid)
			if len(got) != 1 || took > 5*time.Second {
				t.Fatalf("the first poll (after %s) had %d invocations of the mention in %v, want one at once", took, len(got), types(p.Events))
			}
			runID, _ := got[0].Data["run_id"].(string)
			it, _ := got[0].Data["invocation_token"].(string)
			if runID == "" || it == "" {
				t.Fatalf("agent.invocation without its run or token: %v", got[0].Data)
			}
			ac.do(t, http.MethodPost, api("runs", runID, "start"), nil, header("Invocation-Token", it)).want(t, http.StatusOK)
			if r := runOf(t, w.in.owner, runID); r.Status != "running" {
				t.Fatalf("the run is %s after the start, want running", r.Status)
			}
			ac.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": got[0].Seq}).want(t, http.StatusNoContent)
			if again, _ := pollAgent(t, ac, "0s"); len(invocationsIn(again, mid)) != 0 {
				t.Fatalf("the acknowledged invocation came again: %v", types(again.Events))
			}
		})

		t.Run("the first gateway connection gets the invocation made before it, once", func(t *testing.T) {
			a, _ := newAgent(t, "connector")
			mid, _ := postedMessage(t, w.in.owner, th, "@connector before you came")
			var mu sync.Mutex
			handed := map[string]int{}
			type handedRun struct {
				id  string
				seq int64
			}
			runs := make(chan handedRun, 4)
			ag := botclient.NewAgent(w.in.srv.public, a.Token, botOptions...)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- ag.Run(ctx, func(ctx context.Context, inv *botclient.Invocation) error {
					mu.Lock()
					handed[inv.Message.ID]++
					mu.Unlock()
					if _, err := inv.Start(ctx); err != nil {
						return err
					}
					if _, err := inv.Reply(ctx, "now I am here"); err != nil {
						return err
					}
					if err := inv.Finish(ctx, botclient.Succeeded, nil); err != nil {
						return err
					}
					runs <- handedRun{inv.RunID, inv.Seq}
					return nil
				})
			}()
			stop := func() {
				cancel()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Error("the agent did not stop within 10s")
				}
			}
			var run handedRun
			select {
			case run = <-runs:
			case <-time.After(15 * time.Second):
				stop()
				t.Fatal("the agent was not handed the mention made before it connected within 15s")
			}
			if r := runOf(t, w.in.owner, run.id); r.Status != "succeeded" || r.TriggerMessageID == nil || *r.TriggerMessageID != mid {
				t.Fatalf("the run is %s for message %v, want succeeded for %s", r.Status, r.TriggerMessageID, mid)
			}
			time.Sleep(1500 * time.Millisecond) // the client acknowledges within a second
			stop()
			mu.Lock()
			n := handed[mid]
			mu.Unlock()
			if n != 1 {
				t.Fatalf("the invocation was handed %d times, want once", n)
			}
			// The client acknowledges as it stops; on a loaded machine the server may store that
			// a moment after the connection is gone, so the cursor is read until it gets there.
			deadline := time.Now().Add(10 * time.Second)
			for acked := ackedSeq(t, w.in.srv.public, a.Token); acked < run.seq; acked = ackedSeq(t, w.in.srv.public, a.Token) {
				if time.Now().After(deadline) {
					t.Fatalf("the agent's cursor is %d, before the handled invocation at %d: it would come again", acked, run.seq)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})

		t.Run("a token reset keeps the cursor: the new token resumes after what was acknowledged", func(t *testing.T) {
			a, ac := newAgent(t, "resetter")
			first, _ := postedMessage(t, w.in.owner, th, "@resetter one")
			p, _ := pollAgent(t, ac, "10s")
			got := invocationsIn(p, first)
			if len(got) != 1 {
				t.Fatalf("the first poll had %v, want the invocation of the first mention", types(p.Events))
			}
			ac.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": got[0].Seq}).want(t, http.StatusNoContent)
			second, _ := postedMessage(t, w.in.owner, th, "@resetter two")

			var reset agent
			w.in.owner.do(t, http.MethodPost, api("agents", a.ID, "token"), nil).want(t, http.StatusOK).decode(t, &reset)
			if reset.Token == "" || reset.Token == a.Token {
				t.Fatalf("the reset answered token %q", reset.Token)
			}
			ac.do(t, http.MethodGet, api("agents", "me", "events"), nil, breaksDocument()).want(t, http.StatusUnauthorized)
			p, _ = pollAgent(t, as(w.in.srv, reset.Token), "10s")
			if len(invocationsIn(p, first)) != 0 || len(invocationsIn(p, second)) != 1 {
				t.Fatalf("the new token's first poll had %v, want the second mention's invocation only", types(p.Events))
			}
		})
	})
}
