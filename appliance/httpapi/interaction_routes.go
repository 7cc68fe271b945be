package httpapi

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// InteractionUseCases is what the interaction route calls; *runs.Interactions implements it.
type InteractionUseCases interface {
	Interact(ctx context.Context, actor kernel.Actor, messageID kernel.ID, in runs.NewInteraction) (runs.Interaction, error)
}

var _ InteractionUseCases = (*runs.Interactions)(nil)

// InteractionRoutes serves a person's click or pick on a message's components. It answers 202:
// the interaction is recorded, and reaches the message's author later, through its consumer.
func InteractionRoutes(x InteractionUseCases) []Route {
	rt := interactionRoutes{x: x}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/messages/{id}/interactions", Action: runs.ActInteractionCreate, Handler: withIDBody(rt.interact)},
	}
}

type interactionRoutes struct{ x InteractionUseCases }

// interactionBody names the component and what it sends: nothing or its value for a button,
// the picked option values for a select.
type interactionBody struct {
	ComponentID string   `json:"component_id"`
	Values      []string `json:"values"`
}

// interactionAnswer is the answer of an interaction: its id, which interaction.created carries.
type interactionAnswer struct {
	InteractionID kernel.ID `json:"interaction_id"`
}

func (rt interactionRoutes) interact(r *Request, messageID kernel.ID, in interactionBody) (int, any, error) {
	i, err := rt.x.Interact(r.Context(), r.Actor, messageID, runs.NewInteraction{ComponentID: in.ComponentID, Values: in.Values})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, interactionAnswer{InteractionID: i.ID}, nil
}
