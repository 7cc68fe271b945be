package runs

import (
	"math"

	"bothy.dev/bothy/app/kernel"
)

// Usage is what a run consumed, as its agent reports it on PATCH /api/v1/runs/{id}: cumulative
// over the run, so a patch carries the total so far, never the increase.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// MaxUsageTokens bounds each token count of a report; MaxUsageCostUSD its cost.
const (
	MaxUsageTokens  = 1 << 50
	MaxUsageCostUSD = 1e9
)

func (u Usage) check() error {
	switch {
	case u.InputTokens < 0 || u.InputTokens > MaxUsageTokens:
		return kernel.Invalid("usage.input_tokens", "input_tokens is a count from 0 to %d", int64(MaxUsageTokens))
	case u.OutputTokens < 0 || u.OutputTokens > MaxUsageTokens:
		return kernel.Invalid("usage.output_tokens", "output_tokens is a count from 0 to %d", int64(MaxUsageTokens))
	case math.IsNaN(u.CostUSD) || u.CostUSD < 0 || u.CostUSD > MaxUsageCostUSD:
		return kernel.Invalid("usage.cost_usd", "cost_usd is an amount from 0 to %g", MaxUsageCostUSD)
	}
	return nil
}

// max is the usage with each figure the larger of u's and v's: the usage is cumulative, so a
// report below what is stored (a late retry, a restarted agent counting from zero) lowers
// nothing and counts nothing twice.
func (u Usage) max(v Usage) Usage {
	out := Usage{InputTokens: max(u.InputTokens, v.InputTokens), OutputTokens: max(u.OutputTokens, v.OutputTokens), CostUSD: u.CostUSD}
	if Micros(v.CostUSD) > Micros(u.CostUSD) {
		out.CostUSD = v.CostUSD
	}
	return out
}
