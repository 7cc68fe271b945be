package tests

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// retentionArgs prune what is older than three seconds, every second.
var retentionArgs = []string{"--set", "sync.event_retention=3s", "--set", "messaging.revision_retention=3s",
	"--set", "sync.retention_interval=1s", "--set", "sync.retention_batch_size=2"}

// waitResyncRequired polls GET path until it answers 410 and returns that answer.
func waitResyncRequired(tb testing.TB, c *client, path string) *response {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := c.do(tb, http.MethodGet, path, nil)
		if r.status == http.StatusGone {
			return r
		}
		if r.status != http.StatusOK {
			tb.Fatalf("while retention has not passed the cursor: %s", r)
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s still answers 200 after 30 s of retention of 3 s", path)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// wantResyncBody checks the documented body of a 410 resync_required and returns its head_seq.
func wantResyncBody(tb testing.TB, r *response, field string) int64 {
	tb.Helper()
	r.wantProblem(tb, "resync_required")
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		tb.Fatalf("%s: Content-Type %q", r, ct)
	}
	b := r.obj()
	head, hok := b["head_seq"].(float64)
	oldest, ook := b["oldest_seq"].(float64)
	if !hok || !ook || oldest < 2 || head < oldest || b["status"] != float64(410) || b["field"] != field ||
		!strings.Contains(fmt.Sprint(b["detail"]), fmt.Sprint(int64(head))) {
		tb.Fatalf("%s: the body does not say where to go on (head_seq, oldest_seq, field %s, the head in detail)", r, field)
	}
	return int64(head)
}

// TestRetention: with sync.event_retention set, a cursor whose events were pruned is refused on
// REST (410) and on the gateway (4016, the head in the reason); the client reloads and goes on
// from the head. Messages stay; the earlier versions of an edited one go.
func TestRetention(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng, retentionArgs...)
		edited := w.in.owner.mustPost(t, w.sharedTh.Thread.ID, "first words")
		w.in.owner.do(t, http.MethodPatch, api("messages", edited.ID), map[string]any{"content": "second words"}).want(t, http.StatusOK)
		var revs struct {
			Items []map[string]any `json:"items"`
		}
		w.in.owner.do(t, http.MethodGet, api("messages", edited.ID, "revisions"), nil).want(t, http.StatusOK).decode(t, &revs)
		if len(revs.Items) == 0 {
			t.Fatal("an edited message has no earlier version to prune")
		}
		_, agentClient := w.in.mustCreateAgent(t, "late")

		// A cursor at 0: the log's first events go after three seconds.
		r := waitResyncRequired(t, w.alice, "/api/v1/events?after=0")
		head := wantResyncBody(t, r, "after")

		t.Run("the gateway closes an old cursor with 4016 and names the head", func(t *testing.T) {
			rc := mustDialGateway(t, w.in.srv.public, dialOptions{})
			rc.mustSend(t, "identify", map[string]any{"token": w.alice.token, "cursor": 0})
			code, frames := rc.closeCode(10 * time.Second)
			var ce websocket.CloseError
			if code != 4016 || len(frames) != 0 || !errors.As(rc.err, &ce) || !strings.Contains(ce.Reason, "head_seq ") {
				t.Fatalf("closed with %d (%v) after %d frames, want 4016 before ready with the head in the reason", code, rc.err, len(frames))
			}
		})
		t.Run("the client reloads over REST and goes on from the head", func(t *testing.T) {
			var m message
			w.alice.do(t, http.MethodGet, api("messages", edited.ID), nil).want(t, http.StatusOK).decode(t, &m)
			if m.Content != "second words" {
				t.Fatalf("the message reads %q after retention, want it kept as it is", m.Content)
			}
			rc, _ := mustIdentifyRaw(t, w.in.srv.public, w.alice.token, &head, dialOptions{})
			posted := w.in.owner.mustPost(t, w.sharedTh.Thread.ID, "after the resync")
			for {
				f := rc.mustNext(t, 10*time.Second)
				if f.Op == "event" && strings.Contains(string(f.D), posted.ID) {
					break
				}
			}
			w.alice.do(t, http.MethodGet, fmt.Sprintf("/api/v1/events?after=%d", head), nil).want(t, http.StatusOK)
		})
		t.Run("an agent's consumer behind retention is told, and goes on once it acknowledges the head", func(t *testing.T) {
			r := waitResyncRequired(t, agentClient, "/api/v1/agents/me/events")
			head := wantResyncBody(t, r, "cursor")
			rc := mustDialGateway(t, w.in.srv.public, dialOptions{})
			rc.mustSend(t, "identify", map[string]any{"token": agentClient.token})
			if code, _ := rc.closeCode(10 * time.Second); code != 4016 {
				t.Fatalf("the agent's connection closed with %d, want 4016", code)
			}
			agentClient.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": head}).want(t, http.StatusNoContent)
			agentClient.do(t, http.MethodGet, "/api/v1/agents/me/events", nil).want(t, http.StatusOK)
		})
		t.Run("the earlier versions of an edited message are pruned, the message stays", func(t *testing.T) {
			deadline := time.Now().Add(30 * time.Second)
			for {
				w.in.owner.do(t, http.MethodGet, api("messages", edited.ID, "revisions"), nil).want(t, http.StatusOK).decode(t, &revs)
				if len(revs.Items) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the revisions are still there after 30 s of retention of 3 s")
				}
				time.Sleep(200 * time.Millisecond)
			}
			w.in.owner.do(t, http.MethodGet, api("messages", edited.ID), nil).want(t, http.StatusOK)
		})
	})
}

// TestMessageRetention: with messaging.retention set, an old message is deleted as a person's
// delete would: its tombstone stays, search no longer finds it, the thread counts one fewer and
// the log holds message.deleted. Without the key (TestRetention) messages stay.
func TestMessageRetention(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng, "--set", "messaging.retention=3s", "--set", "sync.retention_interval=1s")
		old := w.in.owner.mustPost(t, w.sharedTh.Thread.ID, "zanzibar marmalade")
		if ids := w.in.owner.mustSearch(t, "zanzibar").ids(t); len(ids) != 1 {
			t.Fatalf("search finds %v before retention", ids)
		}
		after := w.in.owner.mustHead(t)
		deadline := time.Now().Add(30 * time.Second)
		var m message
		for {
			w.in.owner.do(t, http.MethodGet, api("messages", old.ID), nil).want(t, http.StatusOK).decode(t, &m)
			if m.Deleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the message is still there after 30 s of retention of 3 s")
			}
			time.Sleep(200 * time.Millisecond)
		}
		if m.Content != "" {
			t.Fatalf("the tombstone keeps the content %q", m.Content)
		}
		if ids := w.in.owner.mustSearch(t, "zanzibar").ids(t); len(ids) != 0 {
			t.Fatalf("search finds %v after retention deleted it", ids)
		}
		evs, _ := w.in.owner.mustAllEvents(t, after)
		found := false
		for _, e := range evs {
			found = found || e.Type == "message.deleted" && strings.Contains(fmt.Sprint(e.Data), old.ID)
		}
		if !found {
			t.Fatalf("no message.deleted of %s after %d: %v", old.ID, after, types(evs))
		}
	})
}

// TestRunOutputRetention: with runs.output_retention set, the output of a run that ended goes
// after that long, the run stays (status, document version); a run still going keeps its output.
func TestRunOutputRetention(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng, "--set", "runs.output_retention=3s", "--set", "sync.retention_interval=1s")
		a, ac := w.in.mustCreateAgent(t, "writer")
		w.in.owner.mustGrant(t, w.shared.ID, a.ID, "post")
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		start := w.in.owner.mustHead(t)
		ac.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": start}).want(t, http.StatusNoContent)
		with := func(tok string) reqOption { return header("Invocation-Token", tok) }

		// Two runs: each started, with output; the first finishes.
		runs := map[string]string{} // run id → its invocation token
		var order []string
		for _, text := range []string{"@writer one", "@writer two"} {
			postedMessage(t, w.alice, w.sharedTh.Thread.ID, text)
		}
		deadline := time.Now().Add(10 * time.Second)
		for len(order) < 2 {
			if time.Now().After(deadline) {
				t.Fatal("no two agent.invocation within 10s")
			}
			var p struct {
				Events     []event `json:"events"`
				NextCursor int64   `json:"next_cursor"`
			}
			ac.do(t, http.MethodGet, api("agents", "me", "events")+"?wait=2s", nil).want(t, http.StatusOK).decode(t, &p)
			for _, e := range p.Events {
				if id, _ := e.Data["run_id"].(string); e.Type == "agent.invocation" && runs[id] == "" {
					runs[id], _ = e.Data["invocation_token"].(string)
					order = append(order, id)
				}
			}
			ac.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": p.NextCursor}).want(t, http.StatusNoContent)
		}
		for _, id := range order {
			ac.do(t, http.MethodPost, api("runs", id, "start"), nil, with(runs[id])).want(t, http.StatusOK)
			ac.do(t, http.MethodPatch, api("runs", id), map[string]any{"version": 1, "output_append": "the answer"}, with(runs[id])).
				want(t, http.StatusOK)
		}
		ended, going := order[0], order[1]
		ac.do(t, http.MethodPost, api("runs", ended, "finish"), map[string]any{"outcome": "succeeded"}, with(runs[ended])).
			want(t, http.StatusOK)

		deadline = time.Now().Add(30 * time.Second)
		for runOf(t, w.alice, ended).Document.Output != "" {
			if time.Now().After(deadline) {
				t.Fatal("the ended run keeps its output after 30 s of retention of 3 s")
			}
			time.Sleep(200 * time.Millisecond)
		}
		if r := runOf(t, w.alice, ended); r.Status != "succeeded" || r.Document.Version < 1 {
			t.Fatalf("the ended run after retention: %+v", r)
		}
		if r := runOf(t, w.alice, going); r.Status != "running" || r.Document.Output != "the answer" {
			t.Fatalf("the run still going lost its output: %+v", r)
		}
	})
}
