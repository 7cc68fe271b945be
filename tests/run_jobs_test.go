package tests

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestRunJobs is the jobs of runs, end to end with short timings: with no agent running a
// run fails agent_unavailable after agent.queued_timeout; a run whose agent keeps polling but
// stops patching fails stale after agent.stall_timeout, and one whose agent stops polling too
// fails interrupted; a cancel the agent ignores ends the run cancelled with cancel_timeout after
// agent.cancel_grace. A reader of the thread sees each state change. The agent here is the test
// itself, over REST: it takes a token with its API token and starts the run as soon as the run
// exists, well within the queued timeout.
func TestRunJobs(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng, "--set", "agent.queued_timeout=2s", "--set", "agent.stall_timeout=4s",
			"--set", "agent.stall_check_interval=200ms", "--set", "agent.cancel_grace=1s")
		a, ac := w.in.mustCreateAgent(t, "sleeper")
		w.in.owner.mustGrant(t, w.shared.ID, a.ID, "view")
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		th := w.sharedTh.Thread.ID
		start := w.in.owner.mustHead(t)
		ac.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": start}).want(t, http.StatusNoContent)

		// runFor posts a mention and returns the run it made.
		runFor := func(t *testing.T, content string) string {
			t.Helper()
			mid, state := postedMessage(t, w.alice, th, content)
			if state != "triggered" {
				t.Fatalf("trigger_state %v", state)
			}
			var pg page[runView]
			w.alice.do(t, http.MethodGet, api("threads", th, "runs"), nil).want(t, http.StatusOK).decode(t, &pg)
			for _, r := range pg.Items {
				if r.TriggerMessageID != nil && *r.TriggerMessageID == mid {
					return r.ID
				}
			}
			t.Fatalf("no run for message %s in %+v", mid, pg.Items)
			return ""
		}
		// started takes a token for run id and starts it, as an agent would.
		started := func(t *testing.T, id string) string {
			t.Helper()
			tok, _ := ac.do(t, http.MethodPost, api("runs", id, "token"), nil).want(t, http.StatusOK).obj()["invocation_token"].(string)
			ac.do(t, http.MethodPost, api("runs", id, "start"), nil, header("Invocation-Token", tok)).want(t, http.StatusOK)
			return tok
		}
		// endsPolling waits until the run has ended and returns it; with polling, the agent's
		// consumer polls meanwhile, as a live agent over REST does.
		cursor := start
		endsPolling := func(t *testing.T, id string, polling bool) runView {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for {
				r := runOf(t, w.alice, id)
				if r.EndedAt != nil {
					return r
				}
				if time.Now().After(deadline) {
					t.Fatalf("run %s still %s after 20s", id, r.Status)
				}
				if !polling {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				var p struct {
					NextCursor int64 `json:"next_cursor"`
				}
				ac.do(t, http.MethodGet, api("agents", "me", "events")+fmt.Sprintf("?cursor=%d&wait=100ms", cursor), nil).
					want(t, http.StatusOK).decode(t, &p)
				// No ack: an agent stuck in its handler polls on without acknowledging, and the
				// poll alone shows it is there.
				cursor = max(cursor, p.NextCursor)
			}
		}
		ends := func(t *testing.T, id string) runView { t.Helper(); return endsPolling(t, id, false) }
		wantEnd := func(t *testing.T, r runView, status, reason string) {
			t.Helper()
			if r.Status != status || r.Reason == nil || *r.Reason != reason {
				t.Fatalf("run ended %s (%v), want %s with %s", r.Status, r.Reason, status, reason)
			}
		}
		var expired, stalled, interrupted, timedOut string

		t.Run("with no agent running a run fails agent_unavailable after the queued timeout", func(t *testing.T) {
			expired = runFor(t, "@sleeper are you there?")
			posted := time.Now()
			r := ends(t, expired)
			wantEnd(t, r, "failed", "agent_unavailable")
			if waited := time.Since(posted); waited < 1500*time.Millisecond {
				t.Fatalf("expired after %v, before the timeout of 2s", waited)
			}
		})

		t.Run("an agent that keeps polling but stops patching fails its run stale", func(t *testing.T) {
			stalled = runFor(t, "@sleeper think about it")
			tok := started(t, stalled)
			ac.do(t, http.MethodPatch, api("runs", stalled), map[string]any{"version": 1, "status": "Thinking"},
				header("Invocation-Token", tok)).want(t, http.StatusOK)
			patched := time.Now()
			r := endsPolling(t, stalled, true)
			wantEnd(t, r, "failed", "stale")
			if waited := time.Since(patched); waited < 3*time.Second {
				t.Fatalf("stale after %v, before the stall timeout of 4s", waited)
			}
		})

		t.Run("an agent that stops polling too fails its run interrupted", func(t *testing.T) {
			interrupted = runFor(t, "@sleeper and then vanish")
			tok := started(t, interrupted)
			ac.do(t, http.MethodPatch, api("runs", interrupted), map[string]any{"version": 1, "status": "Thinking"},
				header("Invocation-Token", tok)).want(t, http.StatusOK)
			patched := time.Now()
			r := ends(t, interrupted)
			wantEnd(t, r, "failed", "interrupted")
			if waited := time.Since(patched); waited < 3*time.Second {
				t.Fatalf("interrupted after %v, before the stall timeout of 4s", waited)
			}
		})

		t.Run("a cancel the agent ignores ends the run cancelled with cancel_timeout", func(t *testing.T) {
			timedOut = runFor(t, "@sleeper a long job")
			started(t, timedOut)
			var r runView
			w.alice.do(t, http.MethodPost, api("runs", timedOut, "cancel"), nil).want(t, http.StatusOK).decode(t, &r)
			if r.Status != "running" || r.CancelRequestedAt == nil {
				t.Fatalf("after the cancel request %+v", r)
			}
			// The agent is told, and does nothing about it.
			deadline := time.Now().Add(10 * time.Second)
			for told := false; !told; {
				if time.Now().After(deadline) {
					t.Fatal("no run.cancel_requested for the agent within 10s")
				}
				var p struct {
					Events []event `json:"events"`
				}
				ac.do(t, http.MethodGet, api("agents", "me", "events")+"?wait=1s", nil).want(t, http.StatusOK).decode(t, &p)
				for _, e := range p.Events {
					told = told || e.Type == "run.cancel_requested" && e.Data["run_id"] == timedOut
				}
			}
			wantEnd(t, ends(t, timedOut), "cancelled", "cancel_timeout")
		})

		t.Run("a reader of the thread sees each state change", func(t *testing.T) {
			evs, _ := w.alice.mustAllEvents(t, start)
			seen := map[string][]string{}
			for _, e := range evs {
				if e.Type == "run.state_changed" {
					id, _ := e.Data["id"].(string)
					status, _ := e.Data["status"].(string)
					reason, _ := e.Data["reason"].(string)
					seen[id] = append(seen[id], status+"/"+reason)
				}
			}
			for id, want := range map[string][]string{
				expired:     {"queued/", "failed/agent_unavailable"},
				stalled:     {"queued/", "running/", "failed/stale"},
				interrupted: {"queued/", "running/", "failed/interrupted"},
				timedOut:    {"queued/", "running/", "cancelled/cancel_timeout"},
			} {
				if !slices.Equal(seen[id], want) {
					t.Errorf("run %s: run.state_changed %v, want %v", id, seen[id], want)
				}
			}
		})
	})
}
