package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// approvalView is an approval as the API answers it.
type approvalView struct {
	ID          string   `json:"id"`
	RunID       string   `json:"run_id"`
	ThreadID    string   `json:"thread_id"`
	Title       string   `json:"title"`
	Detail      string   `json:"detail"`
	ApproverIDs []string `json:"approver_ids"`
	State       string   `json:"state"`
	Decision    *string  `json:"decision"`
	Scope       *string  `json:"scope"`
	By          *string  `json:"by"`
	TimedOut    bool     `json:"timed_out"`
	ExpiresAt   string   `json:"expires_at"`
}

// inbox answers c's approvals in state (pending when empty).
func inbox(tb testing.TB, c *client, state string) []approvalView {
	tb.Helper()
	var p struct {
		Items []approvalView `json:"items"`
	}
	path := api("me", "approvals")
	if state != "" {
		path += "?state=" + state
	}
	c.do(tb, http.MethodGet, path, nil).want(tb, http.StatusOK).decode(tb, &p)
	return p.Items
}

// pendingIn waits until c's inbox holds a pending approval in thread th and answers it.
func pendingIn(tb testing.TB, c *client, th string) approvalView {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, a := range inbox(tb, c, "") {
			if a.ThreadID == th {
				return a
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no pending approval in thread %s within 15s", th)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// asker is an agent's handler that starts its run and asks for approval of the message's second
// word (its title) and, for "twice", asks the same again once approved; "quick" asks with a
// timeout of one second, "detail" names approvers. It replies with what it learned:
// "decision state timed_out by", and for twice the second answer after a "|".
func asker(approvers ...string) func(context.Context, *botclient.Invocation) error {
	return func(ctx context.Context, inv *botclient.Invocation) error {
		if _, err := inv.Start(ctx); err != nil {
			return err
		}
		words := strings.Fields(inv.Message.Content)
		req := botclient.ApprovalRequest{Title: words[1], Detail: "asked by " + inv.RunID, ApproverIDs: approvers}
		if words[1] == "quick" {
			req.Timeout = time.Second
		}
		d, err := inv.RequestApproval(ctx, req)
		if err != nil {
			return nil // a cancelled run: the agent confirms the cancel
		}
		answer := fmt.Sprintf("%s %s %v %s", d.Decision, d.State, d.TimedOut, d.By)
		if words[1] == "twice" && d.Approved() {
			d2, err := inv.RequestApproval(ctx, req)
			if err != nil {
				return err
			}
			answer += fmt.Sprintf("|%s %s %s %s", d2.Decision, d2.State, d2.Scope, d2.By)
		}
		if d.State == "cancelled" {
			return nil
		}
		_, err = inv.Reply(ctx, answer)
		return err
	}
}

// TestApprovals is a run asking people, end to end with an agent on the Go client: the request
// waits the run and shows in the invoker's inbox; only an approver decides (another reader is
// refused with 403, someone who cannot read the thread gets 404); approve, deny and the
// timeout each reach the agent as approval.decided; an approval for the run lets the next
// request of its title pass without a card; cancelling the run cancels what it asked.
func TestApprovals(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		a, _, start := w.mustPostingAgent(t, "asker")
		runAgent(t, botclient.NewAgent(w.in.srv.public, a.Token), asker())

		ask := func(t *testing.T, content string) (string, approvalView) {
			t.Helper()
			th := w.in.owner.mustCreateThread(t, w.shared.ID, uniqueName("ask"), "for the asker").Thread.ID
			postedMessage(t, w.alice, th, "@asker "+content)
			return th, pendingIn(t, w.alice, th)
		}
		decide := func(c *client, id, decision, scope string, opts ...reqOption) *response {
			return c.do(t, http.MethodPost, api("approvals", id, "decide"), map[string]any{"decision": decision, "scope": scope}, opts...)
		}

		t.Run("an approved request reaches the agent, and only an approver may decide", func(t *testing.T) {
			th, ap := ask(t, "deploy")
			if ap.Title != "deploy" || len(ap.ApproverIDs) != 1 || ap.ApproverIDs[0] != w.aliceU.ID || ap.State != "pending" {
				t.Fatalf("approval %+v", ap)
			}
			if r := runOf(t, w.alice, ap.RunID); r.Status != "waiting_input" {
				t.Fatalf("run is %s", r.Status)
			}
			var got approvalView
			w.in.owner.do(t, http.MethodGet, api("approvals", ap.ID), nil).want(t, http.StatusOK).decode(t, &got)
			if got.ID != ap.ID || !strings.HasPrefix(got.Detail, "asked by ") {
				t.Fatalf("GET %+v", got)
			}
			w.bob.do(t, http.MethodGet, api("approvals", ap.ID), nil).want(t, http.StatusNotFound)
			decide(w.in.owner, ap.ID, "approve", "once").want(t, http.StatusForbidden).wantProblem(t, "not_an_approver")
			decide(w.bob, ap.ID, "approve", "once").want(t, http.StatusNotFound)
			decide(w.alice, ap.ID, "perhaps", "once", breaksDocument()).want(t, http.StatusBadRequest).wantProblem(t, "validation_failed")
			decide(w.alice, ap.ID, "approve", "once").want(t, http.StatusOK).decode(t, &got)
			if got.State != "approved" || got.By == nil || *got.By != w.aliceU.ID {
				t.Fatalf("decided %+v", got)
			}
			decide(w.alice, ap.ID, "deny", "once").want(t, http.StatusConflict).wantProblem(t, "approval_decided")
			answer := answerOf(t, w.alice, th, start)
			if want := "approve approved false " + w.aliceU.ID; answer["content"] != want {
				t.Fatalf("the agent answered %q, want %q", answer["content"], want)
			}
			if r := runOf(t, w.alice, ap.RunID); r.Status != "succeeded" {
				t.Fatalf("run is %s", r.Status)
			}
		})

		t.Run("a denied request reaches the agent as deny", func(t *testing.T) {
			th, ap := ask(t, "drop-table")
			decide(w.alice, ap.ID, "deny", "once").want(t, http.StatusOK)
			if answer := answerOf(t, w.alice, th, start); answer["content"] != "deny denied false "+w.aliceU.ID {
				t.Fatalf("the agent answered %q", answer["content"])
			}
		})

		t.Run("a request nobody decides is denied when it times out", func(t *testing.T) {
			th, ap := ask(t, "quick")
			if answer := answerOf(t, w.alice, th, start); answer["content"] != "deny timed_out true " {
				t.Fatalf("the agent answered %q", answer["content"])
			}
			var got approvalView
			w.alice.do(t, http.MethodGet, api("approvals", ap.ID), nil).want(t, http.StatusOK).decode(t, &got)
			if got.State != "timed_out" || !got.TimedOut || got.By != nil || got.Decision == nil || *got.Decision != "deny" {
				t.Fatalf("timed out %+v", got)
			}
		})

		t.Run("approved for the run, the second request of the title passes without a card", func(t *testing.T) {
			head := w.in.owner.mustHead(t)
			th, ap := ask(t, "twice")
			decide(w.alice, ap.ID, "approve", "run").want(t, http.StatusOK)
			answer := answerOf(t, w.alice, th, start)
			if want := "approve approved false " + w.aliceU.ID + "|approve approved run " + w.aliceU.ID; answer["content"] != want {
				t.Fatalf("the agent answered %q, want %q", answer["content"], want)
			}
			evs, _ := w.alice.mustAllEvents(t, head)
			cards := 0
			for _, e := range evs {
				if e.Type == "approval.requested" && e.ThreadID == th {
					cards++
				}
			}
			if cards != 1 {
				t.Fatalf("%d approval.requested in the thread, want 1", cards)
			}
		})

		t.Run("the inbox lists exactly the pending approvals", func(t *testing.T) {
			_, first := ask(t, "one")
			_, second := ask(t, "two")
			decide(w.alice, first.ID, "deny", "once").want(t, http.StatusOK)
			pending := inbox(t, w.alice, "pending")
			if len(pending) != 1 || pending[0].ID != second.ID {
				t.Fatalf("pending %+v, want only %s", pending, second.ID)
			}
			if others := inbox(t, w.bob, "all"); len(others) != 0 {
				t.Fatalf("bob's inbox %+v", others)
			}
			decide(w.alice, second.ID, "approve", "once").want(t, http.StatusOK)
		})

		t.Run("cancelling the run cancels its approval", func(t *testing.T) {
			_, ap := ask(t, "risky")
			w.alice.do(t, http.MethodPost, api("runs", ap.RunID, "cancel"), nil).want(t, http.StatusOK)
			var got approvalView
			w.alice.do(t, http.MethodGet, api("approvals", ap.ID), nil).want(t, http.StatusOK).decode(t, &got)
			if got.State != "cancelled" || got.By != nil {
				t.Fatalf("after the cancel %+v", got)
			}
			deadline := time.Now().Add(15 * time.Second)
			for r := runOf(t, w.alice, ap.RunID); r.Status != "cancelled"; r = runOf(t, w.alice, ap.RunID) {
				if time.Now().After(deadline) {
					t.Fatalf("run is %s, not cancelled within 15s", r.Status)
				}
				time.Sleep(20 * time.Millisecond)
			}
			decide(w.alice, ap.ID, "approve", "once").want(t, http.StatusConflict).wantProblem(t, "approval_decided")
		})

		t.Run("a request over REST refuses an approver who cannot read the thread, and the run's end cancels it", func(t *testing.T) {
			// An agent on plain REST, without the client: bob may not read the shared channel.
			th := w.in.owner.mustCreateThread(t, w.shared.ID, uniqueName("ask"), "for the raw agent").Thread.ID
			_, bc, _ := w.mustPostingAgent(t, "rawasker")
			postedMessage(t, w.alice, th, "@rawasker hello")
			var inv event
			deadline := time.Now().Add(15 * time.Second)
			for inv.Type == "" {
				var p struct {
					Events []event `json:"events"`
				}
				bc.do(t, http.MethodGet, api("agents", "me", "events")+"?wait=1s", nil).want(t, http.StatusOK).decode(t, &p)
				for _, e := range p.Events {
					if e.Type == "agent.invocation" {
						inv = e
					}
				}
				if time.Now().After(deadline) {
					t.Fatal("no invocation within 15s")
				}
			}
			runID, tok := inv.Data["run_id"].(string), inv.Data["invocation_token"].(string)
			hdr := header("Invocation-Token", tok)
			bc.do(t, http.MethodPost, api("runs", runID, "start"), nil, hdr).want(t, http.StatusOK)
			bc.do(t, http.MethodPost, api("runs", runID, "approvals"), map[string]any{"title": "x", "approver_ids": []string{w.bobU.ID}}, hdr).
				want(t, http.StatusUnprocessableEntity).wantProblem(t, "approver_invalid")
			bc.do(t, http.MethodPost, api("runs", runID, "approvals"), map[string]any{"title": strings.Repeat("t", 201)}, hdr, breaksDocument()).
				want(t, http.StatusBadRequest).wantProblem(t, "validation_failed")
			var ap approvalView
			bc.do(t, http.MethodPost, api("runs", runID, "approvals"), map[string]any{"title": "fine", "timeout_s": 60}, hdr).
				want(t, http.StatusCreated).decode(t, &ap)
			if ap.State != "pending" || ap.ApproverIDs[0] != w.aliceU.ID {
				t.Fatalf("approval %+v", ap)
			}
			var list struct {
				Items []approvalView `json:"items"`
			}
			w.alice.do(t, http.MethodGet, api("runs", runID, "approvals"), nil).want(t, http.StatusOK).decode(t, &list)
			if len(list.Items) != 1 || list.Items[0].ID != ap.ID {
				t.Fatalf("the run's pending %+v", list.Items)
			}
			bc.do(t, http.MethodPost, api("runs", runID, "finish"), map[string]any{"outcome": "succeeded"}, hdr).want(t, http.StatusOK)
			w.alice.do(t, http.MethodGet, api("approvals", ap.ID), nil).want(t, http.StatusOK).decode(t, &ap)
			if ap.State != "cancelled" {
				t.Fatalf("after the run ended %+v", ap)
			}
		})
	})
}
