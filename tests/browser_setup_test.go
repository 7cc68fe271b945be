package tests

import (
	"net/http"
	"strings"
	"testing"
)

// TestBrowserFirstContact is a newcomer's first minutes in a real headless Chromium: the bare
// address of a fresh instance shows a sign-in page that says there is no owner yet and where
// the setup link is; the printed link creates the owner; the link opened again, by the owner
// or by someone else, says the setup is done instead of showing the form; the sign-in gives
// the page's forms a token of their own; and the pages have an icon, as has /favicon.ico.
func TestBrowserFirstContact(t *testing.T) {
	t.Parallel()
	chromium := mustChromium(t)
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		srv := mustStart(t, eng)
		c, owner := mustChrome(t, chromium, srv.public)
		const ownerPW = "correct horse battery staple"

		// Each step needs the ones before it: the flow stops at the first that fails.
		step := func(name string, b *tab, f func(t *testing.T, b *tab)) {
			t.Helper()
			if !t.Run(name, func(t *testing.T) { f(t, b.on(t)) }) {
				t.FailNow()
			}
		}
		csrf := func(b *tab) string {
			return eval[string](b, `(document.querySelector('input[name="csrf_token"]') || {}).value || ""`)
		}
		var signInToken string

		step("the bare address of a fresh instance says it has no owner yet and where the link is", owner, func(t *testing.T, b *tab) {
			if st := b.visit("/"); st != http.StatusOK {
				t.Fatalf("/ ended with status %d", st)
			}
			b.waitFor(testID("setup-hint"))
			hint := b.text(testID("setup-hint"))
			for _, want := range []string{"no owner yet", "bothy serve", "bothy setup bootstrap-owner"} {
				if !strings.Contains(hint, want) {
					t.Errorf("the hint %q does not say %q", hint, want)
				}
			}
			signInToken = csrf(b)
			b.screenshot("first-contact-signin.png")
		})

		step("the page has an icon, and /favicon.ico answers one", owner, func(t *testing.T, b *tab) {
			href := b.attr(`link[rel="icon"]`, "href")
			if !strings.HasPrefix(href, "/assets/favicon.") || !strings.HasSuffix(href, ".svg") {
				t.Fatalf("icon link %q", href)
			}
			for _, path := range []string{href, "/favicon.ico"} {
				// The icon loads as an image in the page: the browser takes its type and body.
				p := jsString(path)
				b.do("load "+path+" as an image", chromeEval(`(() => { window.icons = window.icons || {}; const i = new Image();
					i.onload = () => { window.icons[`+p+`] = i.naturalWidth > 0; };
					i.onerror = () => { window.icons[`+p+`] = false; }; i.src = `+p+`; })()`))
				b.until(path+" has loaded or failed", `window.icons && `+p+` in window.icons`)
				if !eval[bool](b, `window.icons[`+p+`]`) {
					t.Errorf("%s does not load as an image", path)
				}
			}
		})

		step("the printed link creates the owner and signs them in", owner, func(t *testing.T, b *tab) {
			b.visit(srv.setupLink)
			b.waitFor(testID("setup-form"))
			b.typeInto("#handle", "olga")
			b.typeInto("#display_name", "Olga Owner")
			b.typeInto("#password", ownerPW)
			b.typeInto("#password2", ownerPW)
			if st := b.clickTo(testID("setup-submit")); st != http.StatusOK {
				t.Fatalf("after the setup: status %d", st)
			}
			b.waitFor(testID("overview"))
		})

		step("the forms of the signed-in owner carry a token of their own", owner, func(t *testing.T, b *tab) {
			if tok := csrf(b); tok == "" || tok == signInToken {
				t.Fatalf("the token after the sign-in is %q, the sign-in form's was %q", tok, signInToken)
			}
		})

		step("the owner opening the link again is told the setup is complete", owner, func(t *testing.T, b *tab) {
			if st := b.visit(srv.setupLink); st != http.StatusOK {
				t.Fatalf("status %d", st)
			}
			b.waitFor(testID("setup-done"))
			if n := eval[int](b, `document.querySelectorAll('[data-testid="setup-form"]').length`); n != 0 {
				t.Fatal("the setup form is shown again")
			}
			b.clickTo(testID("setup-done") + ` a[href="/console/"]`)
			b.waitFor(testID("overview"))
		})

		visitor := c.newVisitor(t, "visitor")
		step("someone else opening the used link is told it has been used and led to the sign-in", visitor, func(t *testing.T, b *tab) {
			b.visit(srv.setupLink)
			b.waitFor(testID("setup-done"))
			if text := b.text(testID("setup-done")); !strings.Contains(text, "has been used") {
				t.Fatalf("%q", text)
			}
			b.screenshot("first-contact-used-link.png")
			b.clickTo(testID("setup-done") + ` a[href="/console/signin"]`)
			b.waitFor(testID("signin-form"))
			if n := eval[int](b, `document.querySelectorAll('[data-testid="setup-hint"]').length`); n != 0 {
				t.Fatal("the sign-in page still says there is no owner")
			}
		})
	})
}
