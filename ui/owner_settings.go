package ui

import (
	"context"
	"net/http"

	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// InstanceSettings is what the console needs of the instance's settings (*instance.Service):
// the name for every page's frame, and the owner's change of the settings.
type InstanceSettings interface {
	Name(ctx context.Context) (string, error)
	Settings(ctx context.Context, actor kernel.Actor) (instance.Settings, error)
	Update(ctx context.Context, actor kernel.Actor, c instance.Change) (instance.Settings, error)
}

// settingsRoutes registers the owner's settings of the instance.
func (c *Console) settingsRoutes() {
	if c.d.Instance == nil {
		return // the catch-all answers 404
	}
	c.handle("GET /console/settings", ownerOnly, c.settingsPage)
	c.handle("POST /console/settings", ownerOnly, c.settingsSubmit)
}

func (c *Console) settingsPage(rq *request) error {
	st, err := c.d.Instance.Settings(rq.ctx(), rq.actor)
	if err != nil {
		return err
	}
	return c.render(rq, http.StatusOK, pages.Settings(pages.SettingsView{Chrome: c.chrome(rq, "Settings", "settings"), Name: st.Name,
		BroadcastMentions: st.BroadcastMentions}))
}

func (c *Console) settingsSubmit(rq *request) error {
	name := rq.r.PostForm.Get("name")
	change := instance.Change{Name: name}
	// A form without the field (an older page) leaves the setting as it is.
	broadcast, sent := rq.r.PostForm["broadcast_mentions"]
	if sent && len(broadcast) > 0 {
		change.BroadcastMentions = &broadcast[0]
	}
	st, err := c.d.Instance.Update(rq.ctx(), rq.actor, change)
	if err != nil {
		if !refusal(err, kernel.CodeValidation) {
			return err
		}
		v := pages.SettingsView{Chrome: c.chrome(rq, "Settings", "settings"), Name: name, Error: formError(err)}
		if change.BroadcastMentions != nil {
			v.BroadcastMentions = *change.BroadcastMentions
		}
		return c.render(rq, http.StatusUnprocessableEntity, pages.Settings(v))
	}
	c.redirect(rq, "/console/settings", layouts.Flash{Kind: "ok", Text: "The instance is called " + st.Name + " now."})
	return nil
}
