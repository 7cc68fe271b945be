package tests

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserSearch searches from the console's top bar in a real Chromium on each engine: the
// box leads to the results page, which lists the message the person may read with its channel,
// author and the match marked, and not the one in a channel they may not read; a result opens
// the message in its thread, marked; a search that finds nothing says so.
func TestBrowserSearch(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		// Older messages first, so the one searched for is not on the thread's newest page
		// alone: the result must lead to it, wherever it is.
		found := w.in.owner.mustPost(t, w.sharedTh.Thread.ID, "the quarterly zeppelin report is ready")
		for range 3 {
			w.in.owner.mustPost(t, w.sharedTh.Thread.ID, "something else entirely")
		}
		hidden := w.in.owner.mustPost(t, w.privTh.Thread.ID, "a secret zeppelin plan")

		step(t, b, "the top bar's box finds the message the person may read, and only that one", func(t *testing.T, b *tab) {
			b.visit("/console/chat")
			b.typeInto(testID("top-search-input"), "zeppel")
			if st := b.loads("press Enter in the top bar's box", chromedp.SendKeys(chromedp.CSS(testID("top-search-input")), kb.Enter, chromedp.NodeVisible)); st != http.StatusOK {
				t.Fatalf("the search answered %d", st)
			}
			if loc := b.location(); !strings.Contains(loc, "/console/search?q=zeppel") {
				t.Fatalf("the box led to %s", loc)
			}
			b.waitFor(testID("search-result", `[data-id="`+found.ID+`"]`))
			if n := eval[int](b, `document.querySelectorAll('[data-testid="search-result"]').length`); n != 1 {
				t.Fatalf("%d results, want the one message alice may read (the hidden one is %s)", n, hidden.ID)
			}
			if got := eval[string](b, `document.querySelector('[data-testid="search-link"] mark').textContent.toLowerCase()`); !strings.HasPrefix(got, "zeppel") {
				t.Fatalf("the match is marked as %q", got)
			}
			if got := b.text(testID("search-channel")); got != "#shared" {
				t.Fatalf("the result names the channel %q", got)
			}
			if got := b.text(testID("search-author")); got == "" {
				t.Fatal("the result names no author")
			}
			if got := b.attr(testID("top-search-input"), "value"); got != "zeppel" {
				t.Fatalf("the top bar's box shows %q", got)
			}
			b.screenshot("search-results.png")
		})

		step(t, b, "a result opens the message in its thread, marked", func(t *testing.T, b *tab) {
			if st := b.clickTo(testID("search-link")); st != http.StatusOK {
				t.Fatalf("the result answered %d", st)
			}
			if loc := b.location(); !strings.Contains(loc, "/console/threads/"+w.sharedTh.Thread.ID) || !strings.HasSuffix(loc, "#m-"+found.ID) {
				t.Fatalf("the result led to %s", loc)
			}
			b.waitFor(msgSel(found.ID))
			b.until("the message is the page's target", `(document.querySelector(":target") || {}).id === "m-`+found.ID+`"`)
		})

		step(t, b, "a search that finds nothing says so, and the page shows the syntax", func(t *testing.T, b *tab) {
			b.visit("/console/search?q=" + url.QueryEscape("nothingmatchesthis"))
			b.waitFor(testID("search-empty"))
			if got := b.text(testID("search-hint")); !strings.Contains(got, "from:@ada") || !strings.Contains(got, "has:file") {
				t.Fatalf("the hint reads %q", got)
			}
			b.typeInto(testID("search-input"), "quarterly")
			if st := b.loads("search from the page's box", chromeEval(`document.querySelector('[data-testid="search-form"]').requestSubmit()`)); st != http.StatusOK {
				t.Fatalf("the search answered %d", st)
			}
			b.waitFor(testID("search-result", `[data-id="`+found.ID+`"]`))
		})
	})
}
