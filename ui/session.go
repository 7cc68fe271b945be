package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"bothy.dev/bothy/ui/layouts"
)

// The console's cookies. All are HttpOnly. Behind https (server.public_url) the session and
// pre-session cookies carry the __Host- prefix, which a browser accepts only on a Secure cookie
// of Path=/ without Domain, set by this very host: no sibling subdomain can plant one of its
// own (a session of the attacker's, or a pre-session whose token it knows).
const (
	sessionCookieBase    = "bothy_session"
	preSessionCookieBase = "bothy_presession"
	hostPrefix           = "__Host-"
	flashCookieName      = "bothy_flash"
	csrfField            = "csrf_token"
)

// SessionCookieName is the name of the console's session cookie for the instance at
// publicURL (server.public_url). The gateway reads the same cookie for the chat view's script.
func SessionCookieName(publicURL string) string {
	if strings.HasPrefix(publicURL, "https://") {
		return hostPrefix + sessionCookieBase
	}
	return sessionCookieBase
}

// cookieName is base as this console names it: with the __Host- prefix behind https.
func (c *Console) cookieName(base string) string {
	if c.secure {
		return hostPrefix + base
	}
	return base
}

func (c *Console) sessionCookie(r *http.Request) string {
	ck, err := r.Cookie(c.cookieName(sessionCookieBase))
	if err != nil {
		return ""
	}
	return ck.Value
}

// setSession keeps the session token in a cookie that scripts cannot read, sent on same-site
// navigations only (Lax), until the session expires.
func (c *Console) setSession(w http.ResponseWriter, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(sessionCookieBase), Value: token, Path: "/", Expires: expires,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

func (c *Console) clearSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(sessionCookieBase), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

// CSRF tokens. Every form carries one in the hidden field csrf_token, and a POST whose field is
// not the token of the browser's cookies is refused: a page of another site can make the
// browser send the cookies, but cannot read them or this site's pages to fill in the field.
//
// A signed-in browser's token is an HMAC keyed with its session token, so it is bound to that
// session: a person's own token is worth nothing with another person's session, and a new
// session (a sign-in) has a new token. Keying with the session token itself needs no server
// key, which every node of a cluster would have to share; the session token is the secret the
// browser holds and the page never shows, and the HMAC does not reveal it.
//
// Before sign-in (the sign-in and setup forms) there is no session: the token is bound the
// same way to a random pre-session cookie, made on the browser's first visit (Strict, so it
// does not even travel with a cross-site post) and dropped at sign-in and sign-out, so that a
// pre-session token somebody learnt or planted dies with the sign-in.

// csrfTokenFor is the token of the forms of a browser whose session (or pre-session) secret is
// secret; purpose keeps the two kinds apart.
func csrfTokenFor(secret, purpose string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("bothy console csrf " + purpose))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// SessionCSRF is the CSRF token of the console's pages for the session token: the REST routes
// that the console's script calls with the session cookie take it in the Bothy-CSRF header.
func SessionCSRF(sessionToken string) string { return sessionCSRF(sessionToken) }

// sessionCSRF is the token of the forms of the browser signed in with the session token.
func sessionCSRF(sessionToken string) string { return csrfTokenFor(sessionToken, "session") }

// preSessionCSRF returns the token of a browser that is not signed in, making its pre-session
// cookie on its first visit.
func (c *Console) preSessionCSRF(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(c.cookieName(preSessionCookieBase)); err == nil && len(ck.Value) == preSessionLen {
		return csrfTokenFor(ck.Value, "pre-session")
	}
	b := make([]byte, 32)
	rand.Read(b)
	secret := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(preSessionCookieBase), Value: secret, Path: "/",
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteStrictMode})
	return csrfTokenFor(secret, "pre-session")
}

// dropPreSession removes the pre-session cookie at sign-in and sign-out; the next signed-out
// page makes a new one.
func (c *Console) dropPreSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(preSessionCookieBase), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteStrictMode})
}

// preSessionLen is the length of a pre-session secret (32 bytes, base64url); csrfTokenLen that
// of a token (an HMAC-SHA256, base64url).
const (
	preSessionLen = 43
	csrfTokenLen  = 43
)

func validCSRF(want, field string) bool {
	return len(want) == csrfTokenLen && subtle.ConstantTimeCompare([]byte(want), []byte(field)) == 1
}

// setFlash keeps f for the next page, which shows it once.
func (c *Console) setFlash(w http.ResponseWriter, f layouts.Flash) {
	v := f.Kind + ":" + base64.RawURLEncoding.EncodeToString([]byte(f.Text))
	http.SetCookie(w, &http.Cookie{Name: flashCookieName, Value: v, Path: Prefix, MaxAge: 60,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

// takeFlash reads the flash the previous action left and clears it.
func (c *Console) takeFlash(w http.ResponseWriter, r *http.Request) layouts.Flash {
	ck, err := r.Cookie(flashCookieName)
	if err != nil {
		return layouts.Flash{}
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
	kind, enc, _ := strings.Cut(ck.Value, ":")
	text, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || (kind != "ok" && kind != "error") || len(text) == 0 || len(text) > 500 {
		return layouts.Flash{}
	}
	return layouts.Flash{Kind: kind, Text: string(text)}
}

// leaveSecret keeps value (a new API token) for the next GET of path, which shows it once
// (takeSecret): the value never travels in a URL, only path gets the cookie, and scripts cannot
// read it. A value not read within five minutes is gone.
func (c *Console) leaveSecret(w http.ResponseWriter, name, path, value string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: base64.RawURLEncoding.EncodeToString([]byte(value)), Path: path,
		MaxAge: 300, HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteStrictMode})
}

// takeSecret reads what leaveSecret left for path and clears it, so that a reload shows nothing.
func (c *Console) takeSecret(w http.ResponseWriter, r *http.Request, name, path string) (string, bool) {
	ck, err := r.Cookie(name)
	if err != nil {
		return "", false
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: path, MaxAge: -1,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteStrictMode})
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(b) > 512 {
		return "", false
	}
	return string(b), true
}
