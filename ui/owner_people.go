package ui

import (
	"net/http"
	"net/url"

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// peoplePageSize is how many people one page of the list shows.
const peoplePageSize = 100

// peopleRoutes registers the owner's people: list, add, disable, enable and a new password,
// each through identity's use case with the owner as the actor, as the REST API does.
func (c *Console) peopleRoutes() {
	c.handle("GET /console/people", ownerOnly, c.peoplePage)
	c.handle("POST /console/people", ownerOnly, c.personAdd)
	c.handle("POST /console/people/{id}/disable", ownerOnly, c.personDisable)
	c.handle("POST /console/people/{id}/enable", ownerOnly, c.personEnable)
	c.handle("POST /console/people/{id}/password", ownerOnly, c.personPassword)
}

func (c *Console) peoplePage(rq *request) error {
	return c.renderPeople(rq, http.StatusOK, pages.NewPersonForm{})
}

// renderPeople shows the page of people after ?after= with the add form in state f.
func (c *Console) renderPeople(rq *request, status int, f pages.NewPersonForm) error {
	var after kernel.ID
	if a := rq.r.URL.Query().Get("after"); a != "" {
		id, err := kernel.ParseID(a)
		if err != nil {
			return kernel.ErrNotFound
		}
		after = id
	}
	us, err := c.d.Identity.ListUsers(rq.ctx(), rq.actor, after, peoplePageSize)
	if err != nil {
		return err
	}
	v := pages.PeopleView{Chrome: c.chrome(rq, "People", "people"), Form: f}
	for _, u := range us {
		v.People = append(v.People, pages.PersonRow{ID: string(u.ID), Handle: u.Handle, DisplayName: u.DisplayName,
			IsOwner: u.IsOwner, Active: u.Status == identity.StatusActive, Self: u.ID == rq.actor.ID, Created: fmtDate(u.CreatedAt)})
	}
	if len(us) == peoplePageSize {
		v.NextHref = "/console/people?after=" + url.QueryEscape(string(us[len(us)-1].ID))
	}
	return c.render(rq, status, pages.People(v))
}

func (c *Console) personAdd(rq *request) error {
	f := rq.r.PostForm
	form := pages.NewPersonForm{Handle: f.Get("handle"), DisplayName: f.Get("display_name")}
	u, err := c.d.Identity.CreateUser(rq.ctx(), rq.actor, form.Handle, form.DisplayName, f.Get("password"))
	if err != nil {
		if !refusal(err, kernel.CodeValidation, kernel.CodeConflict) {
			return err
		}
		form.Error = formError(err)
		return c.renderPeople(rq, http.StatusUnprocessableEntity, form)
	}
	c.redirect(rq, "/console/people", layouts.Flash{Kind: "ok", Text: u.DisplayName + " (@" + u.Handle + ") can sign in now."})
	return nil
}

func (c *Console) personDisable(rq *request) error {
	return c.personAction(rq, func(id kernel.ID) (identity.User, error) { return c.d.Identity.DisableUser(rq.ctx(), rq.actor, id) },
		" is disabled: their sessions and tokens have stopped.")
}

func (c *Console) personEnable(rq *request) error {
	return c.personAction(rq, func(id kernel.ID) (identity.User, error) { return c.d.Identity.EnableUser(rq.ctx(), rq.actor, id) },
		" is enabled and can sign in again.")
}

func (c *Console) personPassword(rq *request) error {
	pw := rq.r.PostForm.Get("password")
	return c.personAction(rq, func(id kernel.ID) (identity.User, error) {
		return c.d.Identity.ResetPassword(rq.ctx(), rq.actor, id, pw)
	},
		" has a new password; their sessions have ended.")
}

// personAction runs one change of a person from the list and goes back to it: a refusal the
// owner can understand (the last owner, a short password) as an error flash, what does not
// exist as the 404 page.
func (c *Console) personAction(rq *request, do func(kernel.ID) (identity.User, error), done string) error {
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	u, err := do(id)
	if err != nil {
		if !refusal(err, kernel.CodeValidation, identity.CodeLastOwner, kernel.CodeConflict) {
			return err
		}
		c.redirect(rq, "/console/people", layouts.Flash{Kind: "error", Text: formError(err)})
		return nil
	}
	c.redirect(rq, "/console/people", layouts.Flash{Kind: "ok", Text: "@" + u.Handle + done})
	return nil
}
