package httpapi

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// CommandUseCases is what the slash-command and budget routes call: the agents' own commands
// (*agents.Service) and, from runs, a channel's commands and the agents' budgets
// (*runs.Service).
type CommandUseCases interface {
	SetCommands(ctx context.Context, actor kernel.Actor, cmds []agents.Command) ([]agents.Command, error)
	Commands(ctx context.Context, actor kernel.Actor) ([]agents.Command, error)
}

// BudgetUseCases is the runs side of CommandRoutes; *runs.Service implements it.
type BudgetUseCases interface {
	ChannelCommands(ctx context.Context, actor kernel.Actor, channelID kernel.ID) ([]runs.ChannelCommand, error)
	GetBudget(ctx context.Context, actor kernel.Actor, agentID kernel.ID) (runs.BudgetView, error)
	SetBudget(ctx context.Context, actor kernel.Actor, agentID kernel.ID, in runs.NewBudget) (runs.BudgetView, error)
	DeleteBudget(ctx context.Context, actor kernel.Actor, agentID kernel.ID) error
}

var (
	_ CommandUseCases = (*agents.Service)(nil)
	_ BudgetUseCases  = (*runs.Service)(nil)
)

// CommandRoutes serves an agent's slash commands (PUT and GET /api/v1/agents/me/commands), the
// commands one may type in a channel (GET /api/v1/channels/{id}/commands) and the owners'
// budgets of agents (PUT, GET and DELETE /api/v1/agents/{id}/budget).
func CommandRoutes(cmds CommandUseCases, budgets BudgetUseCases) []Route {
	rt := commandRoutes{cmds: cmds, budgets: budgets}
	return []Route{
		{Method: http.MethodPut, Pattern: "/api/v1/agents/me/commands", Action: agents.ActAgentCommandsWrite, Handler: withBody(rt.setCommands)},
		{Method: http.MethodGet, Pattern: "/api/v1/agents/me/commands", Action: agents.ActAgentCommandsWrite, Handler: rt.commands},
		{Method: http.MethodGet, Pattern: "/api/v1/channels/{id}/commands", Action: runs.ActAgentInvoke, Handler: withID(rt.channelCommands)},
		{Method: http.MethodGet, Pattern: "/api/v1/agents/{id}/budget", Action: runs.ActAgentBudget, Handler: withID(rt.getBudget)},
		{Method: http.MethodPut, Pattern: "/api/v1/agents/{id}/budget", Action: runs.ActAgentBudget, Handler: withIDBody(rt.setBudget)},
		{Method: http.MethodDelete, Pattern: "/api/v1/agents/{id}/budget", Action: runs.ActAgentBudget, Handler: withID(rt.deleteBudget)},
	}
}

type commandRoutes struct {
	cmds    CommandUseCases
	budgets BudgetUseCases
}

func (rt commandRoutes) setCommands(r *Request, in []agents.Command) (int, any, error) {
	if in == nil {
		in = []agents.Command{}
	}
	return ok(rt.cmds.SetCommands(r.Context(), r.Actor, in))
}

func (rt commandRoutes) commands(r *Request) (int, any, error) {
	return ok(rt.cmds.Commands(r.Context(), r.Actor))
}

func (rt commandRoutes) channelCommands(r *Request, id kernel.ID) (int, any, error) {
	items, err := rt.budgets.ChannelCommands(r.Context(), r.Actor, id)
	return ok(itemsList[runs.ChannelCommand]{Items: items}, err)
}

func (rt commandRoutes) getBudget(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.budgets.GetBudget(r.Context(), r.Actor, id))
}

func (rt commandRoutes) setBudget(r *Request, id kernel.ID, in runs.NewBudget) (int, any, error) {
	return ok(rt.budgets.SetBudget(r.Context(), r.Actor, id, in))
}

func (rt commandRoutes) deleteBudget(r *Request, id kernel.ID) (int, any, error) {
	return noContent(rt.budgets.DeleteBudget(r.Context(), r.Actor, id))
}
