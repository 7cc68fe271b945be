package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// runUpdate is the data of a run.updated frame, as much as the tests read.
type runUpdate struct {
	RunID       string `json:"run_id"`
	BaseVersion *int   `json:"base_version"`
	Version     int    `json:"version"`
	Patch       *struct {
		Status       *string           `json:"status"`
		Steps        []json.RawMessage `json:"steps"`
		Output       *string           `json:"output"`
		OutputAppend string            `json:"output_append"`
	} `json:"patch"`
	Document *struct {
		Version int               `json:"version"`
		Status  string            `json:"status"`
		Steps   []json.RawMessage `json:"steps"`
		Output  string            `json:"output"`
	} `json:"document"`
}

// runUpdates returns the run.updated frames the bot was handed, in order.
func runUpdates(b *bot) []runUpdate {
	b.mu.Lock()
	defer b.mu.Unlock()
	return runUpdatesLocked(b)
}

func runUpdatesLocked(b *bot) []runUpdate {
	var out []runUpdate
	for _, e := range b.ephemeralsLocked("run.updated") {
		var u runUpdate
		if err := json.Unmarshal(e.Data, &u); err != nil {
			panic(err)
		}
		out = append(out, u)
	}
	return out
}

// foldedDocument is the run document as a client builds it from run.updated frames (steps
// counted only: the test patches new steps).
type foldedDocument struct {
	Version int
	Status  string
	Steps   int
	Output  string
}

// apply applies u and reports whether it could: false when u is a patch on another version than
// doc's (the client reads the run then).
func (d *foldedDocument) apply(u runUpdate) bool {
	switch {
	case u.Document != nil:
		*d = foldedDocument{Version: u.Document.Version, Status: u.Document.Status, Steps: len(u.Document.Steps), Output: u.Document.Output}
		return true
	case u.Patch == nil || u.BaseVersion == nil || *u.BaseVersion != d.Version:
		return false
	}
	if u.Patch.Status != nil {
		d.Status = *u.Patch.Status
	}
	if u.Patch.Output != nil {
		d.Output = *u.Patch.Output
	}
	d.Output += u.Patch.OutputAppend
	d.Steps += len(u.Patch.Steps)
	d.Version = u.Version
	return true
}

// TestAgentRun is the agent's side of a run, end to end over REST: the agent polls its
// agent.invocation, which carries an invocation token for the run, starts it (a second start is 409),
// patches in version order (an out-of-order patch is 409), posts its answer with the token
// (linked to the run; refused in another thread) and finishes; a person reading the thread sees
// the run go to running and then succeeded. A token past its short TTL is refused and renewed.
func TestAgentRun(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng, "--set", "agent.invocation_token_ttl=3s")
		a, ac := w.in.mustCreateAgent(t, "answerer")
		w.in.owner.mustGrant(t, w.shared.ID, a.ID, "post")
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		th := w.sharedTh.Thread.ID
		start := w.in.owner.mustHead(t)
		ac.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": start}).want(t, http.StatusNoContent)

		mid, _ := postedMessage(t, w.alice, th, "@answerer say hello")
		var runID, delivered string
		deadline := time.Now().Add(10 * time.Second)
		for runID == "" {
			if time.Now().After(deadline) {
				t.Fatal("no agent.invocation within 10s")
			}
			var p struct {
				Events []event `json:"events"`
			}
			ac.do(t, http.MethodGet, api("agents", "me", "events")+"?wait=2s", nil).want(t, http.StatusOK).decode(t, &p)
			for _, e := range p.Events {
				if e.Type == "agent.invocation" && e.Data["message_id"] == mid {
					runID, _ = e.Data["run_id"].(string)
					delivered, _ = e.Data["invocation_token"].(string)
					if delivered == "" || e.Data["expires_at"] == nil {
						t.Fatalf("agent.invocation without its token: %v", e.Data)
					}
				}
			}
		}
		token := func(t *testing.T) string {
			t.Helper()
			obj := ac.do(t, http.MethodPost, api("runs", runID, "token"), nil).want(t, http.StatusOK).obj()
			tok, _ := obj["invocation_token"].(string)
			if tok == "" || obj["expires_at"] == nil {
				t.Fatalf("token answer %v", obj)
			}
			return tok
		}
		var tok string
		with := func(tok string) reqOption { return header("Invocation-Token", tok) }
		wantCode := func(t *testing.T, r *response, status int, code string) {
			t.Helper()
			r.want(t, status)
			if r.code() != code {
				t.Fatalf("code %q, want %q", r.code(), code)
			}
		}

		// The TTL is short: each step takes a fresh token, the last one lets it expire.
		t.Run("the agent starts its run once, with the token it was delivered", func(t *testing.T) {
			tok = delivered
			var r runView
			ac.do(t, http.MethodPost, api("runs", runID, "start"), nil, with(tok)).want(t, http.StatusOK).decode(t, &r)
			if r.Status != "running" {
				t.Fatalf("run %+v", r)
			}
			wantCode(t, ac.do(t, http.MethodPost, api("runs", runID, "start"), nil, with(tok)), http.StatusConflict, "already_started")
		})

		t.Run("patches apply in version order", func(t *testing.T) {
			tok = token(t)
			ac.do(t, http.MethodPatch, api("runs", runID), map[string]any{"version": 1, "output_append": "hel"}, with(tok)).want(t, http.StatusOK)
			wantCode(t, ac.do(t, http.MethodPatch, api("runs", runID), map[string]any{"version": 1, "output_append": "x"}, with(tok)),
				http.StatusConflict, "run_version_conflict")
			ac.do(t, http.MethodPatch, api("runs", runID), map[string]any{"version": 2, "output_append": "lo"}, with(tok)).want(t, http.StatusOK)
			if r := runOf(t, w.alice, runID); r.Version != 2 || r.Document.Output != "hello" {
				t.Fatalf("run %+v", r)
			}
		})

		t.Run("a person focused on the thread sees run.updated in version order", func(t *testing.T) {
			reader := mustStartBot(t, "alice", w.in.srv.public, w.alice.token, botclient.WithCursor(start))
			if err := reader.cl.Focus(context.Background(), th); err != nil {
				t.Fatal(err)
			}
			// The focus travels on the gateway while the patches go over REST: patch until the
			// first frame arrives, then once more.
			tok = token(t)
			version := 2
			patch := func(t *testing.T, body map[string]any) {
				t.Helper()
				version++
				body["version"] = version
				ac.do(t, http.MethodPatch, api("runs", runID), body, with(tok)).want(t, http.StatusOK)
			}
			// At least one status patch, even when the focus's first frame (the run as it is) is
			// there before the first check: the folded document must have a status to hold.
			patch(t, map[string]any{"status": fmt.Sprintf("working %d", version+1)})
			deadline := time.Now().Add(10 * time.Second)
			for len(runUpdates(reader)) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no run.updated within 10s")
				}
				patch(t, map[string]any{"status": fmt.Sprintf("working %d", version+1)})
				time.Sleep(20 * time.Millisecond)
			}
			patch(t, map[string]any{"output_append": ", world", "steps": []map[string]any{{"id": "s1", "kind": "tool_call", "title": "search"}}})
			reader.waitFor(t, "run.updated of the last version", 10*time.Second, func() bool {
				ups := runUpdatesLocked(reader)
				return len(ups) > 0 && ups[len(ups)-1].Version == version
			})
			// Fold the frames as a client does: a patch applies on its base version, a document
			// replaces, and a gap (a frame missed before the focus took) reads the stored run.
			doc := foldedDocument{Version: -1}
			last := 0
			for _, u := range runUpdates(reader) {
				if u.Version <= last {
					t.Fatalf("run.updated out of order: version %d after %d", u.Version, last)
				}
				last = u.Version
				if u.Version > doc.Version && !doc.apply(u) {
					var r struct {
						Document struct {
							Version int               `json:"version"`
							Status  string            `json:"status"`
							Steps   []json.RawMessage `json:"steps"`
							Output  string            `json:"output"`
						} `json:"document"`
					}
					w.alice.do(t, http.MethodGet, api("runs", runID), nil).want(t, http.StatusOK).decode(t, &r)
					doc = foldedDocument{Version: r.Document.Version, Status: r.Document.Status, Steps: len(r.Document.Steps), Output: r.Document.Output}
				}
			}
			r := runOf(t, w.alice, runID)
			if doc.Version != version || r.Version != version || doc.Output != "hello, world" || r.Document.Output != doc.Output ||
				doc.Steps != 1 || doc.Status == "" {
				t.Fatalf("folded %+v, stored %+v", doc, r)
			}
		})

		t.Run("the answer posted with the token is linked to the run, and the token stays in its thread", func(t *testing.T) {
			tok = token(t)
			obj := ac.do(t, http.MethodPost, api("threads", th, "messages"), map[string]any{"content": "hello"}, with(tok)).
				want(t, http.StatusCreated).obj()
			if obj["run_id"] != runID {
				t.Fatalf("message %v", obj)
			}
			other := w.in.owner.mustCreateThread(t, w.shared.ID, "Other", "another thread")
			wantCode(t, ac.do(t, http.MethodPost, api("threads", other.Thread.ID, "messages"), map[string]any{"content": "hi"}, with(tok)),
				http.StatusForbidden, "forbidden")
		})

		t.Run("an expired token is refused, a renewed one works and the run succeeds", func(t *testing.T) {
			deadline := time.Now().Add(10 * time.Second)
			for {
				// A stale version, refused with 409 for as long as the token is valid.
				r := ac.do(t, http.MethodPatch, api("runs", runID), map[string]any{"version": 2}, with(tok))
				if r.status == http.StatusUnauthorized {
					wantCode(t, r, http.StatusUnauthorized, "invocation_token_expired")
					break
				}
				if r.status != http.StatusConflict || time.Now().After(deadline) {
					t.Fatalf("patch with an old token: %d %s", r.status, r.code())
				}
				time.Sleep(200 * time.Millisecond)
			}
			tok = token(t)
			var r runView
			ac.do(t, http.MethodPost, api("runs", runID, "finish"), map[string]any{"outcome": "succeeded"}, with(tok)).
				want(t, http.StatusOK).decode(t, &r)
			if r.Status != "succeeded" || r.EndedAt == nil {
				t.Fatalf("run %+v", r)
			}
		})

		t.Run("a reader of the thread sees the run go to running, then succeeded", func(t *testing.T) {
			evs, _ := w.alice.mustAllEvents(t, start)
			var states []any
			for _, e := range evs {
				if e.Type == "run.state_changed" && e.Data["id"] == runID {
					states = append(states, e.Data["status"])
				}
			}
			if len(states) != 3 || states[0] != "queued" || states[1] != "running" || states[2] != "succeeded" {
				t.Fatalf("run.state_changed %v", states)
			}
		})
	})
}
