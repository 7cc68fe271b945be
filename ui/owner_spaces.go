package ui

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// SpaceGrants reads the grants held on a space, which the access page of a channel shows next to
// the channel's own (authz's ListGrants answers a channel's only). It authorizes nothing: the
// page reads it only after authz.ListGrants allowed the viewer the channel's grants.
// *storage.AuthzStore implements it.
type SpaceGrants interface {
	// ListGrants returns the grants on resource (here a space), in principal id order.
	// Errors: internal.
	ListGrants(ctx context.Context, resourceID kernel.ID) ([]authz.Grant, error)
}

// spaceRoutes registers the owner's spaces and channels and the access page of a channel. The
// access page is for every signed-in person: the use cases' Authorize lets a channel's managers
// in and answers not found to everyone else.
func (c *Console) spaceRoutes() {
	c.handle("GET /console/spaces", ownerOnly, c.spacesPage)
	c.handle("POST /console/spaces", ownerOnly, c.spaceCreate)
	c.handle("GET /console/spaces/{id}", ownerOnly, c.spacePage)
	c.handle("POST /console/spaces/{id}/rename", ownerOnly, c.spaceRename)
	c.handle("POST /console/spaces/{id}/archive", ownerOnly, c.spaceArchive)
	c.handle("POST /console/spaces/{id}/channels", ownerOnly, c.channelCreate)
	c.handle("POST /console/channels/{id}/edit", ownerOnly, c.channelEdit)
	c.handle("POST /console/channels/{id}/archive", ownerOnly, c.channelArchive)
	c.handle("POST /console/channels/{id}/operator", ownerOnly, c.channelOperator)
	c.handle("GET /console/channels/{id}/access", signedIn, c.accessPage)
	c.handle("POST /console/channels/{id}/access", signedIn, c.accessGrant)
	c.handle("POST /console/channels/{id}/access/revoke", signedIn, c.accessRevoke)
}

// formOutcome ends a form that changed something: back to target with ok in the flash, or with
// the use case's refusal when the person can fix it. Not found and forbidden stay errors (the
// 404 page), like anything else.
func (c *Console) formOutcome(rq *request, err error, target, ok string) error {
	switch {
	case err == nil:
		c.redirect(rq, target, layouts.Flash{Kind: "ok", Text: ok})
		return nil
	case refusal(err, kernel.CodeValidation, kernel.CodeConflict, kernel.CodeRateLimited):
		c.redirect(rq, target, layouts.Flash{Kind: "error", Text: formError(err)})
		return nil
	}
	return err
}

// whenText is a time as the console shows it.
func whenText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func spacePath(id kernel.ID) string { return "/console/spaces/" + string(id) }

func (c *Console) spacesPage(rq *request) error {
	if c.d.Chat == nil {
		return kernel.ErrNotFound
	}
	spaces, err := c.d.Chat.ListSpaces(rq.ctx(), rq.actor)
	if err != nil {
		return err
	}
	v := pages.SpacesView{Chrome: c.chrome(rq, "Spaces", "spaces")}
	for _, sp := range spaces {
		chs, err := c.d.Chat.ListChannels(rq.ctx(), rq.actor, sp.ID)
		if err != nil {
			return err
		}
		v.Spaces = append(v.Spaces, pages.SpaceRow{ID: string(sp.ID), Name: sp.Name, Channels: len(chs), Created: whenText(sp.CreatedAt)})
	}
	return c.render(rq, http.StatusOK, pages.Spaces(v))
}

func (c *Console) spaceCreate(rq *request) error {
	if c.d.Chat == nil {
		return kernel.ErrNotFound
	}
	sp, err := c.d.Chat.CreateSpace(rq.ctx(), rq.actor, rq.r.PostFormValue("name"))
	if err != nil {
		return c.formOutcome(rq, err, "/console/spaces", "")
	}
	return c.formOutcome(rq, nil, spacePath(sp.ID), "Space "+sp.Name+" created. Add its first channel below.")
}

func (c *Console) spacePage(rq *request) error {
	if c.d.Chat == nil {
		return kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	sp, err := c.d.Chat.GetSpace(rq.ctx(), rq.actor, id)
	if err != nil {
		return err
	}
	chs, err := c.d.Chat.ListChannels(rq.ctx(), rq.actor, sp.ID)
	if err != nil {
		return err
	}
	v := pages.SpaceView{Chrome: c.chrome(rq, sp.Name, "spaces"), ID: string(sp.ID), Name: sp.Name, Created: whenText(sp.CreatedAt)}
	names := map[kernel.ID]string{}
	if c.d.Agents != nil {
		list, _, err := c.d.Agents.List(rq.ctx(), rq.actor, chat.Page{Limit: chat.MaxPageLimit})
		if err != nil {
			return err
		}
		for _, a := range list {
			label := a.DisplayName + " (@" + a.Handle + ")"
			names[a.ID] = label
			if a.Status == identity.StatusActive {
				v.Agents = append(v.Agents, pages.Option{Value: string(a.ID), Label: label})
			}
		}
	}
	for _, ch := range chs {
		row := pages.ChannelRow{ID: string(ch.ID), Name: ch.Name, Topic: ch.Topic, Created: whenText(ch.CreatedAt)}
		if ch.OperatorID != nil {
			row.OperatorID, row.Operator = string(*ch.OperatorID), names[*ch.OperatorID]
			if row.Operator == "" {
				row.Operator = string(*ch.OperatorID)
			}
		}
		v.Channels = append(v.Channels, row)
	}
	return c.render(rq, http.StatusOK, pages.Space(v))
}

func (c *Console) spaceRename(rq *request) error {
	if c.d.Chat == nil {
		return kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	name := rq.r.PostFormValue("name")
	sp, err := c.d.Chat.UpdateSpace(rq.ctx(), rq.actor, id, chat.SpacePatch{Name: &name})
	return c.formOutcome(rq, err, spacePath(id), "Space renamed to "+sp.Name+".")
}

// spaceArchive archives the space with its channels and goes back to the list of spaces.
func (c *Console) spaceArchive(rq *request) error {
	if c.d.Chat == nil {
		return kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	sp, err := c.d.Chat.ArchiveSpace(rq.ctx(), rq.actor, id)
	return c.formOutcome(rq, err, "/console/spaces", "Space "+sp.Name+" archived with its channels: they are gone from every list.")
}

func (c *Console) channelCreate(rq *request) error {
	if c.d.Chat == nil {
		return kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	f := rq.r.PostForm
	ch, err := c.d.Chat.CreateChannel(rq.ctx(), rq.actor, id, chat.NewChannel{Name: f.Get("name"), Topic: f.Get("topic")})
	return c.formOutcome(rq, err, spacePath(id), "Channel "+ch.Name+" created. Only the owners see it until you grant access.")
}

// channelOf loads the channel of the path as the viewer may read it, for the forms that lead
// back to its space.
func (c *Console) channelOf(rq *request) (chat.Channel, error) {
	if c.d.Chat == nil {
		return chat.Channel{}, kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return chat.Channel{}, err
	}
	return c.d.Chat.GetChannel(rq.ctx(), rq.actor, id)
}

func (c *Console) channelEdit(rq *request) error {
	ch, err := c.channelOf(rq)
	if err != nil {
		return err
	}
	name, topic := rq.r.PostFormValue("name"), rq.r.PostFormValue("topic")
	up, err := c.d.Chat.UpdateChannel(rq.ctx(), rq.actor, ch.ID, chat.ChannelPatch{Name: &name, Topic: &topic})
	return c.formOutcome(rq, err, spacePath(ch.SpaceID), "Channel "+up.Name+" saved.")
}

func (c *Console) channelArchive(rq *request) error {
	ch, err := c.channelOf(rq)
	if err != nil {
		return err
	}
	_, err = c.d.Chat.ArchiveChannel(rq.ctx(), rq.actor, ch.ID)
	return c.formOutcome(rq, err, spacePath(ch.SpaceID), "Channel "+ch.Name+" archived: it is gone from every list.")
}

// channelOperator names the channel's operator, or clears it for an empty agent_id.
func (c *Console) channelOperator(rq *request) error {
	ch, err := c.channelOf(rq)
	if err != nil {
		return err
	}
	raw := strings.TrimSpace(rq.r.PostFormValue("agent_id"))
	if raw == "" {
		_, err = c.d.Chat.ClearOperator(rq.ctx(), rq.actor, ch.ID)
		return c.formOutcome(rq, err, spacePath(ch.SpaceID), "Channel "+ch.Name+" has no operator now.")
	}
	agentID, err := kernel.ParseID(raw)
	if err != nil {
		return c.formOutcome(rq, kernel.Invalid("agent_id", "Choose an agent from the list."), spacePath(ch.SpaceID), "")
	}
	_, err = c.d.Chat.SetOperator(rq.ctx(), rq.actor, ch.ID, agentID)
	return c.formOutcome(rq, err, spacePath(ch.SpaceID), "Every new thread of "+ch.Name+" now invokes its operator.")
}

// levelHelp says what each level allows, in the order of authz's levels.
var levelHelp = []pages.LevelOption{
	{Name: authz.LevelView.String(), Help: "read the channel"},
	{Name: authz.LevelPost.String(), Help: "read and write"},
	{Name: authz.LevelInvoke.String(), Help: "read, write and call agents by @mention"},
	{Name: authz.LevelManage.String(), Help: "all of that, and change the channel and who sees it"},
}

// principalNames knows the people and agents by id, to name the holders of grants and offer the
// active ones to grant to.
type principalNames struct {
	byID    map[kernel.ID]pages.GrantRow // Name, Handle, Kind
	options []pages.Option
}

// principals lists the people and the agents the viewer may read, through identity's and agents'
// use cases.
func (c *Console) principals(rq *request) (principalNames, error) {
	out := principalNames{byID: map[kernel.ID]pages.GrantRow{}}
	var people []identity.User
	for after := kernel.NilID; ; {
		page, err := c.d.Identity.ListUsers(rq.ctx(), rq.actor, after, 500)
		if err != nil {
			return out, err
		}
		people = append(people, page...)
		if len(page) < 500 || len(people) >= 5000 {
			break
		}
		after = page[len(page)-1].ID
	}
	for _, u := range people {
		out.byID[u.ID] = pages.GrantRow{Name: u.DisplayName, Handle: u.Handle, Kind: "person"}
		if u.Status == identity.StatusActive {
			out.options = append(out.options, pages.Option{Value: string(u.ID), Label: u.DisplayName + " (@" + u.Handle + ")"})
		}
	}
	if c.d.Agents != nil {
		agents, _, err := c.d.Agents.List(rq.ctx(), rq.actor, chat.Page{Limit: chat.MaxPageLimit})
		if err != nil {
			return out, err
		}
		for _, a := range agents {
			out.byID[a.ID] = pages.GrantRow{Name: a.DisplayName, Handle: a.Handle, Kind: "agent"}
			if a.Status == identity.StatusActive {
				out.options = append(out.options, pages.Option{Value: string(a.ID), Label: a.DisplayName + " (@" + a.Handle + ", agent)"})
			}
		}
	}
	slices.SortStableFunc(out.options, func(a, b pages.Option) int {
		return strings.Compare(strings.ToLower(a.Label), strings.ToLower(b.Label))
	})
	return out, nil
}

// accessPage is "who can see this channel". authz.ListGrants decides who may read it: a manager
// of the channel or its space; anyone else gets the 404 page.
func (c *Console) accessPage(rq *request) error {
	ch, err := c.channelOf(rq)
	if err != nil {
		return err
	}
	if c.d.Authz == nil {
		return kernel.ErrNotFound
	}
	grants, err := c.d.Authz.ListGrants(rq.ctx(), rq.actor, ch.ID)
	if err != nil {
		return err
	}
	v := pages.AccessView{Chrome: c.chrome(rq, "Access to "+ch.Name, "spaces"), ChannelID: string(ch.ID), ChannelName: ch.Name,
		SpaceID: string(ch.SpaceID), DM: ch.Kind == chat.KindDM, Levels: levelHelp, Back: "/console/chat", BackLabel: "Chat"}
	if !rq.user.IsOwner {
		v.Chrome.Section = "chat"
	}
	if sp, err := c.d.Chat.GetSpace(rq.ctx(), rq.actor, ch.SpaceID); err == nil {
		v.SpaceName = sp.Name
		if rq.user.IsOwner {
			v.Back, v.BackLabel = spacePath(sp.ID), sp.Name
		}
	} else if !kernel.IsCode(err, kernel.CodeNotFound) {
		return err
	}
	space := chat.Space{ID: ch.SpaceID}.Resource()
	if !v.DM {
		err := c.d.Authz.Authorize(rq.ctx(), rq.actor, authz.ActGrantCreate, space)
		switch kernel.CodeOf(err) {
		case kernel.Code{}:
			v.SpaceScope = true
		case kernel.CodeNotFound, kernel.CodeForbidden:
		default:
			return err
		}
	}
	names, err := c.principals(rq)
	if err != nil {
		return err
	}
	v.Principals = names.options
	row := func(g authz.Grant, scope string, editable bool) pages.GrantRow {
		r := names.byID[g.PrincipalID]
		if r.Name == "" {
			r.Name = string(g.PrincipalID)
		}
		r.PrincipalID, r.Level, r.Scope, r.Since, r.Editable = string(g.PrincipalID), g.Level.String(), scope, whenText(g.CreatedAt), editable
		return r
	}
	for _, g := range grants {
		v.Grants = append(v.Grants, row(g, "channel", true))
	}
	if !v.DM && c.d.SpaceGrants != nil {
		sgs, err := c.d.SpaceGrants.ListGrants(rq.ctx(), ch.SpaceID)
		if err != nil {
			return err
		}
		for _, g := range sgs {
			v.Grants = append(v.Grants, row(g, "space", v.SpaceScope))
		}
	}
	return c.render(rq, http.StatusOK, pages.Access(v))
}

func accessPath(id kernel.ID) string { return "/console/channels/" + string(id) + "/access" }

// accessGrant gives a person or agent a level on the channel or on its space, or changes the
// level it holds there (authz.CreateGrant, CreateSpaceGrant).
func (c *Console) accessGrant(rq *request) error {
	ch, err := c.channelOf(rq)
	if err != nil {
		return err
	}
	if c.d.Authz == nil {
		return kernel.ErrNotFound
	}
	back := accessPath(ch.ID)
	f := rq.r.PostForm
	level, err := authz.ParseLevel(f.Get("level"))
	if err != nil {
		return c.formOutcome(rq, err, back, "")
	}
	who, err := kernel.ParseID(f.Get("principal_id"))
	if err != nil {
		return c.formOutcome(rq, kernel.Invalid("principal_id", "Choose a person or an agent."), back, "")
	}
	var created bool
	where := "#" + ch.Name
	if f.Get("scope") == "space" {
		_, created, err = c.d.Authz.CreateSpaceGrant(rq.ctx(), rq.actor, ch.SpaceID, who, level)
		where = "the whole space"
	} else {
		_, created, err = c.d.Authz.CreateGrant(rq.ctx(), rq.actor, ch.ID, who, level)
	}
	ok := "Granted " + level.String() + " on " + where + "."
	if !created {
		ok = "The level on " + where + " is " + level.String() + " now."
	}
	return c.formOutcome(rq, err, back, ok)
}

// accessRevoke removes a grant on the channel or its space (authz.RevokeGrant, RevokeSpaceGrant).
func (c *Console) accessRevoke(rq *request) error {
	ch, err := c.channelOf(rq)
	if err != nil {
		return err
	}
	if c.d.Authz == nil {
		return kernel.ErrNotFound
	}
	f := rq.r.PostForm
	who, err := kernel.ParseID(f.Get("principal_id"))
	if err != nil {
		return kernel.ErrNotFound
	}
	where := "#" + ch.Name
	if f.Get("scope") == "space" {
		err = c.d.Authz.RevokeSpaceGrant(rq.ctx(), rq.actor, ch.SpaceID, who)
		where = "the whole space"
	} else {
		err = c.d.Authz.RevokeGrant(rq.ctx(), rq.actor, ch.ID, who)
	}
	return c.formOutcome(rq, err, accessPath(ch.ID), "Revoked the grant on "+where+".")
}
