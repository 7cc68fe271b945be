package httpapi

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// AgentUseCases is what the agent routes call; *agents.Service implements it.
type AgentUseCases interface {
	Create(ctx context.Context, actor kernel.Actor, in agents.NewAgent) (agents.Agent, string, error)
	List(ctx context.Context, actor kernel.Actor, p chat.Page) ([]agents.Agent, bool, error)
	Get(ctx context.Context, actor kernel.Actor, id kernel.ID) (agents.Agent, error)
	Disable(ctx context.Context, actor kernel.Actor, id kernel.ID) (agents.Agent, error)
	Enable(ctx context.Context, actor kernel.Actor, id kernel.ID) (agents.Agent, error)
	ResetToken(ctx context.Context, actor kernel.Actor, id kernel.ID) (agents.Agent, string, error)
}

var _ AgentUseCases = (*agents.Service)(nil)

// createdAgentView is the answer of POST /agents: the agent and its API token, the only answer
// that shows the token.
type createdAgentView struct {
	agents.Agent
	Token string `json:"token"`
}

// AgentRoutes serves the agents: create (with the token shown once), list, read, disable and
// enable. The handlers never log a body or an answer: the create answer holds a token.
func AgentRoutes(svc AgentUseCases) []Route {
	rt := agentRoutes{svc: svc}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/agents", Action: agents.ActAgentCreate, Secret: true, Handler: withBody(rt.createAgent)},
		{Method: http.MethodGet, Pattern: "/api/v1/agents", Action: agents.ActAgentRead, Handler: rt.listAgents},
		{Method: http.MethodGet, Pattern: "/api/v1/agents/{id}", Action: agents.ActAgentRead, Handler: withID(rt.getAgent)},
		{Method: http.MethodPost, Pattern: "/api/v1/agents/{id}/disable", Action: agents.ActAgentDisable, Handler: withID(rt.disableAgent)},
		{Method: http.MethodPost, Pattern: "/api/v1/agents/{id}/enable", Action: agents.ActAgentEnable, Handler: withID(rt.enableAgent)},
		// A new token for the agent, its others revoked: shown once, like at creation.
		{Method: http.MethodPost, Pattern: "/api/v1/agents/{id}/token", Action: agents.ActAgentTokenReset, Secret: true, Handler: withID(rt.resetToken)},
	}
}

// agentRoutes holds the handlers of AgentRoutes.
type agentRoutes struct{ svc AgentUseCases }

type agentBody struct {
	Handle      string `json:"handle"`
	DisplayName string `json:"display_name"`
	Description string `json:"description"`
}

func (rt agentRoutes) createAgent(r *Request, in agentBody) (int, any, error) {
	a, token, err := rt.svc.Create(r.Context(), r.Actor, agents.NewAgent{Handle: in.Handle, DisplayName: in.DisplayName,
		Description: in.Description})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, createdAgentView{Agent: a, Token: token}, nil
}

func (rt agentRoutes) listAgents(r *Request) (int, any, error) {
	p, err := keysetPage(r)
	if err != nil {
		return 0, nil, err
	}
	return page(rt.svc.List(r.Context(), r.Actor, p))
}

func (rt agentRoutes) getAgent(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.svc.Get(r.Context(), r.Actor, id))
}

func (rt agentRoutes) disableAgent(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.svc.Disable(r.Context(), r.Actor, id))
}

func (rt agentRoutes) enableAgent(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.svc.Enable(r.Context(), r.Actor, id))
}

func (rt agentRoutes) resetToken(r *Request, id kernel.ID) (int, any, error) {
	a, token, err := rt.svc.ResetToken(r.Context(), r.Actor, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, createdAgentView{Agent: a, Token: token}, nil
}
