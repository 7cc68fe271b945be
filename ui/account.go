package ui

import (
	"net/http"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// accountRoutes registers the signed-in person's own page.
func (c *Console) accountRoutes() {
	c.handle("GET /console/account", signedIn, c.accountPage)
	c.handle("POST /console/account/password", signedIn, c.accountPassword)
	c.pushRoutes()
}

func (c *Console) accountPage(rq *request) error {
	return c.renderAccount(rq, http.StatusOK, "")
}

func (c *Console) renderAccount(rq *request, status int, errText string) error {
	v := pages.AccountView{Chrome: c.chrome(rq, "Your account", "account"), Handle: rq.user.Handle,
		DisplayName: rq.user.DisplayName, IsOwner: rq.user.IsOwner, Error: errText}
	var err error
	if v.Push, err = c.pushDevices(rq); err != nil {
		return err
	}
	return c.render(rq, status, pages.Account(v))
}

// accountPassword changes the person's own password (identity.ChangePassword): this session stays
// signed in, the others end.
func (c *Console) accountPassword(rq *request) error {
	f := rq.r.PostForm
	if f.Get("new_password") != f.Get("new_password2") {
		return c.renderAccount(rq, http.StatusUnprocessableEntity, "The two new passwords differ.")
	}
	err := c.d.Identity.ChangePassword(rq.ctx(), rq.actor, f.Get("current_password"), f.Get("new_password"))
	if err != nil {
		if !refusal(err, kernel.CodeValidation, kernel.CodeRateLimited) {
			return err
		}
		status := http.StatusUnprocessableEntity
		if kernel.IsCode(err, kernel.CodeRateLimited) {
			status = http.StatusTooManyRequests
		}
		return c.renderAccount(rq, status, formError(err))
	}
	c.redirect(rq, "/console/account", layouts.Flash{Kind: "ok", Text: "Password changed. Your other sessions were signed out."})
	return nil
}
