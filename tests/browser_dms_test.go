package tests

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp/kb"
)

// TestBrowserDirectMessage: a person starts a direct message from the console's "New message"
// form, lands in it, writes there, and the other participant finds the DM and the message; the
// sidebar lists the DM under "Direct messages", named by the other participant.
func TestBrowserDirectMessage(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		b.visit("/console/chat")
		var dmID string
		step(t, b, "the New message form starts a DM with bob and opens it", func(t *testing.T, b *tab) {
			b.click(testID("new-dm") + " summary")
			b.click(testID("dm-pick", `[value="`+w.bobU.ID+`"]`))
			b.screenshot("dm-new.png")
			if st := b.clickTo(testID("new-dm-submit")); st != http.StatusOK {
				t.Fatalf("the form led to a page with status %d", st)
			}
			loc := b.location()
			i := strings.Index(loc, "/console/channels/")
			if i < 0 {
				t.Fatalf("the form led to %s", loc)
			}
			dmID = loc[i+len("/console/channels/"):]
			if got := b.text(testID("dm-link", `[aria-current="page"]`)); got != "Person bob" {
				t.Fatalf("the current DM is named %q", got)
			}
			if got := b.text("main h1"); got != "Person bob" {
				t.Fatalf("the DM's page is headed %q, want the other participant's name", got)
			}
		})
		step(t, b, "what alice writes there reaches bob, who lists the DM", func(t *testing.T, b *tab) {
			b.waitFor(testID("thread", `[data-live="1"]`))
			b.typeInto(testID("composer-input"), "hello bob, just us")
			b.press(testID("composer-input"), kb.Enter)
			b.until("the message shows", `[...document.querySelectorAll('[data-testid="message-body"]')].some(m => m.textContent.includes("hello bob, just us"))`)
			var mine page[dmView]
			w.bob.do(t, http.MethodGet, api("dms"), nil).want(t, http.StatusOK).decode(t, &mine)
			if len(mine.Items) != 1 || mine.Items[0].ID != dmID {
				t.Fatalf("bob lists %+v, want the DM %s", mine.Items, dmID)
			}
			var msgs page[message]
			w.bob.do(t, http.MethodGet, api("threads", mine.Items[0].MainThreadID, "messages"), nil).want(t, http.StatusOK).decode(t, &msgs)
			if len(msgs.Items) != 1 || msgs.Items[0].Content != "hello bob, just us" {
				t.Fatalf("bob reads %+v", msgs.Items)
			}
			w.in.owner.do(t, http.MethodGet, api("channels", dmID), nil).want(t, http.StatusNotFound)
		})
		step(t, b, "a DM of two offers no Leave", func(t *testing.T, b *tab) {
			b.visit("/console/channels/" + dmID)
			if n := eval[int](b, `document.querySelectorAll('[data-testid="leave-dm"]').length`); n != 0 {
				t.Fatalf("%d Leave controls on a DM of two", n)
			}
		})
		step(t, b, "alice leaves a group DM with bob and the owner from its page, and no longer lists it", func(t *testing.T, b *tab) {
			b.visit("/console/chat")
			b.click(testID("new-dm") + " summary")
			b.click(testID("dm-pick", `[value="`+w.bobU.ID+`"]`))
			b.click(testID("dm-pick", `[value="`+w.in.me.ID+`"]`))
			if st := b.clickTo(testID("new-dm-submit")); st != http.StatusOK {
				t.Fatalf("the form led to a page with status %d", st)
			}
			loc := b.location()
			group := loc[strings.Index(loc, "/console/channels/")+len("/console/channels/"):]
			if st := b.clickTo(testID("leave-dm") + " button"); st != http.StatusOK {
				t.Fatalf("Leave led to a page with status %d", st)
			}
			var mine page[dmView]
			w.alice.do(t, http.MethodGet, api("dms"), nil).want(t, http.StatusOK).decode(t, &mine)
			for _, d := range mine.Items {
				if d.ID == group {
					t.Fatalf("alice still lists the group DM %s", group)
				}
			}
			w.alice.do(t, http.MethodGet, api("channels", group), nil).want(t, http.StatusNotFound)
		})
	})
}
