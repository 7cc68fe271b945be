package runs_test

import (
	"context"
	"encoding/json"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

func (f *fixture) setBudget(tb testing.TB, agent kernel.ID, b runs.NewBudget) {
	tb.Helper()
	f.do(tb, func(ctx context.Context) error {
		return f.store.SetBudget(ctx, runs.Budget{AgentID: agent, Period: b.Period, MaxTokens: b.MaxTokens, MaxCostUSD: b.MaxCostUSD,
			UpdatedBy: owner.ID, UpdatedAt: f.clock.Now()})
	})
}

func eventsOf(evs []kernel.LoggedEvent, typ string) []kernel.LoggedEvent {
	var out []kernel.LoggedEvent
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func TestUsageAndBudget(t *testing.T) {
	t.Run("a patch's usage is cumulative: stored on the run, a lower figure lowers nothing and counts nothing", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		got, err := f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 1, Usage: &runs.Usage{InputTokens: 40, OutputTokens: 10, CostUSD: 0.25}})
		if err != nil || got.Usage != (runs.Usage{InputTokens: 40, OutputTokens: 10, CostUSD: 0.25}) {
			t.Fatalf("patch 1: %+v, %v", got.Usage, err)
		}
		got, err = f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 2, Usage: &runs.Usage{InputTokens: 30, OutputTokens: 20, CostUSD: 0.1}})
		if err != nil || got.Usage != (runs.Usage{InputTokens: 40, OutputTokens: 20, CostUSD: 0.25}) {
			t.Fatalf("patch 2: %+v, %v", got.Usage, err)
		}
		if _, err := f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 3}); err != nil {
			t.Fatal(err)
		}
		if stored := f.run(t, r.ID); stored.Usage != got.Usage {
			t.Fatalf("a patch without usage changed it: %+v", stored.Usage)
		}
		day, err := f.store.PeriodUsage(bg, echo, runs.PeriodDay, "2026-03-01")
		if err != nil || day.Usage != (runs.Usage{InputTokens: 40, OutputTokens: 20, CostUSD: 0.25}) {
			t.Fatalf("the day's counter %+v (%v)", day, err)
		}
		if month, _ := f.store.PeriodUsage(bg, echo, runs.PeriodMonth, "2026-03"); month.Usage != day.Usage {
			t.Fatalf("the month's counter %+v", month)
		}
		if _, err := f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 4, Usage: &runs.Usage{InputTokens: -1}}); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("a negative usage: %v", err)
		}
	})

	t.Run("at 80 % the owners are warned once in the period; at the cap the agent's runs are asked to stop and its next invocation refused", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		f.post(t, invoker, f.message(invoker, echo), false) // a second run, still queued
		max := int64(100)
		f.setBudget(t, echo, runs.NewBudget{Period: runs.PeriodDay, MaxTokens: &max})
		n := len(f.events(t))
		patch := func(v int, in int64) {
			t.Helper()
			if _, err := f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: v, Usage: &runs.Usage{InputTokens: in}}); err != nil {
				t.Fatalf("patch %d: %v", v, err)
			}
		}
		patch(1, 79)
		if w := eventsOf(f.eventsSince(t, n), runs.EvAgentBudgetWarning.Name); len(w) != 0 {
			t.Fatalf("warned below 80 %%: %+v", w)
		}
		patch(2, 80)
		patch(3, 90)
		warnings := eventsOf(f.eventsSince(t, n), runs.EvAgentBudgetWarning.Name)
		if len(warnings) != 1 || warnings[0].Scope != (kernel.Scope{PrincipalID: owner.ID}) {
			t.Fatalf("warnings %+v", warnings)
		}
		var w runs.BudgetWarning
		if err := json.Unmarshal(warnings[0].Payload, &w); err != nil || w.AgentID != echo || w.Usage.InputTokens != 80 || *w.MaxTokens != 100 ||
			w.PeriodStart != "2026-03-01" {
			t.Fatalf("warning %s (%v)", warnings[0].Payload, err)
		}
		if cancels := eventsOf(f.eventsSince(t, n), runs.EvRunCancelRequested.Name); len(cancels) != 0 {
			t.Fatalf("cancelled below the cap: %d", len(cancels))
		}
		patch(4, 100)
		cancels := eventsOf(f.eventsSince(t, n), runs.EvRunCancelRequested.Name)
		if len(cancels) != 2 {
			t.Fatalf("%d cancel requests, want both unended runs", len(cancels))
		}
		for _, c := range cancels {
			var req runs.CancelRequest
			if err := json.Unmarshal(c.Payload, &req); err != nil || req.Reason == nil || *req.Reason != "budget_exhausted" {
				t.Fatalf("cancel request %s", c.Payload)
			}
		}
		if stored := f.run(t, r.ID); stored.CancelRequestedAt == nil || stored.Status != runs.StatusRunning {
			t.Fatalf("the running run %+v", stored.Summary)
		}
		for _, other := range f.allRuns(t) {
			if other.ID != r.ID && other.Status != runs.StatusCancelled {
				t.Fatalf("the queued run is %s, want cancelled at once", other.Status)
			}
		}
		patch(5, 120)
		if again := eventsOf(f.eventsSince(t, n), runs.EvRunCancelRequested.Name); len(again) != 2 {
			t.Fatalf("a patch past the cap asked again: %d", len(again))
		}
		if state := f.post(t, invoker, f.message(invoker, echo), false); state != "budget_exhausted" {
			t.Fatalf("an invocation at the cap: %q", state)
		}
		if state := f.post(t, invoker, f.message(invoker, helper), false); state != "triggered" {
			t.Fatalf("another agent: %q", state)
		}
	})

	t.Run("a run stopped at the cap has its pending approvals cancelled, as a person's cancel does", func(t *testing.T) {
		f, r, tok := asking(t)
		a := f.ask(t, r, tok, runs.ApprovalInput{Title: "spend more"})
		if run := f.run(t, r.ID); run.Status != runs.StatusWaitingInput {
			t.Fatalf("the run is %s, want waiting_input", run.Status)
		}
		max := int64(10)
		f.setBudget(t, echo, runs.NewBudget{Period: runs.PeriodDay, MaxTokens: &max})
		if _, err := f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 1, Usage: &runs.Usage{OutputTokens: 10}}); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.svc.GetApproval(bg, invoker, a.ID); got.State != runs.ApprovalCancelled {
			t.Fatalf("the approval after the cap: %+v", got)
		}
		if run := f.run(t, r.ID); run.Status != runs.StatusRunning || run.CancelRequestedAt == nil {
			t.Fatalf("the run after the cap: %s, cancel requested %v", run.Status, run.CancelRequestedAt)
		}
	})
}
