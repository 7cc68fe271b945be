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
	}{{"https://chat.example", true}, {"http://127.0.0.1:8080", false}, {"", false}} {
		c := New(Deps{Identity: &identity.Service{}, PublicURL: tc.public})
		rec := httptest.NewRecorder()
		c.setSession(rec, "tok", c.d.Clock.Now().Add(60e9))
		c.csrfToken(rec, httptest.NewRequest("GET", "/console/", nil))
		c.setFlash(rec, layouts.Flash{Kind: "ok", Text: "hi"})
		for _, name := range []string{sessionCookieName, csrfCookieName, flashCookieName} {
			ck := cookieNamed(rec, name)
			if ck == nil || ck.Secure != tc.secure || !ck.HttpOnly {
				t.Errorf("public %q: cookie %s = %+v, want Secure %v and HttpOnly", tc.public, name, ck, tc.secure)
			}
		}
		if ck := cookieNamed(rec, sessionCookieName); ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" {
			t.Errorf("session cookie %+v", ck)
		}
		if ck := cookieNamed(rec, csrfCookieName); ck.SameSite != http.SameSiteStrictMode {
			t.Errorf("CSRF cookie %+v", ck)
		}
	}
}

func TestCSRFTokens(t *testing.T) {
	c := New(Deps{Identity: &identity.Service{}})
	rec := httptest.NewRecorder()
	tok := c.csrfToken(rec, httptest.NewRequest("GET", "/console/", nil))
	if len(tok) != csrfTokenLen || cookieNamed(rec, csrfCookieName).Value != tok {
		t.Fatalf("token %q", tok)
	}
	req := httptest.NewRequest("GET", "/console/", nil)
	req.AddCookie(&http.Cookie{Name: csrfCookieName, Value: tok})
	rec = httptest.NewRecorder()
	if again := c.csrfToken(rec, req); again != tok || cookieNamed(rec, csrfCookieName) != nil {
		t.Fatalf("a known browser got a new token %q", again)
	}
	for _, tc := range []struct {
		cookie, field string
		ok            bool
	}{
		{tok, tok, true},
		{tok, "", false},
		{tok, tok[:len(tok)-1] + "A", tok[len(tok)-1] == 'A'},
		{"", "", false},
		{"short", "short", false},
	} {
		if got := validCSRF(tc.cookie, tc.field); got != tc.ok {
			t.Errorf("validCSRF(%q, %q) = %v", tc.cookie, tc.field, got)
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
