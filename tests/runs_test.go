package tests

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// runView is a run as GET /api/v1/runs/{id} shows it.
type runView struct {
	ID                string  `json:"id"`
	AgentID           string  `json:"agent_id"`
	ThreadID          string  `json:"thread_id"`
	ChannelID         string  `json:"channel_id"`
	TriggerMessageID  *string `json:"trigger_message_id"`
	InvokedBy         string  `json:"invoked_by"`
	Status            string  `json:"status"`
	Reason            *string `json:"reason"`
	Version           int     `json:"version"`
	CancelRequestedAt *string `json:"cancel_requested_at"`
	EndedAt           *string `json:"ended_at"`
	Document          struct {
		Version int    `json:"version"`
		Output  string `json:"output"`
	} `json:"document"`
}

// postedMessage posts content into thread and returns the message's id and trigger state.
func postedMessage(tb testing.TB, c *client, threadID, content string) (id string, triggerState any) {
	tb.Helper()
	obj := c.do(tb, http.MethodPost, api("threads", threadID, "messages"), map[string]any{"content": content}).
		want(tb, http.StatusCreated).obj()
	return obj["id"].(string), obj["trigger_state"]
}

// dataOf decodes the data of a gateway event.
func dataOf(e botclient.Event) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(e.Data, &m)
	return m
}

// waitEvent waits until the bot has handed an event of type typ for which match holds, and
// returns its data.
func (b *bot) waitEvent(tb testing.TB, typ string, match func(map[string]any) bool) map[string]any {
	tb.Helper()
	var found map[string]any
	b.waitFor(tb, typ, 10*time.Second, func() bool {
		for _, e := range b.events {
			if d := dataOf(e); e.Type == typ && match(d) {
				found = d
				return true
			}
		}
		return false
	})
	return found
}

// runOf reads a run.
func runOf(tb testing.TB, c *client, id string) runView {
	tb.Helper()
	var r runView
	c.do(tb, http.MethodGet, api("runs", id), nil).want(tb, http.StatusOK).decode(tb, &r)
	return r
}

// TestRuns is the trigger and the people's side of runs, end to end with an agent
// connected through the Go client: a mention by a person with invoke reaches the agent as
// agent.invocation and shows as a queued run to the readers of the thread; a mention without
// the right, or of an agent that cannot read the channel, makes no run and the message says why;
// a new thread in a channel the agent operates invokes it; a cancel of a queued run ends it and
// tells the agent; disabling the agent fails its runs that have not ended.
func TestRuns(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		a, ac := w.in.mustCreateAgent(t, "helper")
		w.in.owner.mustGrant(t, w.shared.ID, a.ID, "view")
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		w.in.owner.mustGrant(t, w.shared.ID, w.bobU.ID, "post")
		start := w.in.owner.mustHead(t)
		b := mustStartBot(t, "helper", w.in.srv.public, a.Token, botclient.WithCursor(start))
		th := w.sharedTh.Thread.ID
		var queued string // the run of the first mention

		t.Run("a mention by a person with invoke reaches the agent and shows as a queued run to the thread's readers", func(t *testing.T) {
			mid, state := postedMessage(t, w.alice, th, "@helper what is new?")
			if state != "triggered" {
				t.Fatalf("trigger_state %v, want triggered", state)
			}
			inv := b.waitEvent(t, "agent.invocation", func(d map[string]any) bool { return d["message_id"] == mid })
			queued, _ = inv["run_id"].(string)
			if tok, _ := inv["invocation_token"].(string); tok == "" || inv["expires_at"] == nil {
				t.Fatalf("agent.invocation over the gateway without its token: %v", inv)
			}
			if inv["agent_id"] != a.ID || inv["thread_id"] != th || inv["channel_id"] != w.shared.ID || inv["space_id"] != w.sp.ID ||
				inv["invoked_by"] != w.aliceU.ID || queued == "" {
				t.Fatalf("agent.invocation %v", inv)
			}
			r := runOf(t, w.alice, queued)
			if r.Status != "queued" || r.AgentID != a.ID || r.ThreadID != th || r.InvokedBy != w.aliceU.ID || r.Reason != nil ||
				r.TriggerMessageID == nil || *r.TriggerMessageID != mid || r.Version != 0 || r.Document.Version != 0 {
				t.Fatalf("run %+v", r)
			}
			var pg page[runView]
			w.alice.do(t, http.MethodGet, api("threads", th, "runs"), nil).want(t, http.StatusOK).decode(t, &pg)
			if len(pg.Items) != 1 || pg.Items[0].ID != queued || pg.HasMore {
				t.Fatalf("the thread's runs %+v", pg)
			}
			// A reader of the thread sees the run queued, after the message that caused it; the
			// invocation is the agent's alone.
			evs, _ := w.alice.mustAllEvents(t, start)
			var msgAt, runAt int
			for i, e := range evs {
				switch {
				case e.Type == "message.created" && e.Data["id"] == mid:
					msgAt = i
					if e.Data["trigger_state"] != "triggered" {
						t.Errorf("message.created says %v", e.Data["trigger_state"])
					}
				case e.Type == "run.state_changed" && e.Data["id"] == queued:
					runAt = i
					if e.Data["status"] != "queued" || e.Data["previous_status"] != nil || e.ThreadID != th {
						t.Errorf("run.state_changed %v", e.Data)
					}
				case e.Type == "agent.invocation":
					t.Errorf("a person was handed the agent's invocation")
				}
			}
			if runAt == 0 || runAt < msgAt {
				t.Errorf("run.state_changed at %d, message.created at %d (%v)", runAt, msgAt, types(evs))
			}
		})

		t.Run("a person without invoke makes no run, and the message says why", func(t *testing.T) {
			mid, state := postedMessage(t, w.bob, th, "@helper can you?")
			if state != "no_invoke_right" {
				t.Fatalf("trigger_state %v", state)
			}
			var m map[string]any
			w.bob.do(t, http.MethodGet, api("messages", mid), nil).want(t, http.StatusOK).decode(t, &m)
			if m["trigger_state"] != "no_invoke_right" || m["run_id"] != nil {
				t.Fatalf("message %v", m)
			}
			var pg page[runView]
			w.bob.do(t, http.MethodGet, api("threads", th, "runs"), nil).want(t, http.StatusOK).decode(t, &pg)
			if len(pg.Items) != 1 {
				t.Fatalf("%d runs, want only the first", len(pg.Items))
			}
		})

		t.Run("an agent that cannot read the channel is not invoked", func(t *testing.T) {
			mid, state := postedMessage(t, w.in.owner, w.privTh.Thread.ID, "@helper look here")
			if state != "agent_cannot_read" {
				t.Fatalf("trigger_state %v", state)
			}
			evs, _ := w.in.owner.mustAllEvents(t, start)
			for _, e := range evs {
				if e.Type == "agent.invocation" && e.Data["message_id"] == mid {
					t.Fatal("an agent that cannot read the channel was invoked")
				}
			}
		})

		var operated string // the run of the new thread
		t.Run("a new thread in a channel the agent operates invokes it, for whoever may open one", func(t *testing.T) {
			w.in.owner.do(t, http.MethodPut, api("channels", w.shared.ID, "operator"), map[string]any{"agent_id": a.ID}).want(t, http.StatusOK)
			var tm struct {
				Thread  thread         `json:"thread"`
				Message map[string]any `json:"message"`
			}
			w.bob.do(t, http.MethodPost, api("channels", w.shared.ID, "threads"), map[string]any{"title": "Help", "content": "it broke"}).
				want(t, http.StatusCreated).decode(t, &tm)
			if tm.Message["trigger_state"] != "triggered" {
				t.Fatalf("trigger_state %v", tm.Message["trigger_state"])
			}
			inv := b.waitEvent(t, "agent.invocation", func(d map[string]any) bool { return d["thread_id"] == tm.Thread.ID })
			operated, _ = inv["run_id"].(string)
			if r := runOf(t, w.bob, operated); r.Status != "queued" || r.InvokedBy != w.bobU.ID {
				t.Fatalf("run %+v", r)
			}
			// A message in a thread that exists does not invoke the operator.
			if _, state := postedMessage(t, w.bob, tm.Thread.ID, "more detail"); state != nil {
				t.Fatalf("a reply has trigger_state %v", state)
			}
		})

		t.Run("cancelling a queued run ends it at once and tells the agent", func(t *testing.T) {
			w.bob.do(t, http.MethodPost, api("runs", queued, "cancel"), nil).want(t, http.StatusForbidden)
			var r runView
			w.alice.do(t, http.MethodPost, api("runs", queued, "cancel"), nil).want(t, http.StatusOK).decode(t, &r)
			if r.Status != "cancelled" || r.CancelRequestedAt == nil || r.EndedAt == nil || r.Reason != nil {
				t.Fatalf("run %+v", r)
			}
			b.waitEvent(t, "run.cancel_requested", func(d map[string]any) bool { return d["run_id"] == queued })
			b.waitEvent(t, "run.state_changed", func(d map[string]any) bool { return d["id"] == queued && d["status"] == "cancelled" })
			if res := w.alice.do(t, http.MethodPost, api("runs", queued, "cancel"), nil); res.status != http.StatusConflict || res.code() != "run_ended" {
				t.Fatalf("a second cancel: %s", res)
			}
			if r := runOf(t, w.bob, queued); r.Status != "cancelled" {
				t.Fatalf("the run reads as %s", r.Status)
			}
		})

		t.Run("bad input gets a clear error and changes nothing", func(t *testing.T) {
			head := w.in.owner.mustHead(t)
			w.alice.do(t, http.MethodGet, api("runs", "not-a-run"), nil, breaksDocument()).want(t, http.StatusNotFound)
			w.alice.do(t, http.MethodPost, api("runs", "not-a-run", "cancel"), nil, breaksDocument()).want(t, http.StatusNotFound)
			w.alice.do(t, http.MethodGet, api("runs", w.aliceU.ID), nil).want(t, http.StatusNotFound)
			if res := w.alice.do(t, http.MethodGet, api("threads", th, "runs")+"?limit=1000", nil, breaksDocument()); res.status != http.StatusBadRequest ||
				res.code() != "validation_failed" {
				t.Fatalf("a page too long: %s", res)
			}
			// Bob may not read the private channel: its runs are not found, like the thread.
			w.bob.do(t, http.MethodGet, api("threads", w.privTh.Thread.ID, "runs"), nil).want(t, http.StatusNotFound)
			if got := w.in.owner.mustHead(t); got != head {
				t.Fatalf("refused requests moved the head from %d to %d", head, got)
			}
		})

		t.Run("disabling the agent fails its runs that have not ended", func(t *testing.T) {
			after := w.in.owner.mustHead(t)
			w.in.owner.do(t, http.MethodPost, api("agents", a.ID, "disable"), nil).want(t, http.StatusOK)
			r := runOf(t, w.bob, operated)
			if r.Status != "failed" || r.Reason == nil || *r.Reason != "agent_disabled" || r.EndedAt == nil {
				t.Fatalf("run %+v", r)
			}
			if r := runOf(t, w.bob, queued); r.Status != "cancelled" {
				t.Fatalf("the cancelled run became %s", r.Status)
			}
			evs, _ := w.in.owner.mustAllEvents(t, after)
			if got := types(evs); !slices.Equal(got, []string{"run.state_changed", "agent.updated"}) {
				t.Fatalf("disabling logged %v", got)
			}
			select {
			case <-b.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the agent's bot still runs 10 s after the agent was disabled")
			}
			if err := b.stop(t); !errors.Is(err, botclient.ErrAuthenticationFailed) {
				t.Errorf("the bot ended with %v", err)
			}
			ac.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusUnauthorized)
		})
	})
}
