package ui

import (
	"context"
	"math"
	"strconv"
	"strings"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/ui/pages"
)

// BudgetUseCases is what an agent's page calls for its budget, and the composer for the slash
// commands of a thread's channel; *runs.Service implements it.
type BudgetUseCases interface {
	GetBudget(ctx context.Context, actor kernel.Actor, agentID kernel.ID) (runs.BudgetView, error)
	SetBudget(ctx context.Context, actor kernel.Actor, agentID kernel.ID, in runs.NewBudget) (runs.BudgetView, error)
	DeleteBudget(ctx context.Context, actor kernel.Actor, agentID kernel.ID) error
	ChannelCommands(ctx context.Context, actor kernel.Actor, channelID kernel.ID) ([]runs.ChannelCommand, error)
}

var _ BudgetUseCases = (*runs.Service)(nil)

// commandRoutes registers the slash commands a composer lists (console.js reads them when "/"
// is typed at the start of a message; without the script the message is sent as typed).
func (c *Console) commandRoutes() {
	c.handle("GET /console/threads/{id}/commands", signedIn, c.threadCommands)
}

// commandItem is one command as the composer's list shows it: Insert is what a pick puts in the
// composer (/name@handle when another agent declares the same name).
type commandItem struct {
	Name        string `json:"name"`
	Handle      string `json:"agent_handle"`
	Description string `json:"description"`
	ArgsHint    string `json:"args_hint"`
	Insert      string `json:"insert"`
}

// threadCommands answers, as JSON, the commands one may type in the channel of a thread.
func (c *Console) threadCommands(rq *request) error {
	if c.d.Budgets == nil || c.d.Chat == nil {
		return kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	th, err := c.d.Chat.Thread(rq.ctx(), id)
	if err != nil {
		return err
	}
	list, err := c.d.Budgets.ChannelCommands(rq.ctx(), rq.actor, th.ChannelID)
	if err != nil {
		return err
	}
	names := map[string]int{}
	for _, cmd := range list {
		names[cmd.Name]++
	}
	out := make([]commandItem, 0, len(list))
	for _, cmd := range list {
		insert := "/" + cmd.Name
		if names[cmd.Name] > 1 {
			insert += "@" + cmd.AgentHandle
		}
		out = append(out, commandItem{Name: cmd.Name, Handle: cmd.AgentHandle, Description: cmd.Description,
			ArgsHint: cmd.ArgsHint, Insert: insert})
	}
	return writeJSON(rq, 200, out)
}

// agentBudgetView is the budget part of an agent's page: its cap and this period's usage (this
// month's when it has no budget).
func (c *Console) agentBudgetView(rq *request, id kernel.ID) (*pages.AgentBudget, error) {
	if c.d.Budgets == nil {
		return nil, nil
	}
	v, err := c.d.Budgets.GetBudget(rq.ctx(), rq.actor, id)
	if err != nil {
		return nil, err
	}
	out := &pages.AgentBudget{Period: "month"}
	used := v.Month
	if v.Budget != nil {
		out.Set, out.Period = true, string(v.Budget.Period)
		if v.Budget.Period == runs.PeriodDay {
			used = v.Day
		}
		if v.Budget.MaxTokens != nil {
			out.MaxTokens = strconv.FormatInt(*v.Budget.MaxTokens, 10)
			out.Percent = percent(float64(used.InputTokens+used.OutputTokens), float64(*v.Budget.MaxTokens))
		}
		if v.Budget.MaxCostUSD != nil {
			out.MaxCost = strconv.FormatFloat(*v.Budget.MaxCostUSD, 'f', -1, 64)
			out.Percent = max(out.Percent, percent(used.CostUSD, *v.Budget.MaxCostUSD))
		}
	}
	out.PeriodStart = used.PeriodStart
	out.UsedTokens = strconv.FormatInt(used.InputTokens+used.OutputTokens, 10)
	out.UsedCost = strconv.FormatFloat(used.CostUSD, 'f', -1, 64)
	out.Warned = used.WarnedAt != nil
	return out, nil
}

func percent(used, cap float64) int {
	if cap <= 0 {
		return 0
	}
	return int(math.Min(100, math.Floor(used*100/cap)))
}

// agentBudgetSet sets the agent's budget from the page's form; an empty cap sets none of its
// kind.
func (c *Console) agentBudgetSet(rq *request) error {
	if c.d.Budgets == nil {
		return kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	f := rq.r.PostForm
	in := runs.NewBudget{Period: runs.Period(f.Get("period"))}
	if s := strings.TrimSpace(f.Get("max_tokens")); s != "" {
		n, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil {
			return c.formOutcome(rq, kernel.Invalid("max_tokens", "max_tokens is a whole number of tokens"), agentPath(id), "")
		}
		in.MaxTokens = &n
	}
	if s := strings.TrimSpace(f.Get("max_cost_usd")); s != "" {
		x, perr := strconv.ParseFloat(s, 64)
		if perr != nil {
			return c.formOutcome(rq, kernel.Invalid("max_cost_usd", "max_cost_usd is an amount in US dollars"), agentPath(id), "")
		}
		in.MaxCostUSD = &x
	}
	_, err = c.d.Budgets.SetBudget(rq.ctx(), rq.actor, id, in)
	return c.formOutcome(rq, err, agentPath(id), "Budget saved.")
}

// agentBudgetDelete removes the agent's budget; its usage stays counted.
func (c *Console) agentBudgetDelete(rq *request) error {
	if c.d.Budgets == nil {
		return kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	return c.formOutcome(rq, c.d.Budgets.DeleteBudget(rq.ctx(), rq.actor, id), agentPath(id), "Budget removed.")
}
