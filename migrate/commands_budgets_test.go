package migrate

import (
	"context"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// commandsBudgetsVersion is the migration of slash commands, handoff depth and budgets.
const commandsBudgetsVersion = 22

// The migration of slash commands, handoff depth and budgets keeps the runs there were, at depth
// 0 with no usage, and takes an agent's commands (one per name), a budget (day or month only)
// and its usage counters.
func TestCommandsBudgetsMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		fixture := append(append([]string{}, chatFixture...),
			`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at)
				VALUES ('p2', 'agent', 'bot', 'bot', 'Bot', '`+fixtureAt+`', '`+fixtureAt+`')`,
			`INSERT INTO agents (principal_id, created_by, created_at) VALUES ('p2', 'p1', '`+fixtureAt+`')`,
			`INSERT INTO runs (id, agent_id, thread_id, channel_id, space_id, invoked_by, status, version, document,
				created_at, last_activity_at, updated_at)
				VALUES ('r1', 'p2', 't1', 'c1', 's1', 'p1', 'running', 0, '{}', '`+fixtureAt+`', '`+fixtureAt+`', '`+fixtureAt+`')`)
		w, r := across(t, eng, commandsBudgetsVersion, fixture...)
		var depth, in, out, cost int64
		if err := r.QueryRowContext(ctx, `SELECT depth, input_tokens, output_tokens, cost_micros FROM runs WHERE id = 'r1'`).
			Scan(&depth, &in, &out, &cost); err != nil || depth != 0 || in != 0 || out != 0 || cost != 0 {
			t.Fatalf("the run after the migration: %d %d %d %d, %v", depth, in, out, cost, err)
		}
		exec := func(q string) error { _, err := w.ExecContext(ctx, q); return err }
		if err := exec(`INSERT INTO agent_commands (agent_id, name, position) VALUES ('p2', 'deploy', 0)`); err != nil {
			t.Fatal(err)
		}
		if exec(`INSERT INTO agent_commands (agent_id, name, position) VALUES ('p2', 'deploy', 1)`) == nil {
			t.Fatal("a second command of the same name was stored")
		}
		if exec(`INSERT INTO agent_commands (agent_id, name, position) VALUES ('p9', 'x', 0)`) == nil {
			t.Fatal("a command of no agent was stored")
		}
		if exec(`INSERT INTO agent_budgets (agent_id, period, max_tokens, updated_by, updated_at) VALUES ('p2', 'week', 10, 'p1', '`+fixtureAt+`')`) == nil {
			t.Fatal("a weekly budget was stored")
		}
		if err := exec(`INSERT INTO agent_budgets (agent_id, period, max_tokens, updated_by, updated_at) VALUES ('p2', 'day', 10, 'p1', '` + fixtureAt + `')`); err != nil {
			t.Fatal(err)
		}
		if err := exec(`INSERT INTO agent_usage (agent_id, period, period_start, input_tokens) VALUES ('p2', 'day', '2026-03-01', 9000000000)`); err != nil {
			t.Fatal(err)
		}
		if err := r.QueryRowContext(ctx, `SELECT input_tokens FROM agent_usage WHERE agent_id = 'p2'`).Scan(&in); err != nil || in != 9000000000 {
			t.Fatalf("a counter beyond 32 bits reads %d, %v", in, err)
		}
	})
}
