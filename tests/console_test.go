package tests

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// browser is a console visitor without JavaScript: a cookie jar, no automatic redirects (the
// tests look at each answer), and the CSRF token of the last page it read.
type browser struct {
	tb   testing.TB
	base string
	hc   *http.Client
	csrf string
}

func newBrowser(tb testing.TB, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{tb: tb, base: base, hc: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// consolePage is one answer of the console.
type consolePage struct {
	status int
	header http.Header
	body   string
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func (b *browser) get(path string) consolePage {
	b.tb.Helper()
	return b.send(http.MethodGet, path, nil)
}

// post sends a form with the browser's CSRF token (unless form sets csrf_token itself).
func (b *browser) post(path string, form url.Values) consolePage {
	b.tb.Helper()
	if _, ok := form["csrf_token"]; !ok {
		form.Set("csrf_token", b.csrf)
	}
	return b.send(http.MethodPost, path, form)
}

func (b *browser) send(method, path string, form url.Values) consolePage {
	b.tb.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.tb.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.tb.Fatal(err)
	}
	if m := csrfField.FindStringSubmatch(string(raw)); m != nil {
		b.csrf = m[1]
	}
	return consolePage{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

func (p consolePage) want(tb testing.TB, status int) consolePage {
	tb.Helper()
	if p.status != status {
		tb.Fatalf("status %d, want %d: %.600s", p.status, status, p.body)
	}
	return p
}

// location is where a redirect leads.
func (p consolePage) location() string { return p.header.Get("Location") }

// has reports whether the page shows the element with data-testid id.
func (p consolePage) has(id string) bool { return strings.Contains(p.body, `data-testid="`+id+`"`) }

// TestConsoleSignIn is the console's setup and sign-in without a browser: the bare address leads to
// the console, the printed link to the setup page, which creates the owner and signs them in;
// sign-out, sign-in, a form without its CSRF token, failed sign-ins and the headers of a page.
func TestConsoleSignIn(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		srv := mustStart(t, eng)
		b := newBrowser(t, srv.public)
		const pw = "correct horse battery"

		t.Run("the bare address leads to the console, and the console to the sign-in", func(t *testing.T) {
			if p := b.get("/").want(t, http.StatusSeeOther); p.location() != "/console/" {
				t.Fatalf("/ redirects to %q", p.location())
			}
			if p := b.get("/console/").want(t, http.StatusSeeOther); !strings.HasPrefix(p.location(), "/console/signin") {
				t.Fatalf("/console/ redirects to %q", p.location())
			}
		})

		t.Run("a page has a strict content security policy and is not cached", func(t *testing.T) {
			p := b.get("/console/signin").want(t, http.StatusOK)
			csp := p.header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-inline") || p.header.Get("Cache-Control") != "no-store" {
				t.Errorf("CSP %q, Cache-Control %q", csp, p.header.Get("Cache-Control"))
			}
		})

		t.Run("the setup refuses two different passwords and then creates the owner", func(t *testing.T) {
			u, _ := url.Parse(srv.setupLink)
			b.get(u.RequestURI()).want(t, http.StatusOK)
			p := b.post("/console/setup", url.Values{"code": {srv.setupCode}, "handle": {"olga"}, "display_name": {"Olga"},
				"password": {pw}, "password2": {pw + "!"}}).want(t, http.StatusUnprocessableEntity)
			if !p.has("form-error") || !strings.Contains(p.body, `value="olga"`) {
				t.Fatalf("no error, or the handle was lost: %.600s", p.body)
			}
			p = b.post("/console/setup", url.Values{"code": {srv.setupCode}, "handle": {"olga"}, "display_name": {"Olga"},
				"password": {pw}, "password2": {pw}}).want(t, http.StatusSeeOther)
			var session *http.Cookie
			for _, c := range (&http.Response{Header: p.header}).Cookies() {
				if c.Name == "bothy_session" {
					session = c
				}
			}
			if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode || session.Secure {
				t.Fatalf("session cookie %+v", session)
			}
			p = b.get(p.location()).want(t, http.StatusOK)
			if !p.has("overview") || !p.has("flash") {
				t.Fatalf("after the setup: %.600s", p.body)
			}
			if p := b.get(u.RequestURI()); b.post("/console/setup", url.Values{"code": {srv.setupCode}, "handle": {"mallory"},
				"display_name": {"M"}, "password": {pw}, "password2": {pw}}).status != http.StatusConflict || p.status != http.StatusOK {
				t.Fatal("a second setup was not refused with 409")
			}
		})

		t.Run("a form posted without the CSRF token is refused and changes nothing", func(t *testing.T) {
			p := b.post("/console/signout", url.Values{"csrf_token": {""}}).want(t, http.StatusForbidden)
			if !p.has("error-page") {
				t.Fatalf("%.600s", p.body)
			}
			b.get("/console/").want(t, http.StatusOK) // still signed in
			other := newBrowser(t, srv.public)
			other.get("/console/signin")
			other.csrf = b.csrf // another browser's token does not match this browser's cookie
			other.post("/console/signin", url.Values{"handle": {"olga"}, "password": {pw}}).want(t, http.StatusForbidden)
		})

		t.Run("sign-out ends the session; sign-in opens one and goes where it was asked", func(t *testing.T) {
			if p := b.post("/console/signout", url.Values{}).want(t, http.StatusSeeOther); p.location() != "/console/signin" {
				t.Fatalf("signed out to %q", p.location())
			}
			b.get("/console/").want(t, http.StatusSeeOther)
			b.get("/console/signin?next=/console/")
			p := b.post("/console/signin", url.Values{"handle": {"olga"}, "password": {"wrong password"}, "next": {"/console/"}}).
				want(t, http.StatusUnauthorized)
			if !p.has("form-error") {
				t.Fatalf("%.600s", p.body)
			}
			p = b.post("/console/signin", url.Values{"handle": {"olga"}, "password": {pw}, "next": {"https://evil.example/"}}).
				want(t, http.StatusSeeOther)
			if p.location() != "/console/" {
				t.Fatalf("signed in to %q: the next target must stay in the console", p.location())
			}
			b.get("/console/").want(t, http.StatusOK)
		})

		t.Run("a person changes their password on their account page; their other sessions end", func(t *testing.T) {
			other := newBrowser(t, srv.public)
			other.get("/console/signin")
			other.post("/console/signin", url.Values{"handle": {"olga"}, "password": {pw}}).want(t, http.StatusSeeOther)
			other.get("/console/").want(t, http.StatusOK)
			if p := b.get("/console/account").want(t, http.StatusOK); !p.has("password-form") {
				t.Fatalf("%.600s", p.body)
			}
			const next = "a new horse battery"
			p := b.post("/console/account/password", url.Values{"current_password": {"wrong one"}, "new_password": {next},
				"new_password2": {next}}).want(t, http.StatusUnprocessableEntity)
			if !p.has("form-error") {
				t.Fatalf("%.600s", p.body)
			}
			b.post("/console/account/password", url.Values{"current_password": {pw}, "new_password": {next},
				"new_password2": {next + "!"}}).want(t, http.StatusUnprocessableEntity)
			b.post("/console/account/password", url.Values{"current_password": {pw}, "new_password": {next},
				"new_password2": {next}}).want(t, http.StatusSeeOther)
			if p := b.get("/console/account").want(t, http.StatusOK); !p.has("flash") {
				t.Fatalf("no flash: %.600s", p.body)
			}
			other.get("/console/").want(t, http.StatusSeeOther) // signed out
			c := newBrowser(t, srv.public)
			c.get("/console/signin")
			c.post("/console/signin", url.Values{"handle": {"olga"}, "password": {pw}}).want(t, http.StatusUnauthorized)
			c.post("/console/signin", url.Values{"handle": {"olga"}, "password": {next}}).want(t, http.StatusSeeOther)
		})

		t.Run("failed sign-ins are limited like the API's", func(t *testing.T) {
			c := newBrowser(t, srv.public)
			c.get("/console/signin")
			limited := false
			for i := 0; i < 15 && !limited; i++ {
				limited = c.post("/console/signin", url.Values{"handle": {"olga"}, "password": {"nope nope nope"}}).status == http.StatusTooManyRequests
			}
			if !limited {
				t.Fatal("15 failed sign-ins were never limited")
			}
		})

		t.Run("an unknown console page is the 404 page", func(t *testing.T) {
			if p := b.get("/console/no/such/page").want(t, http.StatusNotFound); !p.has("error-page") {
				t.Fatalf("%.600s", p.body)
			}
		})
	})
}

// TestConsoleFirstContact is what a newcomer meets before and right after the setup: a sign-in
// page that says the instance has no owner yet and where the setup link is, a setup page that
// says so when it is opened without the link's code, and once the owner exists a setup link
// that says it has been used instead of showing the form again; and the icon of the pages.
func TestConsoleFirstContact(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		srv := mustStart(t, eng)
		link, err := url.Parse(srv.setupLink)
		if err != nil {
			t.Fatal(err)
		}

		t.Run("before the setup the sign-in page says there is no owner yet and where the link is", func(t *testing.T) {
			p := newBrowser(t, srv.public).get("/console/signin").want(t, http.StatusOK)
			if !p.has("setup-hint") || !p.has("signin-form") {
				t.Fatalf("no setup hint on the sign-in page: %.900s", p.body)
			}
			for _, want := range []string{"no owner yet", "bothy serve", "/console/setup?code=", "bothy setup bootstrap-owner"} {
				if !strings.Contains(p.body, want) {
					t.Errorf("the hint does not say %q", want)
				}
			}
		})

		t.Run("the setup page without a code says where the link is instead of showing a form that cannot work", func(t *testing.T) {
			p := newBrowser(t, srv.public).get("/console/setup").want(t, http.StatusOK)
			if !p.has("setup-hint") || p.has("setup-form") {
				t.Fatalf("%.900s", p.body)
			}
		})

		t.Run("the printed link shows the form", func(t *testing.T) {
			if p := newBrowser(t, srv.public).get(link.RequestURI()).want(t, http.StatusOK); !p.has("setup-form") || p.has("setup-hint") {
				t.Fatalf("%.900s", p.body)
			}
		})

		owner := newBrowser(t, srv.public)
		owner.get(link.RequestURI())
		owner.post("/console/setup", url.Values{"code": {srv.setupCode}, "handle": {"olga"}, "display_name": {"Olga"},
			"password": {ownerPassword}, "password2": {ownerPassword}}).want(t, http.StatusSeeOther)

		t.Run("once the owner exists the sign-in page has no hint", func(t *testing.T) {
			if p := newBrowser(t, srv.public).get("/console/signin").want(t, http.StatusOK); p.has("setup-hint") || !p.has("signin-form") {
				t.Fatalf("%.900s", p.body)
			}
		})

		t.Run("the used link says it has been used instead of showing the form", func(t *testing.T) {
			p := newBrowser(t, srv.public).get(link.RequestURI()).want(t, http.StatusOK)
			if !p.has("setup-done") || p.has("setup-form") || !strings.Contains(p.body, `href="/console/signin"`) {
				t.Fatalf("%.900s", p.body)
			}
		})

		t.Run("the owner opening the link signed in is told the setup is complete", func(t *testing.T) {
			p := owner.get(link.RequestURI()).want(t, http.StatusOK)
			if !p.has("setup-done") || p.has("setup-form") || !strings.Contains(p.body, "you are signed in") {
				t.Fatalf("%.900s", p.body)
			}
		})

		t.Run("every page links its icon, served under its hashed name and at /favicon.ico", func(t *testing.T) {
			p := newBrowser(t, srv.public).get("/console/signin").want(t, http.StatusOK)
			m := regexp.MustCompile(`<link rel="icon" type="image/svg\+xml" href="(/assets/favicon\.[0-9a-f]{8}\.svg)"`).FindStringSubmatch(p.body)
			if m == nil {
				t.Fatalf("no icon link in the head: %.600s", p.body)
			}
			for path, cache := range map[string]string{m[1]: "immutable", "/favicon.ico": "max-age=86400"} {
				resp, err := http.Get(srv.public + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" ||
					!strings.Contains(resp.Header.Get("Cache-Control"), cache) || !strings.Contains(string(body), "<svg") {
					t.Errorf("GET %s: %d %s %q %.80s", path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), body)
				}
			}
		})
	})
}

// TestConsoleCSRFIsBoundToTheSession: the token of a console form is bound to the session of
// the browser it was given to (before sign-in, to the browser's pre-session cookie), so that
// one person's token is refused with another's session and a sign-in leaves the token of the
// sign-in form dead; behind https the session and pre-session cookies carry the __Host- prefix.
func TestConsoleCSRFIsBoundToTheSession(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		in.mustCreateUser(t, "bob")
		signIn := func(handle, password string) *browser {
			b := newBrowser(t, in.srv.public)
			b.get("/console/signin").want(t, http.StatusOK)
			b.post("/console/signin", url.Values{"handle": {handle}, "password": {password}}).want(t, http.StatusSeeOther)
			b.get("/console/chat").want(t, http.StatusOK)
			return b
		}

		t.Run("one person's token and cookies are refused with another person's session", func(t *testing.T) {
			owner, bob := signIn("owner", ownerPassword), signIn("bob", "bob-password-1")
			// What an attacker who is a person of the instance holds: their own token and every
			// cookie but the session, planted next to the victim's session.
			cookies := []string{"bothy_session=" + jarCookie(t, bob, "bothy_session")}
			u, _ := url.Parse(in.srv.public + "/console/")
			for _, c := range owner.hc.Jar.Cookies(u) {
				if c.Name != "bothy_session" && c.Name != "bothy_flash" {
					cookies = append(cookies, c.Name+"="+c.Value)
				}
			}
			resp, body := rawConsole(t, http.MethodPost, in.srv.public+"/console/signout", strings.Join(cookies, "; "),
				url.Values{"csrf_token": {owner.csrf}})
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("the owner's token with bob's session answered %d: %.300s", resp.StatusCode, body)
			}
			bob.get("/console/chat").want(t, http.StatusOK) // still signed in
		})

		t.Run("a sign-in gives the browser a new token and the sign-in form's token dies", func(t *testing.T) {
			b := newBrowser(t, in.srv.public)
			b.get("/console/signin").want(t, http.StatusOK)
			before := b.csrf
			b.post("/console/signin", url.Values{"handle": {"bob"}, "password": {"bob-password-1"}}).want(t, http.StatusSeeOther)
			b.get("/console/chat").want(t, http.StatusOK)
			after := b.csrf
			if before == "" || after == before {
				t.Fatalf("the token of the sign-in form %q is still the token after the sign-in %q", before, after)
			}
			b.post("/console/signout", url.Values{"csrf_token": {before}}).want(t, http.StatusForbidden)
			b.post("/console/signout", url.Values{"csrf_token": {after}}).want(t, http.StatusSeeOther)
			b.get("/console/signin").want(t, http.StatusOK)
			if b.csrf == before || b.csrf == after {
				t.Fatal("after the sign-out the sign-in form has an old token")
			}
		})

		t.Run("a form sent after its session ended leads to the sign-in and changes nothing", func(t *testing.T) {
			b := signIn("bob", "bob-password-1")
			as(in.srv, jarCookie(t, b, "bothy_session")).do(t, http.MethodPost, api("auth", "logout"), nil).want(t, http.StatusNoContent)
			p := b.post("/console/tokens", url.Values{"name": {"late"}}).want(t, http.StatusSeeOther)
			if !strings.HasPrefix(p.location(), "/console/signin") {
				t.Fatalf("redirected to %q", p.location())
			}
		})
	})
}

// TestConsoleCookiesBehindHTTPS: with an https server.public_url the session and pre-session
// cookies are __Host- cookies (Secure, Path=/, no Domain), which no other host can plant, and a
// session cookie of the plain name is not taken.
func TestConsoleCookiesBehindHTTPS(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng, "--set", "server.public_url=https://chat.example")
		base := in.srv.public
		hostCookie := func(t *testing.T, resp *http.Response, name string) *http.Cookie {
			t.Helper()
			for _, c := range resp.Cookies() {
				if c.Name == strings.TrimPrefix(name, "__Host-") && c.Name != name {
					t.Fatalf("a cookie of the plain name %s was set", c.Name)
				}
				if c.Name == name {
					if !c.Secure || !c.HttpOnly || c.Path != "/" || c.Domain != "" {
						t.Fatalf("cookie %+v: a __Host- cookie must be Secure, Path=/ and have no Domain", c)
					}
					return c
				}
			}
			t.Fatalf("no cookie %s in %v", name, resp.Header.Values("Set-Cookie"))
			return nil
		}

		resp, body := rawConsole(t, http.MethodGet, base+"/console/signin", "", nil)
		pre := hostCookie(t, resp, "__Host-bothy_presession")
		m := csrfField.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no token on the sign-in page: %.300s", body)
		}
		resp, body = rawConsole(t, http.MethodPost, base+"/console/signin", pre.Name+"="+pre.Value,
			url.Values{"csrf_token": {m[1]}, "handle": {"owner"}, "password": {ownerPassword}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-in answered %d: %.300s", resp.StatusCode, body)
		}
		session := hostCookie(t, resp, "__Host-bothy_session")
		if session.SameSite != http.SameSiteLaxMode || session.Value == "" {
			t.Fatalf("session cookie %+v", session)
		}
		if resp, _ := rawConsole(t, http.MethodGet, base+"/console/", session.Name+"="+session.Value, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("the __Host- session cookie does not open the console: %d", resp.StatusCode)
		}
		if resp, _ := rawConsole(t, http.MethodGet, base+"/console/", "bothy_session="+session.Value, nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("a session cookie of the plain name was taken behind https: %d", resp.StatusCode)
		}
	})
}

// jarCookie is the value of the browser's cookie name for the console.
func jarCookie(tb testing.TB, b *browser, name string) string {
	tb.Helper()
	u, _ := url.Parse(b.base + "/console/")
	for _, c := range b.hc.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	tb.Fatalf("the browser has no cookie %s", name)
	return ""
}

// rawConsole sends one request with exactly the Cookie header given (none when empty) and no
// redirects followed: for the cookies a browser's jar would not send over plain http.
func rawConsole(tb testing.TB, method, target, cookie string, form url.Values) (*http.Response, string) {
	tb.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		tb.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp, string(raw)
}
