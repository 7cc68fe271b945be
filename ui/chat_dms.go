package ui

import (
	"context"
	"strings"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/dms"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// DMUseCases is what the chat view's direct messages call; *dms.Service implements it.
type DMUseCases interface {
	Create(ctx context.Context, actor kernel.Actor, others []kernel.ID) (dms.DM, bool, error)
	List(ctx context.Context, actor kernel.Actor) ([]dms.DM, error)
	Get(ctx context.Context, actor kernel.Actor, id kernel.ID) (dms.DM, error)
	Leave(ctx context.Context, actor kernel.Actor, id kernel.ID) (dms.DM, error)
}

var _ DMUseCases = (*dms.Service)(nil)

// dmNav is the "Direct messages" part of the left column: the person's DMs, named by their other
// participants, and the form that starts one with people or agents. Nil without DMs wired.
func (c *chatView) dmNav(rq *request, current kernel.ID) (*pages.DMNav, error) {
	if c.d.DMs == nil {
		return nil, nil
	}
	list, err := c.d.DMs.List(rq.ctx(), rq.actor)
	if err != nil {
		return nil, err
	}
	var need []kernel.ID
	for _, d := range list {
		need = append(need, d.Participants...)
	}
	dir, err := c.directory(rq.ctx(), rq.actor, need)
	if err != nil {
		return nil, err
	}
	nav := &pages.DMNav{CSRF: rq.csrf}
	for _, d := range list {
		nav.DMs = append(nav.DMs, pages.ChannelNav{ID: string(d.ID), Name: dmName(d, dir, rq.actor.ID),
			Href: "/console/channels/" + string(d.ID), Current: d.ID == current})
	}
	for _, p := range dir.sorted {
		if !p.Active || p.ID == rq.actor.ID {
			continue
		}
		name := p.Name + " (@" + p.Handle + ")"
		if p.Agent {
			name += ", agent"
		}
		nav.Options = append(nav.Options, pages.DMOption{ID: string(p.ID), Name: name})
	}
	return nav, nil
}

// named gives a DM channel the name its page shows, its participants other than the reader: a
// DM has no name of its own. Other channels come back as they are. It also reports whether the
// reader may leave it: a group DM, never a 1:1 one.
func (c *chatView) named(rq *request, ch chat.Channel) (chat.Channel, bool, error) {
	if ch.Kind != chat.KindDM || c.d.DMs == nil {
		return ch, false, nil
	}
	d, err := c.d.DMs.Get(rq.ctx(), rq.actor, ch.ID)
	if err != nil {
		return ch, false, err
	}
	dir, err := c.directory(rq.ctx(), rq.actor, d.Participants)
	if err != nil {
		return ch, false, err
	}
	ch.Name = dmName(d, dir, rq.actor.ID)
	return ch, len(d.Participants) > 2, nil
}

// leaveDM takes the person out of a group DM and goes to the chat's first page.
func (c *chatView) leaveDM(rq *request) error {
	if c.d.DMs == nil {
		return errNoChat
	}
	id, err := c.chatID(rq)
	if err != nil {
		return err
	}
	if _, err := c.d.DMs.Leave(rq.ctx(), rq.actor, id); refusal(err, dms.CodeCannotLeave) {
		c.redirect(rq, "/console/channels/"+string(id), layouts.Flash{Kind: "error", Text: "A conversation of two cannot be left."})
		return nil
	} else if err != nil {
		return err
	}
	c.redirect(rq, "/console/chat", layouts.Flash{Kind: "ok", Text: "You left the conversation."})
	return nil
}

// dmName names a DM by its participants other than me.
func dmName(d dms.DM, dir *principalDir, me kernel.ID) string {
	var names []string
	for _, id := range d.Participants {
		if id != me {
			names = append(names, dir.get(id).Name)
		}
	}
	if len(names) == 0 {
		return "Just you"
	}
	return strings.Join(names, ", ")
}

// newDM starts the DM with the people and agents the form picked (or opens the one they have
// already) and goes to it.
func (c *chatView) newDM(rq *request) error {
	if c.d.DMs == nil || !c.chatReady() {
		return errNoChat
	}
	var others []kernel.ID
	for _, v := range rq.r.PostForm["participant_ids"] {
		id, err := kernel.ParseID(v)
		if err != nil {
			return kernel.ErrNotFound
		}
		others = append(others, id)
	}
	d, _, err := c.d.DMs.Create(rq.ctx(), rq.actor, others)
	if refusal(err, kernel.CodeValidation) {
		c.redirect(rq, "/console/chat", layouts.Flash{Kind: "error", Text: "Pick one to eight people or agents for a direct message."})
		return nil
	}
	if err != nil {
		return err
	}
	c.redirect(rq, "/console/channels/"+string(d.ID), layouts.Flash{})
	return nil
}
