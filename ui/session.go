package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"bothy.dev/bothy/ui/layouts"
)

// The console's cookies. All are HttpOnly and scoped to the console (the session to the whole
// origin's /console/ and the gateway upgrade, which reads it for the chat view's script).
const (
	sessionCookieName = "bothy_session"
	csrfCookieName    = "bothy_csrf"
	flashCookieName   = "bothy_flash"
	csrfField         = "csrf_token"
)

func sessionCookie(r *http.Request) string {
	ck, err := r.Cookie(sessionCookieName)
	if err != nil {
		return ""
	}
	return ck.Value
}

// setSession keeps the session token in a cookie that scripts cannot read, sent on same-site
// navigations only (Lax), until the session expires.
func (c *Console) setSession(w http.ResponseWriter, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookieName, Value: token, Path: "/", Expires: expires,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

func (c *Console) clearSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

// csrfToken returns the browser's CSRF token, made and set on its first visit. Forms carry it in
// the hidden field csrf_token, and a POST whose field does not equal the cookie is refused: a
// page of another site can make the browser send the cookie, but cannot read it to fill in the
// field (double submit). The cookie is Strict, so it does not even travel with a cross-site post.
func (c *Console) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookieName); err == nil && len(ck.Value) == csrfTokenLen {
		return ck.Value
	}
	b := make([]byte, 32)
	rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookieName, Value: tok, Path: Prefix,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteStrictMode})
	return tok
}

// csrfTokenLen is the length of a token as csrfToken makes it (32 bytes, base64url).
const csrfTokenLen = 43

func validCSRF(cookie, field string) bool {
	return len(cookie) == csrfTokenLen && subtle.ConstantTimeCompare([]byte(cookie), []byte(field)) == 1
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
