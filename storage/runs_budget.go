package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// The budgets of agents and their usage counters (migration 0022): agent_budgets holds an
// owner's cap, agent_usage one row per agent and period that each patch reporting usage adds
// to, in the patch's Unit of Work. Costs are kept in millionths of a US dollar (BIGINT), which
// both engines sum exactly.

// Budget implements runs.Store.
func (s *RunStore) Budget(ctx context.Context, agentID kernel.ID) (runs.Budget, bool, error) {
	var b runs.Budget
	var period, updated string
	var maxTokens, maxCost sql.NullInt64
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT agent_id, period, max_tokens, max_cost_micros, updated_by, updated_at
		FROM agent_budgets WHERE agent_id = ?`, string(agentID)).Scan(&b.AgentID, &period, &maxTokens, &maxCost, &b.UpdatedBy, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return runs.Budget{}, false, nil
	}
	if err != nil {
		return runs.Budget{}, false, s.db.mapErr(err, "budget")
	}
	b.Period, b.UpdatedAt = runs.Period(period), parseTime(updated)
	if maxTokens.Valid {
		b.MaxTokens = &maxTokens.Int64
	}
	if maxCost.Valid {
		usd := runs.FromMicros(maxCost.Int64)
		b.MaxCostUSD = &usd
	}
	return b, true, nil
}

// SetBudget implements runs.Store.
func (s *RunStore) SetBudget(ctx context.Context, b runs.Budget) error {
	var maxTokens, maxCost any
	if b.MaxTokens != nil {
		maxTokens = *b.MaxTokens
	}
	if b.MaxCostUSD != nil {
		maxCost = runs.Micros(*b.MaxCostUSD)
	}
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO agent_budgets (agent_id, period, max_tokens, max_cost_micros, updated_by, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (agent_id) DO UPDATE SET period = excluded.period, max_tokens = excluded.max_tokens,
			max_cost_micros = excluded.max_cost_micros, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
		string(b.AgentID), string(b.Period), maxTokens, maxCost, string(b.UpdatedBy), fmtTime(b.UpdatedAt))
	return s.db.mapErr(err, "budget")
}

// DeleteBudget implements runs.Store.
func (s *RunStore) DeleteBudget(ctx context.Context, agentID kernel.ID) (bool, error) {
	res, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM agent_budgets WHERE agent_id = ?`, string(agentID))
	if err != nil {
		return false, s.db.mapErr(err, "budget")
	}
	n, err := res.RowsAffected()
	return n > 0, s.db.mapErr(err, "budget")
}

// PeriodUsage implements runs.Store.
func (s *RunStore) PeriodUsage(ctx context.Context, agentID kernel.ID, p runs.Period, start string) (runs.PeriodUsage, error) {
	u := runs.PeriodUsage{PeriodStart: start}
	var cost int64
	var warned sql.NullString
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT input_tokens, output_tokens, cost_micros, warned_at FROM agent_usage
		WHERE agent_id = ? AND period = ? AND period_start = ?`, string(agentID), string(p), start).
		Scan(&u.InputTokens, &u.OutputTokens, &cost, &warned)
	if errors.Is(err, sql.ErrNoRows) {
		return u, nil
	}
	if err != nil {
		return u, s.db.mapErr(err, "usage")
	}
	u.CostUSD, u.WarnedAt = runs.FromMicros(cost), parseNullTime(warned)
	return u, nil
}

// AddUsage implements runs.Store: one upsert per period.
func (s *RunStore) AddUsage(ctx context.Context, agentID kernel.ID, starts map[runs.Period]string, delta runs.Usage) error {
	cost := runs.Micros(delta.CostUSD)
	for _, p := range []runs.Period{runs.PeriodDay, runs.PeriodMonth} {
		start, ok := starts[p]
		if !ok {
			continue
		}
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO agent_usage (agent_id, period, period_start, input_tokens, output_tokens, cost_micros)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (agent_id, period, period_start) DO UPDATE SET input_tokens = agent_usage.input_tokens + excluded.input_tokens,
				output_tokens = agent_usage.output_tokens + excluded.output_tokens, cost_micros = agent_usage.cost_micros + excluded.cost_micros`,
			string(agentID), string(p), start, delta.InputTokens, delta.OutputTokens, cost)
		if err != nil {
			return s.db.mapErr(err, "usage")
		}
	}
	return nil
}

// MarkBudgetWarned implements runs.Store: conditional on no warning yet, so that of two patches
// crossing 80 % at once one warns.
func (s *RunStore) MarkBudgetWarned(ctx context.Context, agentID kernel.ID, p runs.Period, start string, at time.Time) (bool, error) {
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE agent_usage SET warned_at = ?
		WHERE agent_id = ? AND period = ? AND period_start = ? AND warned_at IS NULL`, fmtTime(at), string(agentID), string(p), start)
	if err != nil {
		return false, s.db.mapErr(err, "usage")
	}
	n, err := res.RowsAffected()
	return n > 0, s.db.mapErr(err, "usage")
}

// Owners implements runs.Agents.
func (s *AgentStore) Owners(ctx context.Context) ([]kernel.ID, error) {
	return s.ids(ctx, "principals", `SELECT id FROM principals WHERE is_owner = 1 AND status = 'active' ORDER BY id`)
}

// ids reads the one id column of q's rows; what names the rows in an error.
func (s *AgentStore) ids(ctx context.Context, what, q string, args ...any) ([]kernel.ID, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.db.mapErr(err, what)
	}
	defer rows.Close()
	var out []kernel.ID
	for rows.Next() {
		var id kernel.ID
		if err := rows.Scan(&id); err != nil {
			return nil, s.db.mapErr(err, what)
		}
		out = append(out, id)
	}
	return out, s.db.mapErr(rows.Err(), what)
}
