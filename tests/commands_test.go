package tests

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// threadMessages reads a thread's messages, oldest first as the API pages them.
func threadMessages(tb testing.TB, c *client, th string) []map[string]any {
	tb.Helper()
	var p struct {
		Items []map[string]any `json:"items"`
	}
	c.do(tb, http.MethodGet, api("threads", th, "messages")+"?limit=200", nil).want(tb, http.StatusOK).decode(tb, &p)
	return p.Items
}

// waitFor polls until ok answers true or 15 s pass.
func waitFor(tb testing.TB, what string, ok func() bool) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			tb.Fatalf("no %s within 15s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSlashCommands: an agent declares its commands over REST; a message that starts with one
// invokes it with the command in its invocation (the Go client's inv.Command), the message
// posted like any other; two agents with one name need /name@handle, and a bare /name then
// invokes nobody, visibly.
func TestSlashCommands(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		deployer, dc, _ := w.mustPostingAgent(t, "deployer")
		shipper, sc, _ := w.mustPostingAgent(t, "shipper")

		dc.do(t, http.MethodPut, api("agents", "me", "commands"), []map[string]any{{"name": "Deploy!"}}, breaksDocument()).
			want(t, http.StatusBadRequest).wantProblem(t, "validation_failed")
		w.alice.do(t, http.MethodPut, api("agents", "me", "commands"), []map[string]any{}).want(t, http.StatusForbidden)
		var got []map[string]any
		dc.do(t, http.MethodPut, api("agents", "me", "commands"), []map[string]any{
			{"name": "deploy", "description": "Deploy a branch", "args_hint": "<env>"}, {"name": "status"}}).
			want(t, http.StatusOK).decode(t, &got)
		if len(got) != 2 || got[0]["name"] != "deploy" || got[1]["description"] != "" {
			t.Fatalf("commands %v", got)
		}
		dc.do(t, http.MethodGet, api("agents", "me", "commands"), nil).want(t, http.StatusOK).decode(t, &got)
		if len(got) != 2 || got[0]["args_hint"] != "<env>" {
			t.Fatalf("read back %v", got)
		}
		sc.do(t, http.MethodPut, api("agents", "me", "commands"), []map[string]any{{"name": "deploy"}}).want(t, http.StatusOK)
		var list struct {
			Items []map[string]any `json:"items"`
		}
		w.alice.do(t, http.MethodGet, api("channels", w.shared.ID, "commands"), nil).want(t, http.StatusOK).decode(t, &list)
		if len(list.Items) != 3 || list.Items[0]["agent_handle"] != "deployer" || list.Items[2]["agent_id"] != shipper.ID {
			t.Fatalf("the channel's commands %v", list.Items)
		}
		w.bob.do(t, http.MethodGet, api("channels", w.shared.ID, "commands"), nil).want(t, http.StatusNotFound)

		type call struct{ agent, name, args string }
		calls := make(chan call, 8)
		answer := func(handle string) func(context.Context, *botclient.Invocation) error {
			return func(ctx context.Context, inv *botclient.Invocation) error {
				if _, err := inv.Start(ctx); err != nil {
					return err
				}
				c := call{agent: handle}
				if inv.Command != nil {
					c.name, c.args = inv.Command.Name, inv.Command.Args
				}
				calls <- c
				if _, err := inv.Reply(ctx, handle+" did "+c.name); err != nil {
					return err
				}
				return inv.Finish(ctx, botclient.Succeeded, nil)
			}
		}
		runAgent(t, botclient.NewAgent(w.in.srv.public, deployer.Token), answer("deployer"))
		runAgent(t, botclient.NewAgent(w.in.srv.public, shipper.Token), answer("shipper"))
		next := func() call {
			t.Helper()
			select {
			case c := <-calls:
				return c
			case <-time.After(15 * time.Second):
				t.Fatal("no invocation within 15s")
			}
			return call{}
		}

		th := w.sharedTh.Thread.ID
		if _, state := postedMessage(t, w.alice, th, "/status of main"); state != "triggered" {
			t.Fatalf("/status: %v", state)
		}
		if c := next(); c != (call{"deployer", "status", "of main"}) {
			t.Fatalf("/status reached %+v", c)
		}
		amb, state := postedMessage(t, w.alice, th, "/deploy prod")
		if state != "command_ambiguous" {
			t.Fatalf("/deploy with two agents: %v", state)
		}
		// Each agent that could have answered has its entry, so neither is dropped without a word.
		ambTriggers := triggersOf(t, w.alice.do(t, http.MethodGet, api("messages", amb), nil).want(t, http.StatusOK).obj())
		if len(ambTriggers) != 2 || ambTriggers[0][1] != "command_ambiguous" || ambTriggers[1][1] != "command_ambiguous" ||
			!slices.ContainsFunc(ambTriggers, func(e [3]any) bool { return e[0] == shipper.ID }) {
			t.Fatalf("/deploy with two agents: triggers %v", ambTriggers)
		}
		if _, state := postedMessage(t, w.alice, th, "/deploy@shipper prod"); state != "triggered" {
			t.Fatalf("/deploy@shipper: %v", state)
		}
		if c := next(); c != (call{"shipper", "deploy", "prod"}) {
			t.Fatalf("/deploy@shipper reached %+v", c)
		}
		if _, state := postedMessage(t, w.alice, th, "/nothing here"); state != nil {
			t.Fatalf("an unknown command has the state %v", state)
		}
		select {
		case c := <-calls:
			t.Fatalf("an ambiguous or unknown command invoked %+v", c)
		case <-time.After(300 * time.Millisecond):
		}
	})
}

// TestAgentHandoff: an agent with invoke hands the thread to another by mentioning it in its
// answer, one level deeper each time; two agents that mention each other in every answer stop
// at runs.max_handoff_depth, with handoff_depth_exceeded on the last answer.
func TestAgentHandoff(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng, "--set", "runs.max_handoff_depth=2")
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		ping, _ := w.in.mustCreateAgent(t, "ping")
		pongA, _ := w.in.mustCreateAgent(t, "pongbot")
		for _, a := range []agent{ping, pongA} {
			w.in.owner.mustGrant(t, w.shared.ID, a.ID, "invoke")
		}
		volley := func(other string) func(context.Context, *botclient.Invocation) error {
			return func(ctx context.Context, inv *botclient.Invocation) error {
				if _, err := inv.Start(ctx); err != nil {
					return err
				}
				if _, err := inv.Reply(ctx, "@"+other+" your turn"); err != nil {
					return err
				}
				return inv.Finish(ctx, botclient.Succeeded, nil)
			}
		}
		runAgent(t, botclient.NewAgent(w.in.srv.public, ping.Token), volley("pongbot"))
		runAgent(t, botclient.NewAgent(w.in.srv.public, pongA.Token), volley("ping"))

		th := w.in.owner.mustCreateThread(t, w.shared.ID, "Volley", "a thread for the volley").Thread.ID
		postedMessage(t, w.alice, th, "@ping serve")
		var last map[string]any
		waitFor(t, "answer with handoff_depth_exceeded", func() bool {
			for _, m := range threadMessages(t, w.alice, th) {
				if m["trigger_state"] == "handoff_depth_exceeded" {
					last = m
					return true
				}
			}
			return false
		})
		if tr := triggersOf(t, last); len(tr) != 1 || tr[0][1] != "handoff_depth_exceeded" || tr[0][2] != nil {
			t.Fatalf("the last answer's triggers %v", tr)
		}
		var runs struct {
			Items []struct {
				ID      string `json:"id"`
				AgentID string `json:"agent_id"`
				Depth   int    `json:"depth"`
				Status  string `json:"status"`
			} `json:"items"`
		}
		w.alice.do(t, http.MethodGet, api("threads", th, "runs"), nil).want(t, http.StatusOK).decode(t, &runs)
		if len(runs.Items) != 3 {
			t.Fatalf("%d runs, want 3 (depth 0, 1, 2)", len(runs.Items))
		}
		for i, r := range runs.Items {
			want := []string{ping.ID, pongA.ID, ping.ID}[i]
			if r.Depth != i || r.AgentID != want {
				t.Fatalf("run %d: %+v", i, r)
			}
		}
		if last["run_id"] != runs.Items[2].ID || !strings.Contains(last["content"].(string), "@pongbot") {
			t.Fatalf("the stopped answer %v", last)
		}
	})
}

// TestBudgets: a run's cumulative usage, reported with its patches, counts against the agent's
// budget: at 80 % the owner gets agent.budget_warning once, at the cap the running run is asked
// to stop (run.cancel_requested with budget_exhausted, which the Go client's handler sees as its
// context's cancel) and the agent's next invocation is refused, visibly.
func TestBudgets(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		spender, _, _ := w.mustPostingAgent(t, "spender")

		w.alice.do(t, http.MethodPut, api("agents", spender.ID, "budget"), map[string]any{"period": "day", "max_tokens": 100}).
			want(t, http.StatusForbidden)
		w.in.owner.do(t, http.MethodPut, api("agents", spender.ID, "budget"), map[string]any{"period": "week", "max_tokens": 100}, breaksDocument()).
			want(t, http.StatusBadRequest).wantProblem(t, "validation_failed")
		w.in.owner.do(t, http.MethodDelete, api("agents", spender.ID, "budget"), nil).want(t, http.StatusNotFound)
		view := w.in.owner.do(t, http.MethodPut, api("agents", spender.ID, "budget"), map[string]any{"period": "day", "max_tokens": 100}).
			want(t, http.StatusOK).obj()
		if b, _ := view["budget"].(map[string]any); b == nil || b["max_tokens"] != 100.0 || b["max_cost_usd"] != nil {
			t.Fatalf("budget %v", view)
		}
		ownerStart := w.in.owner.mustHead(t)

		cause := make(chan error, 1)
		runAgent(t, botclient.NewAgent(w.in.srv.public, spender.Token), func(ctx context.Context, inv *botclient.Invocation) error {
			if _, err := inv.Start(ctx); err != nil {
				return err
			}
			for _, u := range []botclient.RunUsage{{InputTokens: 70, OutputTokens: 15, CostUSD: 0.01}, {InputTokens: 90, OutputTokens: 10, CostUSD: 0.02}} {
				// The second report reaches the cap: the cancel request may cancel ctx before
				// its answer is read.
				if _, err := inv.Update(ctx, botclient.RunPatch{Usage: &u}); err != nil && ctx.Err() == nil {
					cause <- err
					return err
				}
			}
			select {
			case <-ctx.Done():
				cause <- context.Cause(ctx)
				return ctx.Err()
			case <-time.After(15 * time.Second):
				cause <- errors.New("no cancel within 15s")
				return errors.New("no cancel")
			}
		})
		mid, _ := postedMessage(t, w.alice, w.sharedTh.Thread.ID, "@spender spend")
		select {
		case err := <-cause:
			if !errors.Is(err, botclient.ErrBudgetExhausted) || !errors.Is(err, botclient.ErrCancelRequested) {
				t.Fatalf("the handler's context ended with %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the handler did not end")
		}
		var runID string
		waitFor(t, "the cancelled run", func() bool {
			evs, _ := w.in.owner.mustAllEvents(t, ownerStart)
			for _, e := range evs {
				if e.Type == "run.state_changed" && e.Data["trigger_message_id"] == mid && e.Data["status"] == "cancelled" {
					runID, _ = e.Data["id"].(string)
					return true
				}
			}
			return false
		})
		evs, _ := w.in.owner.mustAllEvents(t, ownerStart)
		warnings := 0
		for _, e := range evs {
			if e.Type == "agent.budget_warning" {
				warnings++
				if e.Data["agent_id"] != spender.ID || e.Data["max_tokens"] != 100.0 {
					t.Fatalf("warning %v", e.Data)
				}
			}
		}
		if warnings != 1 {
			t.Fatalf("%d budget warnings, want 1", warnings)
		}
		run := w.alice.do(t, http.MethodGet, api("runs", runID), nil).want(t, http.StatusOK).obj()
		if u, _ := run["usage"].(map[string]any); u["input_tokens"] != 90.0 || u["output_tokens"] != 15.0 || u["cost_usd"] != 0.02 {
			t.Fatalf("the run's usage %v", run["usage"])
		}
		view = w.in.owner.do(t, http.MethodGet, api("agents", spender.ID, "budget"), nil).want(t, http.StatusOK).obj()
		if day, _ := view["day"].(map[string]any); day["input_tokens"] != 90.0 || day["output_tokens"] != 15.0 || day["warned_at"] == nil {
			t.Fatalf("the day's usage %v", view["day"])
		}
		capped, state := postedMessage(t, w.alice, w.sharedTh.Thread.ID, "@spender more")
		if state != "budget_exhausted" {
			t.Fatalf("at the cap: %v", state)
		}
		if tr := triggersOf(t, w.alice.do(t, http.MethodGet, api("messages", capped), nil).want(t, http.StatusOK).obj()); len(tr) != 1 ||
			tr[0] != [3]any{spender.ID, "budget_exhausted", nil} {
			t.Fatalf("at the cap: triggers %v", tr)
		}
		w.in.owner.do(t, http.MethodDelete, api("agents", spender.ID, "budget"), nil).want(t, http.StatusNoContent)
	})
}
