package ui

import (
	"net/http"
	"net/url"
	"strings"

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/appliance/clientaddr"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// routes registers every page. The owner's pages and the chat view register theirs in their
// own files.
func (c *Console) routes() {
	c.handle("GET /console/setup", anyone, c.setupPage)
	c.handle("POST /console/setup", anyone, c.setupSubmit)
	c.handle("GET /console/signin", anyone, c.signInPage)
	c.handle("POST /console/signin", anyone, c.signInSubmit)
	c.handle("POST /console/signout", signedIn, c.signOut)
	c.handle("GET /console/{$}", signedIn, c.home)
	c.handle("/console/", anyone, func(rq *request) error { c.notFound(rq); return nil })
	c.ownerRoutes()
	c.chatRoutes()
	c.commandRoutes() // agent_budget.go
	c.notifyRoutes()
	c.accountRoutes()
	c.appRoutes()
}

// setupPage shows the form of the first owner, or, when the instance has its owner already
// (the link was used, or its owner opens it signed in), says so instead; opened without a code
// it says where the setup link is.
func (c *Console) setupPage(rq *request) error {
	v := pages.SetupView{Chrome: c.chrome(rq, "Setup", ""), Code: rq.r.URL.Query().Get("code"), SignedIn: rq.user != nil}
	done, err := c.d.Identity.SetupComplete(rq.ctx())
	if err != nil {
		return err
	}
	v.Done = done || rq.user != nil
	v.NoCode = !v.Done && v.Code == ""
	return c.render(rq, http.StatusOK, pages.Setup(v))
}

// setupSubmit creates the first owner with the code of the setup link and signs them in.
func (c *Console) setupSubmit(rq *request) error {
	f := rq.r.PostForm
	v := pages.SetupView{Chrome: c.chrome(rq, "Setup", ""), Code: f.Get("code"), Handle: f.Get("handle"), DisplayName: f.Get("display_name")}
	if f.Get("password") != f.Get("password2") {
		v.Error = "The two passwords differ."
		return c.render(rq, http.StatusUnprocessableEntity, pages.Setup(v))
	}
	_, err := c.d.Identity.Setup(rq.ctx(), v.Code, v.Handle, v.DisplayName, f.Get("password"))
	switch {
	case err == nil:
	case refusal(err, identity.CodeSetupComplete):
		v.Done, v.SignedIn = true, rq.user != nil
		return c.render(rq, http.StatusConflict, pages.Setup(v))
	case refusal(err, kernel.CodeForbidden):
		v.Error = "This setup link is not valid. Use the link the server printed when it started."
		return c.render(rq, http.StatusForbidden, pages.Setup(v))
	case refusal(err, kernel.CodeValidation, kernel.CodeConflict):
		v.Error = formError(err)
		return c.render(rq, http.StatusUnprocessableEntity, pages.Setup(v))
	default:
		return err
	}
	res, err := c.d.Identity.Login(rq.ctx(), v.Handle, f.Get("password"), clientIP(rq.r))
	if err != nil {
		return err
	}
	c.signIn(rq, res)
	c.redirect(rq, Prefix, layouts.Flash{Kind: "ok", Text: "Welcome, " + res.User.DisplayName + ": you own this instance."})
	return nil
}

func (c *Console) signInPage(rq *request) error {
	if rq.user != nil {
		c.redirect(rq, safeNext(rq.r.URL.Query().Get("next")), layouts.Flash{})
		return nil
	}
	v := pages.SignInView{Chrome: c.chrome(rq, "Sign in", ""), Next: safeNext(rq.r.URL.Query().Get("next"))}
	done, err := c.d.Identity.SetupComplete(rq.ctx())
	if err != nil {
		return err
	}
	v.NoOwner = !done
	return c.render(rq, http.StatusOK, pages.SignIn(v))
}

// signInSubmit signs a person in with identity's Login, which limits failures per address and
// per handle exactly as for the API.
func (c *Console) signInSubmit(rq *request) error {
	f := rq.r.PostForm
	v := pages.SignInView{Chrome: c.chrome(rq, "Sign in", ""), Handle: f.Get("handle"), Next: safeNext(f.Get("next"))}
	res, err := c.d.Identity.Login(rq.ctx(), v.Handle, f.Get("password"), clientIP(rq.r))
	switch {
	case err == nil:
	case refusal(err, kernel.CodeUnauthenticated):
		v.Error = "Wrong handle or password."
		return c.render(rq, http.StatusUnauthorized, pages.SignIn(v))
	case refusal(err, kernel.CodeRateLimited):
		v.Error = "Too many failed sign-ins. Wait a few minutes and try again."
		return c.render(rq, http.StatusTooManyRequests, pages.SignIn(v))
	case refusal(err, kernel.CodeValidation):
		v.Error = formError(err)
		return c.render(rq, http.StatusUnprocessableEntity, pages.SignIn(v))
	default:
		return err
	}
	c.signIn(rq, res)
	c.redirect(rq, v.Next, layouts.Flash{})
	return nil
}

// signIn keeps the new session in its cookie and drops the pre-session one: the next page's
// forms carry the session's token, and the token of the sign-in form is dead.
func (c *Console) signIn(rq *request, res identity.LoginResult) {
	c.setSession(rq.w, res.Token, res.ExpiresAt)
	c.dropPreSession(rq.w)
}

func (c *Console) signOut(rq *request) error {
	if err := c.d.Identity.Logout(rq.ctx(), rq.actor); err != nil && !kernel.IsCode(err, kernel.CodeUnauthenticated) {
		return err
	}
	c.clearSession(rq.w)
	c.dropPreSession(rq.w)
	c.redirect(rq, "/console/signin", layouts.Flash{Kind: "ok", Text: "Signed out."})
	return nil
}

// home is the console's start: the overview for the owner, the chat for everyone else.
func (c *Console) home(rq *request) error {
	if !rq.user.IsOwner {
		c.redirect(rq, "/console/chat", layouts.Flash{})
		return nil
	}
	return c.overview(rq)
}

// safeNext keeps a post-sign-in target inside the console, so the sign-in cannot be made to send
// a person to another site.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.IsAbs() || u.Host != "" || !strings.HasPrefix(u.Path, Prefix) || strings.Contains(next, "\\") {
		return Prefix
	}
	return u.RequestURI()
}

// clientIP is the client's address as the API's login sees it: the peer, or behind a trusted
// proxy the client it names (appliance/clientaddr, decided by the router).
func clientIP(r *http.Request) string {
	return clientaddr.From(r).IP
}
