package storage_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage/storetest"
)

func (e *runEnv) agent(t *testing.T, handle string, level authz.Level) agents.Agent {
	t.Helper()
	a, _, err := e.agents.Create(bg, e.olga, agents.NewAgent{Handle: handle, DisplayName: handle})
	if err != nil {
		t.Fatal(err)
	}
	e.grant(t, a.ID, level)
	return a
}

func agentActor(a agents.Agent) kernel.Actor {
	return kernel.Actor{ID: a.ID, Kind: kernel.KindAgent, Handle: a.Handle}
}

func (e *runEnv) invocations(t *testing.T, after int64) []runs.Invocation {
	t.Helper()
	evs, err := e.db.EventsAfter(bg, after, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []runs.Invocation
	for _, ev := range evs {
		if ev.Type == runs.EvAgentInvocation.Name {
			var inv runs.Invocation
			if err := json.Unmarshal(ev.Payload, &inv); err != nil {
				t.Fatal(err)
			}
			out = append(out, inv)
		}
	}
	return out
}

// addUsage counts usage for agent as a patch's Unit of Work does.
func (e *runEnv) addUsage(t *testing.T, agent kernel.ID, starts map[runs.Period]string, u runs.Usage) {
	t.Helper()
	if err := e.db.Do(bg, func(ctx context.Context) error { return e.runs.AddUsage(ctx, agent, starts, u) }); err != nil {
		t.Fatal(err)
	}
}

func state(m messaging.Message) string {
	if m.TriggerState == nil {
		return ""
	}
	return *m.TriggerState
}

func TestSlashCommandsStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("an agent replaces its whole set, kept in its order", func(t *testing.T) {
			e := newRunEnv(t, eng)
			echo := agentActor(e.echo)
			if _, err := e.agents.SetCommands(bg, echo, []agents.Command{{Name: "b", Description: "B — ü"}, {Name: "a", ArgsHint: "<x>"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.agents.SetCommands(bg, echo, []agents.Command{{Name: "zeta"}, {Name: "deploy", Description: " ships ", ArgsHint: "<env>"}}); err != nil {
				t.Fatal(err)
			}
			got, err := e.agents.Commands(bg, echo)
			if err != nil || len(got) != 2 || got[0].Name != "zeta" || got[1] != (agents.Command{Name: "deploy", Description: "ships", ArgsHint: "<env>"}) {
				t.Fatalf("commands %+v (%v)", got, err)
			}
			if _, err := e.agents.SetCommands(bg, e.pia, []agents.Command{{Name: "x"}}); !kernel.IsCode(err, kernel.CodeForbidden) {
				t.Fatalf("a person set commands: %v", err)
			}
			for _, bad := range [][]agents.Command{{{Name: "Deploy"}}, {{Name: "a"}, {Name: "a"}}, {{Name: strings.Repeat("x", 33)}},
				{{Name: "ok", Description: strings.Repeat("d", 201)}}, {{Name: "ok", ArgsHint: strings.Repeat("h", 101)}}} {
				if _, err := e.agents.SetCommands(bg, echo, bad); !kernel.IsCode(err, kernel.CodeValidation) {
					t.Errorf("%+v: %v", bad, err)
				}
			}
			if got, _ := e.agents.Commands(bg, echo); len(got) != 2 {
				t.Fatalf("a refused set changed the commands: %+v", got)
			}
		})

		t.Run("a slash command invokes its agent with the command, and the message is posted as any other", func(t *testing.T) {
			e := newRunEnv(t, eng)
			if _, err := e.agents.SetCommands(bg, agentActor(e.echo), []agents.Command{{Name: "summarise"}}); err != nil {
				t.Fatal(err)
			}
			head := e.db.Head()
			m := e.post(t, e.pia, "/summarise the last   week\nplease")
			if state(m) != "triggered" || m.Content != "/summarise the last   week\nplease" {
				t.Fatalf("message %+v", m)
			}
			invs := e.invocations(t, head)
			if len(invs) != 1 || invs[0].AgentID != e.echo.ID || invs[0].Command == nil ||
				*invs[0].Command != (runs.InvocationCommand{Name: "summarise", Args: "the last   week\nplease"}) {
				t.Fatalf("invocations %+v", invs)
			}
			if m := e.post(t, e.pia, "/unknown thing"); state(m) != "" {
				t.Fatalf("an unknown command has the state %q", state(m))
			}
			if m := e.post(t, e.paul, "/summarise"); state(m) != "no_invoke_right" {
				t.Fatalf("a command without invoke has the state %q", state(m))
			}
			head = e.db.Head()
			e.post(t, e.pia, "@echo hello")
			if invs := e.invocations(t, head); len(invs) != 1 || invs[0].Command != nil {
				t.Fatalf("a mention's invocation %+v", invs)
			}
		})

		t.Run("two agents with one name: /name is ambiguous and invokes nobody, /name@handle invokes the one named", func(t *testing.T) {
			e := newRunEnv(t, eng)
			other := e.agent(t, "other", authz.LevelView)
			for _, a := range []agents.Agent{e.echo, other} {
				if _, err := e.agents.SetCommands(bg, agentActor(a), []agents.Command{{Name: "deploy"}}); err != nil {
					t.Fatal(err)
				}
			}
			head := e.db.Head()
			if m := e.post(t, e.pia, "/deploy prod"); state(m) != "command_ambiguous" {
				t.Fatalf("state %q", state(m))
			}
			if invs := e.invocations(t, head); len(invs) != 0 {
				t.Fatalf("an ambiguous command invoked %+v", invs)
			}
			m := e.post(t, e.pia, "/deploy@Other prod")
			invs := e.invocations(t, head)
			if state(m) != "triggered" || len(invs) != 1 || invs[0].AgentID != other.ID || invs[0].Command.Args != "prod" {
				t.Fatalf("state %q, invocations %+v", state(m), invs)
			}
			list, err := e.svc.ChannelCommands(bg, e.pia, e.channel.ID)
			if err != nil || len(list) != 2 || list[0].AgentHandle != "echo" || list[1].AgentHandle != "other" {
				t.Fatalf("channel commands %+v (%v)", list, err)
			}
			if list, err := e.svc.ChannelCommands(bg, e.paul, e.channel.ID); err != nil || len(list) != 0 {
				t.Fatalf("one without invoke lists %+v (%v)", list, err)
			}
			if _, err := e.agents.Disable(bg, e.olga, other.ID); err != nil {
				t.Fatal(err)
			}
			if m := e.post(t, e.pia, "/deploy again"); state(m) != "triggered" {
				t.Fatalf("with one holder left active, state %q", state(m))
			}
		})
	})
}

func TestHandoffDepthStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("a mention of a disabled agent is no silent drop: the message says agent_disabled", func(t *testing.T) {
			e := newRunEnv(t, eng)
			if _, err := e.agents.Disable(bg, e.olga, e.echo.ID); err != nil {
				t.Fatal(err)
			}
			if m := e.post(t, e.pia, "@echo are you there?"); state(m) != "agent_disabled" || len(m.Mentions) != 0 {
				t.Fatalf("state %q, mentions %v", state(m), m.Mentions)
			}
			if m := e.post(t, e.pia, "@nobody-here hello"); state(m) != "" {
				t.Fatalf("an unknown handle has the state %q", state(m))
			}
		})

		t.Run("an agent's answer invokes the agent it mentions one level deeper, up to the maximum depth", func(t *testing.T) {
			e := newRunEnv(t, eng)
			e.grant(t, e.echo.ID, authz.LevelInvoke)
			parrot := e.agent(t, "parrot", authz.LevelInvoke)
			m := e.post(t, e.pia, "@echo start")
			r := e.threadRuns(t, m.ThreadID)[0]
			if r.Depth != 0 {
				t.Fatalf("a person's run has depth %d", r.Depth)
			}
			agentsByTurn := []agents.Agent{e.echo, parrot}
			for depth := 1; depth <= runs.DefaultConfig().MaxHandoffDepth+1; depth++ {
				author, next := agentsByTurn[(depth+1)%2], agentsByTurn[depth%2]
				ans, _, err := e.msgs.CreateMessage(bg, agentActor(author), m.ThreadID, messaging.NewMessage{Content: "@" + next.Handle + " your turn", RunID: r.ID})
				if err != nil {
					t.Fatal(err)
				}
				rs := e.threadRuns(t, m.ThreadID)
				if depth > runs.DefaultConfig().MaxHandoffDepth {
					if state(ans) != "handoff_depth_exceeded" || len(rs) != depth {
						t.Fatalf("at depth %d: state %q, %d runs", depth, state(ans), len(rs))
					}
					break
				}
				r = rs[len(rs)-1]
				if state(ans) != "triggered" || r.Depth != depth || r.AgentID != next.ID {
					t.Fatalf("at depth %d: state %q, run %+v", depth, state(ans), r.Summary)
				}
			}
		})
	})
}

func TestBudgetStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("an owner sets, reads and removes a budget; others may not", func(t *testing.T) {
			e := newRunEnv(t, eng)
			max := int64(1000)
			v, err := e.svc.SetBudget(bg, e.olga, e.echo.ID, runs.NewBudget{Period: runs.PeriodDay, MaxTokens: &max})
			if err != nil || v.Budget == nil || *v.Budget.MaxTokens != 1000 || v.Budget.MaxCostUSD != nil || v.Day.PeriodStart != "2026-03-01" ||
				v.Month.PeriodStart != "2026-03" {
				t.Fatalf("set %+v (%v)", v, err)
			}
			usd := 2.5
			if v, err = e.svc.SetBudget(bg, e.olga, e.echo.ID, runs.NewBudget{Period: runs.PeriodMonth, MaxCostUSD: &usd}); err != nil ||
				v.Budget.Period != runs.PeriodMonth || v.Budget.MaxTokens != nil || *v.Budget.MaxCostUSD != 2.5 {
				t.Fatalf("replaced %+v (%v)", v, err)
			}
			if _, err := e.svc.GetBudget(bg, e.pia, e.echo.ID); !kernel.IsCode(err, kernel.CodeForbidden) {
				t.Fatalf("a person read the budget: %v", err)
			}
			if _, err := e.svc.SetBudget(bg, e.olga, e.echo.ID, runs.NewBudget{Period: "week", MaxCostUSD: &usd}); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Fatalf("a week: %v", err)
			}
			if _, err := e.svc.SetBudget(bg, e.olga, e.echo.ID, runs.NewBudget{Period: runs.PeriodDay}); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Fatalf("no cap: %v", err)
			}
			if _, err := e.svc.SetBudget(bg, e.olga, e.pia.ID, runs.NewBudget{Period: runs.PeriodDay, MaxCostUSD: &usd}); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("a person's budget: %v", err)
			}
			if err := e.svc.DeleteBudget(bg, e.olga, e.echo.ID); err != nil {
				t.Fatal(err)
			}
			if err := e.svc.DeleteBudget(bg, e.olga, e.echo.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("a second delete: %v", err)
			}
			if v, err := e.svc.GetBudget(bg, e.olga, e.echo.ID); err != nil || v.Budget != nil {
				t.Fatalf("after delete %+v (%v)", v, err)
			}
		})

		t.Run("usage adds up per agent and period, costs exactly, and the warning is stamped once", func(t *testing.T) {
			e := newRunEnv(t, eng)
			starts := map[runs.Period]string{runs.PeriodDay: "2026-03-01", runs.PeriodMonth: "2026-03"}
			for range 3 {
				e.addUsage(t, e.echo.ID, starts, runs.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 0.1})
			}
			e.addUsage(t, e.echo.ID, map[runs.Period]string{runs.PeriodDay: "2026-03-02", runs.PeriodMonth: "2026-03"}, runs.Usage{InputTokens: 1})
			day, err := e.runs.PeriodUsage(bg, e.echo.ID, runs.PeriodDay, "2026-03-01")
			if err != nil || day.Usage != (runs.Usage{InputTokens: 30, OutputTokens: 15, CostUSD: 0.3}) || day.WarnedAt != nil {
				t.Fatalf("day %+v (%v)", day, err)
			}
			month, _ := e.runs.PeriodUsage(bg, e.echo.ID, runs.PeriodMonth, "2026-03")
			if month.InputTokens != 31 {
				t.Fatalf("month %+v", month)
			}
			var first, again bool
			err = e.db.Do(bg, func(ctx context.Context) error {
				first, err = e.runs.MarkBudgetWarned(ctx, e.echo.ID, runs.PeriodDay, "2026-03-01", e.clock.Now())
				return err
			})
			err2 := e.db.Do(bg, func(ctx context.Context) error {
				again, err = e.runs.MarkBudgetWarned(ctx, e.echo.ID, runs.PeriodDay, "2026-03-01", e.clock.Now())
				return err
			})
			if err != nil || err2 != nil || !first || again {
				t.Fatalf("warned %v then %v (%v, %v)", first, again, err, err2)
			}
		})

		t.Run("an agent whose budget is used up is refused at the trigger, visibly", func(t *testing.T) {
			e := newRunEnv(t, eng)
			max := int64(100)
			if _, err := e.svc.SetBudget(bg, e.olga, e.echo.ID, runs.NewBudget{Period: runs.PeriodDay, MaxTokens: &max}); err != nil {
				t.Fatal(err)
			}
			if m := e.post(t, e.pia, "@echo one"); state(m) != "triggered" {
				t.Fatalf("under the cap: %q", state(m))
			}
			starts := map[runs.Period]string{runs.PeriodDay: "2026-03-01", runs.PeriodMonth: "2026-03"}
			e.addUsage(t, e.echo.ID, starts, runs.Usage{InputTokens: 60, OutputTokens: 40})
			m := e.post(t, e.pia, "@echo two")
			if state(m) != "budget_exhausted" || len(e.threadRuns(t, m.ThreadID)) != 1 {
				t.Fatalf("at the cap: %q", state(m))
			}
		})
	})
}
