package ui

import (
	"net/http"
	"strings"

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// newTokenCookie carries a token just created to the page after the redirect, which shows it
// once and clears it: the value never travels in a URL, and only this page's path gets it.
const (
	newTokenCookie = "bothy_new_token"
	tokensPath     = "/console/tokens"
)

// tokenRoutes registers every signed-in person's own API tokens.
func (c *Console) tokenRoutes() {
	c.handle("GET "+tokensPath, signedIn, c.tokensPage)
	c.handle("POST "+tokensPath, signedIn, c.tokenCreate)
	c.handle("POST "+tokensPath+"/{id}/revoke", signedIn, c.tokenRevoke)
}

func (c *Console) tokensPage(rq *request) error {
	v := pages.TokensView{Chrome: c.chrome(rq, "API tokens", "tokens"), Created: c.takeNewToken(rq)}
	return c.renderTokens(rq, http.StatusOK, v)
}

func (c *Console) renderTokens(rq *request, status int, v pages.TokensView) error {
	ts, err := c.d.Identity.ListTokens(rq.ctx(), rq.actor)
	if err != nil {
		return err
	}
	for _, t := range ts {
		row := pages.TokenRow{ID: string(t.ID), Name: t.Name, Created: fmtDate(t.CreatedAt), LastUsed: "never"}
		if t.LastUsedAt != nil {
			row.LastUsed = fmtDate(*t.LastUsedAt)
		}
		v.Tokens = append(v.Tokens, row)
	}
	return c.render(rq, status, pages.Tokens(v))
}

func (c *Console) tokenCreate(rq *request) error {
	name := rq.r.PostForm.Get("name")
	t, value, err := c.d.Identity.CreateToken(rq.ctx(), rq.actor, name)
	if err != nil {
		if !refusal(err, kernel.CodeValidation) {
			return err
		}
		v := pages.TokensView{Chrome: c.chrome(rq, "API tokens", "tokens"), Name: name, Error: formError(err)}
		return c.renderTokens(rq, http.StatusUnprocessableEntity, v)
	}
	c.leaveSecret(rq.w, newTokenCookie, tokensPath, t.Name+"\n"+value)
	c.redirect(rq, tokensPath, layouts.Flash{Kind: "ok", Text: "Token " + t.Name + " created."})
	return nil
}

// takeNewToken reads the token the last create left and clears it, so a reload does not show it
// again.
func (c *Console) takeNewToken(rq *request) *pages.CreatedToken {
	kept, ok := c.takeSecret(rq.w, rq.r, newTokenCookie, tokensPath)
	name, value, cut := strings.Cut(kept, "\n")
	if !ok || !cut || !strings.HasPrefix(value, identity.APITokenPrefix) {
		return nil
	}
	return &pages.CreatedToken{Name: name, Value: value}
}

func (c *Console) tokenRevoke(rq *request) error {
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	if err := c.d.Identity.RevokeToken(rq.ctx(), rq.actor, id); err != nil {
		return err
	}
	c.redirect(rq, tokensPath, layouts.Flash{Kind: "ok", Text: "Token revoked: it no longer works."})
	return nil
}
