package runs

import (
	"context"
	"math"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// Period is the span a budget caps: a UTC day or a UTC month.
type Period string

// The periods of a budget.
const (
	PeriodDay   Period = "day"
	PeriodMonth Period = "month"
)

func (p Period) valid() bool { return p == PeriodDay || p == PeriodMonth }

// Start is the key of the period that holds t: "2026-03-01" for a day, "2026-03" for a month
// (UTC).
func (p Period) Start(t time.Time) string {
	if p == PeriodMonth {
		return t.UTC().Format("2006-01")
	}
	return t.UTC().Format("2006-01-02")
}

// Budget is an owner's cap on what an agent's runs consume per period; a nil cap caps nothing of
// its kind, and at least one is set.
type Budget struct {
	AgentID    kernel.ID `json:"agent_id"`
	Period     Period    `json:"period"`
	MaxTokens  *int64    `json:"max_tokens"`
	MaxCostUSD *float64  `json:"max_cost_usd"`
	UpdatedBy  kernel.ID `json:"updated_by"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// NewBudget is the input of SetBudget.
type NewBudget struct {
	Period     Period   `json:"period"`
	MaxTokens  *int64   `json:"max_tokens"`
	MaxCostUSD *float64 `json:"max_cost_usd"`
}

func (in NewBudget) validate() error {
	switch {
	case !in.Period.valid():
		return kernel.Invalid("period", `period is "day" or "month"`)
	case in.MaxTokens == nil && in.MaxCostUSD == nil:
		return kernel.Invalid("max_tokens", "a budget sets max_tokens, max_cost_usd or both")
	case in.MaxTokens != nil && (*in.MaxTokens <= 0 || *in.MaxTokens > MaxUsageTokens):
		return kernel.Invalid("max_tokens", "max_tokens is a count from 1 to %d", int64(MaxUsageTokens))
	case in.MaxCostUSD != nil && (math.IsNaN(*in.MaxCostUSD) || *in.MaxCostUSD <= 0 || *in.MaxCostUSD > MaxUsageCostUSD):
		return kernel.Invalid("max_cost_usd", "max_cost_usd is an amount above 0 and at most %g", MaxUsageCostUSD)
	}
	return nil
}

// PeriodUsage is what an agent's runs consumed in one period, and when its owners were warned
// that it neared the cap (nil: not in this period).
type PeriodUsage struct {
	PeriodStart string `json:"period_start"`
	Usage
	WarnedAt *time.Time `json:"warned_at"`
}

// BudgetView is an agent's budget, if any, with its usage this day and this month.
type BudgetView struct {
	AgentID kernel.ID   `json:"agent_id"`
	Budget  *Budget     `json:"budget"`
	Day     PeriodUsage `json:"day"`
	Month   PeriodUsage `json:"month"`
}

// BudgetWarning is the payload of agent.budget_warning, an owner's personal event: an agent's
// usage in a period reached 80 % of a cap of its budget. It comes once per agent and period.
type BudgetWarning struct {
	AgentID     kernel.ID `json:"agent_id"`
	Period      Period    `json:"period"`
	PeriodStart string    `json:"period_start"`
	Usage       Usage     `json:"usage"`
	MaxTokens   *int64    `json:"max_tokens"`
	MaxCostUSD  *float64  `json:"max_cost_usd"`
}

// BudgetWarnPercent is the share of a cap at which the owners are warned.
const BudgetWarnPercent = 80

// reached reports whether u has used percent % of a cap of b.
func (b Budget) reached(u Usage, percent int64) bool {
	if b.MaxTokens != nil && (u.InputTokens+u.OutputTokens)*100 >= *b.MaxTokens*percent {
		return true
	}
	return b.MaxCostUSD != nil && Micros(u.CostUSD)*100 >= Micros(*b.MaxCostUSD)*percent
}

// Micros is an amount of US dollars in millionths, as the store keeps it.
func Micros(usd float64) int64 { return int64(math.Round(usd * 1e6)) }

// FromMicros is the amount in US dollars of millionths.
func FromMicros(m int64) float64 { return float64(m) / 1e6 }

// GetBudget answers an agent's budget and usage (agent.budget: owners). Errors: unauthenticated,
// forbidden, not_found (no such agent).
func (s *Service) GetBudget(ctx context.Context, actor kernel.Actor, agentID kernel.ID) (BudgetView, error) {
	if err := s.budgetAllowed(ctx, actor, agentID); err != nil {
		return BudgetView{}, err
	}
	return s.budgetView(ctx, agentID)
}

// SetBudget sets or replaces an agent's budget (agent.budget: owners) and answers it with the
// usage. A cap lowered below what was used refuses the agent's next invocations; a warning
// already given in the period is not given again. Errors: unauthenticated, forbidden, not_found,
// validation_failed.
func (s *Service) SetBudget(ctx context.Context, actor kernel.Actor, agentID kernel.ID, in NewBudget) (BudgetView, error) {
	if err := s.budgetAllowed(ctx, actor, agentID); err != nil {
		return BudgetView{}, err
	}
	if err := in.validate(); err != nil {
		return BudgetView{}, err
	}
	var out BudgetView
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		b := Budget{AgentID: agentID, Period: in.Period, MaxTokens: in.MaxTokens, MaxCostUSD: in.MaxCostUSD,
			UpdatedBy: actor.ID, UpdatedAt: s.now()}
		if err := s.store.SetBudget(ctx, b); err != nil {
			return err
		}
		var err error
		out, err = s.budgetView(ctx, agentID)
		return err
	})
	return out, err
}

// DeleteBudget removes an agent's budget (agent.budget: owners); its usage stays counted.
// Errors: unauthenticated, forbidden, not_found (no such agent, or no budget).
func (s *Service) DeleteBudget(ctx context.Context, actor kernel.Actor, agentID kernel.ID) error {
	if err := s.budgetAllowed(ctx, actor, agentID); err != nil {
		return err
	}
	return s.uow.Do(ctx, func(ctx context.Context) error {
		found, err := s.store.DeleteBudget(ctx, agentID)
		if err == nil && !found {
			err = kernel.Errorf(kernel.CodeNotFound, "the agent has no budget")
		}
		return err
	})
}

func (s *Service) budgetAllowed(ctx context.Context, actor kernel.Actor, agentID kernel.ID) error {
	if err := s.authz.Authorize(ctx, actor, ActAgentBudget, kernel.Resource{Kind: kernel.ResPrincipal, ID: agentID}); err != nil {
		return err
	}
	statuses, err := s.agents.AgentStatuses(ctx, []kernel.ID{agentID})
	if err != nil {
		return err
	}
	if _, ok := statuses[agentID]; !ok {
		return kernel.Errorf(kernel.CodeNotFound, "no such agent")
	}
	return nil
}

func (s *Service) budgetView(ctx context.Context, agentID kernel.ID) (BudgetView, error) {
	v := BudgetView{AgentID: agentID}
	b, ok, err := s.store.Budget(ctx, agentID)
	if err != nil {
		return v, err
	}
	if ok {
		v.Budget = &b
	}
	now := s.now()
	if v.Day, err = s.store.PeriodUsage(ctx, agentID, PeriodDay, PeriodDay.Start(now)); err != nil {
		return v, err
	}
	v.Month, err = s.store.PeriodUsage(ctx, agentID, PeriodMonth, PeriodMonth.Start(now))
	return v, err
}

// budgetExhausted reports whether the agent's budget, if any, is used up in the period of now.
func (s *Service) budgetExhausted(ctx context.Context, agentID kernel.ID, now time.Time) (bool, error) {
	b, ok, err := s.store.Budget(ctx, agentID)
	if err != nil || !ok {
		return false, err
	}
	u, err := s.store.PeriodUsage(ctx, agentID, b.Period, b.Period.Start(now))
	if err != nil {
		return false, err
	}
	return b.reached(u.Usage, 100), nil
}

// countUsage adds what run r consumed since its last report (next is the new cumulative usage,
// each figure at least the stored one) to its agent's counters of this day and month, in the
// patch's Unit of Work. At 80 % of a cap of the agent's budget it warns the owners once per
// period (agent.budget_warning); at the cap it asks every run of the agent that has not ended to
// stop (run.cancel_requested with the reason budget_exhausted).
func (s *Service) countUsage(ctx context.Context, r Run, prev Usage, now time.Time) error {
	delta := Usage{InputTokens: r.Usage.InputTokens - prev.InputTokens, OutputTokens: r.Usage.OutputTokens - prev.OutputTokens,
		CostUSD: FromMicros(Micros(r.Usage.CostUSD) - Micros(prev.CostUSD))}
	if delta == (Usage{}) {
		return nil
	}
	if err := s.store.AddUsage(ctx, r.AgentID, map[Period]string{PeriodDay: PeriodDay.Start(now), PeriodMonth: PeriodMonth.Start(now)}, delta); err != nil {
		return err
	}
	b, ok, err := s.store.Budget(ctx, r.AgentID)
	if err != nil || !ok {
		return err
	}
	start := b.Period.Start(now)
	u, err := s.store.PeriodUsage(ctx, r.AgentID, b.Period, start)
	if err != nil {
		return err
	}
	if u.WarnedAt == nil && b.reached(u.Usage, BudgetWarnPercent) {
		first, err := s.store.MarkBudgetWarned(ctx, r.AgentID, b.Period, start, now)
		if err != nil {
			return err
		}
		if first {
			owners, err := s.agents.Owners(ctx)
			if err != nil {
				return err
			}
			w := BudgetWarning{AgentID: r.AgentID, Period: b.Period, PeriodStart: start, Usage: u.Usage,
				MaxTokens: b.MaxTokens, MaxCostUSD: b.MaxCostUSD}
			for _, o := range owners {
				s.events.Append(ctx, EvAgentBudgetWarning.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: o},
					SubjectID: r.AgentID, ActorID: r.AgentID}, w))
			}
		}
	}
	if !b.reached(u.Usage, 100) {
		return nil
	}
	rs, err := s.store.UnendedRuns(ctx, r.AgentID)
	if err != nil {
		return err
	}
	for _, run := range rs {
		if run.CancelRequestedAt != nil {
			continue
		}
		reason := ReasonBudgetExhausted
		if err := s.requestCancel(ctx, &run, r.AgentID, &reason, now); err != nil {
			return err
		}
		if err := s.store.UpdateRun(ctx, run); err != nil {
			return err
		}
	}
	return nil
}

// ReasonBudgetExhausted is the reason of a cancel request the server makes when the agent's
// budget is used up (CancelRequest.Reason), and the trigger state of a message whose agent it
// refused for that.
const ReasonBudgetExhausted = "budget_exhausted"

// ActAgentBudget is reading, setting and removing an agent's budget: owners.
const ActAgentBudget kernel.Action = "agent.budget"
