package ui

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/ui/layouts"
)

func cookieNamed(rec *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestCookiesAreSecureBehindHTTPS(t *testing.T) {
	for _, tc := range []struct {
		public string
		secure bool
		prefix string
	}{{"https://chat.example", true, "__Host-"}, {"http://127.0.0.1:8080", false, ""}, {"", false, ""}} {
		c := New(Deps{Identity: &identity.Service{}, PublicURL: tc.public})
		rec := httptest.NewRecorder()
		c.setSession(rec, "tok", c.d.Clock.Now().Add(60e9))
		c.preSessionCSRF(rec, httptest.NewRequest("GET", "/console/", nil))
		c.setFlash(rec, layouts.Flash{Kind: "ok", Text: "hi"})
		session, preSession := tc.prefix+"bothy_session", tc.prefix+"bothy_presession"
		for _, name := range []string{session, preSession, flashCookieName} {
			ck := cookieNamed(rec, name)
			if ck == nil || ck.Secure != tc.secure || !ck.HttpOnly {
				t.Errorf("public %q: cookie %s = %+v, want Secure %v and HttpOnly", tc.public, name, ck, tc.secure)
			}
		}
		// A browser takes a __Host- cookie only when it is Secure, has Path=/ and no Domain.
		for _, name := range []string{session, preSession} {
			if ck := cookieNamed(rec, name); ck == nil || ck.Path != "/" || ck.Domain != "" {
				t.Errorf("public %q: cookie %s = %+v, want Path=/ and no Domain", tc.public, name, ck)
			}
		}
		if ck := cookieNamed(rec, session); ck.SameSite != http.SameSiteLaxMode {
			t.Errorf("session cookie %+v", ck)
		}
		if ck := cookieNamed(rec, preSession); ck.SameSite != http.SameSiteStrictMode {
			t.Errorf("pre-session cookie %+v", ck)
		}
		if got := SessionCookieName(tc.public); got != session {
			t.Errorf("SessionCookieName(%q) = %q, want %q", tc.public, got, session)
		}
	}
}

func TestCSRFTokens(t *testing.T) {
	c := New(Deps{Identity: &identity.Service{}})

	t.Run("a browser keeps its pre-session token until the cookie changes", func(t *testing.T) {
		rec := httptest.NewRecorder()
		tok := c.preSessionCSRF(rec, httptest.NewRequest("GET", "/console/", nil))
		ck := cookieNamed(rec, "bothy_presession")
		if len(tok) != csrfTokenLen || ck == nil || ck.Value == tok {
			t.Fatalf("token %q, cookie %+v: the token must be derived from the cookie, not be it", tok, ck)
		}
		req := httptest.NewRequest("GET", "/console/", nil)
		req.AddCookie(ck)
		rec = httptest.NewRecorder()
		if again := c.preSessionCSRF(rec, req); again != tok || cookieNamed(rec, "bothy_presession") != nil {
			t.Fatalf("a known browser got a new token %q", again)
		}
		other := c.preSessionCSRF(httptest.NewRecorder(), httptest.NewRequest("GET", "/console/", nil))
		if other == tok {
			t.Fatal("two browsers got the same pre-session token")
		}
	})

	t.Run("a session's token is bound to that session", func(t *testing.T) {
		a, b := sessionCSRF("session-token-of-ada"), sessionCSRF("session-token-of-bob")
		if len(a) != csrfTokenLen || a == b || a != sessionCSRF("session-token-of-ada") {
			t.Fatalf("tokens %q and %q", a, b)
		}
		if a == csrfTokenFor("session-token-of-ada", "pre-session") {
			t.Fatal("a session token and a pre-session cookie of the same value give the same token")
		}
	})

	t.Run("dropping the pre-session expires its cookie", func(t *testing.T) {
		rec := httptest.NewRecorder()
		c.dropPreSession(rec)
		if ck := cookieNamed(rec, "bothy_presession"); ck == nil || ck.MaxAge >= 0 || ck.Path != "/" {
			t.Fatalf("cookie %+v", ck)
		}
	})

	tok := sessionCSRF("s")
	for _, tc := range []struct {
		want, field string
		ok          bool
	}{
		{tok, tok, true},
		{tok, "", false},
		{tok, tok[:len(tok)-1] + "A", tok[len(tok)-1] == 'A'},
		{"", "", false},
		{"short", "short", false},
	} {
		if got := validCSRF(tc.want, tc.field); got != tc.ok {
			t.Errorf("validCSRF(%q, %q) = %v", tc.want, tc.field, got)
		}
	}
}

func TestFlashIsReadOnceAndTamperingShowsNothing(t *testing.T) {
	c := New(Deps{Identity: &identity.Service{}})
	rec := httptest.NewRecorder()
	c.setFlash(rec, layouts.Flash{Kind: "ok", Text: "Channel created."})
	req := httptest.NewRequest("GET", "/console/", nil)
	req.AddCookie(cookieNamed(rec, flashCookieName))
	rec = httptest.NewRecorder()
	if f := c.takeFlash(rec, req); f.Kind != "ok" || f.Text != "Channel created." {
		t.Fatalf("flash %+v", f)
	}
	if ck := cookieNamed(rec, flashCookieName); ck == nil || ck.MaxAge >= 0 {
		t.Fatalf("the flash was not cleared: %+v", ck)
	}
	for _, v := range []string{"evil:SGk", "ok:not base64!", "ok"} {
		req := httptest.NewRequest("GET", "/console/", nil)
		req.AddCookie(&http.Cookie{Name: flashCookieName, Value: v})
		if f := c.takeFlash(httptest.NewRecorder(), req); f != (layouts.Flash{}) {
			t.Errorf("flash cookie %q showed %+v", v, f)
		}
	}
}

func TestSafeNextStaysInTheConsole(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "/console/",
		"/console/people":               "/console/people",
		"/console/threads/x?before=y":   "/console/threads/x?before=y",
		"https://evil.example/console/": "/console/",
		"//evil.example/console/":       "/console/",
		"/api/v1/me":                    "/console/",
		"/console/\\evil":               "/console/",
		"javascript:alert(1)":           "/console/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
