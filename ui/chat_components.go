package ui

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/ui/components"
	"bothy.dev/bothy/ui/layouts"
)

// InteractionUseCases posts a person's click or pick on a message's components;
// *runs.Interactions implements it.
type InteractionUseCases interface {
	Interact(ctx context.Context, actor kernel.Actor, messageID kernel.ID, in runs.NewInteraction) (runs.Interaction, error)
}

var _ InteractionUseCases = (*runs.Interactions)(nil)

// componentRows are a message's components as the chat view shows them.
func componentRows(rows []messaging.ActionRow) []components.ComponentRowView {
	if len(rows) == 0 {
		return nil
	}
	out := make([]components.ComponentRowView, len(rows))
	for i, r := range rows {
		for _, c := range r.Components {
			v := components.ComponentView{Type: c.Type, ID: c.ID, Label: c.Label, Style: c.Style, Placeholder: c.Placeholder,
				Disabled: c.Disabled, Min: 1, Max: 1}
			if c.Min != nil {
				v.Min = *c.Min
			}
			if c.Max != nil {
				v.Max = *c.Max
			}
			v.Multiple = v.Max > 1
			for _, o := range c.Options {
				v.Options = append(v.Options, components.OptionView{Label: o.Label, Value: o.Value})
			}
			out[i].Components = append(out[i].Components, v)
		}
	}
	return out
}

// interact posts the click or pick of a message's component (POST
// /console/messages/{id}/interactions: component_id and values, the form of MessageComponents)
// through the same use case as the REST API. Without the script it goes back to the thread
// with what happened; with it (Bothy-Fragment) it answers the message as it now is, or the
// refusal as text.
func (c *chatView) interact(rq *request) error {
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	m, err := c.d.Messages.GetMessage(rq.ctx(), rq.actor, id)
	if err != nil {
		return err
	}
	if c.d.Interactions == nil {
		return kernel.ErrNotFound
	}
	var values []string
	for _, v := range rq.r.PostForm["values"] {
		if v != "" {
			values = append(values, v)
		}
	}
	_, err = c.d.Interactions.Interact(rq.ctx(), rq.actor, m.ID, runs.NewInteraction{ComponentID: rq.r.PostFormValue("component_id"), Values: values})
	var text string
	if err != nil {
		if !refusal(err, kernel.CodeValidation, kernel.CodeForbidden, runs.CodeComponentDisabled, runs.CodeComponentUnavailable) {
			return err
		}
		switch {
		case kernel.IsCode(err, kernel.CodeForbidden):
			text = "You cannot answer this message."
		case kernel.IsCode(err, runs.CodeComponentDisabled):
			text = "That button is no longer active."
		case kernel.IsCode(err, runs.CodeComponentUnavailable):
			text = "That choice is gone from the message."
		default:
			text = formError(err)
		}
	}
	return c.answerMessageAction(rq, m, text, layouts.Flash{Kind: "ok", Text: "Sent."})
}

// answerMessageAction answers a form's action on message m: refused, when not empty, is why it
// was refused. With the script (Bothy-Fragment) it answers the message as it now is, or the
// refusal as text (422); without it, it goes back to the message in its thread with refused as
// an error, or done.
func (c *chatView) answerMessageAction(rq *request, m messaging.Message, refused string, done layouts.Flash) error {
	if wantsFragment(rq) {
		if refused != "" {
			refuseFragment(rq, http.StatusUnprocessableEntity, refused)
			return nil
		}
		m, err := c.d.Messages.GetMessage(rq.ctx(), rq.actor, m.ID)
		if err != nil {
			return err
		}
		return c.renderMessage(rq, m, http.StatusOK)
	}
	if refused != "" {
		done = layouts.Flash{Kind: "error", Text: refused}
	}
	return c.backToThread(rq, m.ThreadID, "#m-"+string(m.ID), done)
}
