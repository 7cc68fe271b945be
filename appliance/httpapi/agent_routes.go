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
	status := func(op func(context.Context, kernel.Actor, kernel.ID) (agents.Agent, error)) Handler {
		return func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			a, err := op(r.Context(), r.Actor, id)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, a, nil
		}
	}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/agents", Action: kernel.ActAgentCreate, Secret: true, Handler: func(r *Request) (int, any, error) {
			var in struct {
				Handle      string `json:"handle"`
				DisplayName string `json:"display_name"`
				Description string `json:"description"`
			}
			if err := r.Decode(&in); err != nil {
				return 0, nil, err
			}
			a, token, err := svc.Create(r.Context(), r.Actor, agents.NewAgent{Handle: in.Handle, DisplayName: in.DisplayName,
				Description: in.Description})
			if err != nil {
				return 0, nil, err
			}
			return http.StatusCreated, createdAgentView{Agent: a, Token: token}, nil
		}},

		{Method: http.MethodGet, Pattern: "/api/v1/agents", Action: kernel.ActAgentRead, Handler: func(r *Request) (int, any, error) {
			p, err := keysetPage(r)
			if err != nil {
				return 0, nil, err
			}
			items, more, err := svc.List(r.Context(), r.Actor, p)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, itemsPage[agents.Agent]{Items: nonNil(items), HasMore: more}, nil
		}},

		{Method: http.MethodGet, Pattern: "/api/v1/agents/{id}", Action: kernel.ActAgentRead, Handler: status(svc.Get)},
		{Method: http.MethodPost, Pattern: "/api/v1/agents/{id}/disable", Action: kernel.ActAgentDisable, Handler: status(svc.Disable)},
		{Method: http.MethodPost, Pattern: "/api/v1/agents/{id}/enable", Action: kernel.ActAgentEnable, Handler: status(svc.Enable)},
		// A new token for the agent, its others revoked: shown once, like at creation.
		{Method: http.MethodPost, Pattern: "/api/v1/agents/{id}/token", Action: kernel.ActAgentTokenReset, Secret: true,
			Handler: func(r *Request) (int, any, error) {
				id, err := r.PathID("id")
				if err != nil {
					return 0, nil, err
				}
				a, token, err := svc.ResetToken(r.Context(), r.Actor, id)
				if err != nil {
					return 0, nil, err
				}
				return http.StatusOK, createdAgentView{Agent: a, Token: token}, nil
			}},
	}
}
