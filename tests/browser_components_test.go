package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBrowserComponents answers an agent's buttons and select in the console, in a real
// Chromium on each engine: a click on Approve reaches the agent, whose answer shows in the
// thread and whose disabling of the button shows live; without the script, a pick of the select
// posts as a form and reaches the agent too.
func TestBrowserComponents(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		a, ac, start := w.mustPostingAgent(t, "asker")
		th := w.in.owner.mustCreateThread(t, w.shared.ID, "Deploy", "release 1.2").Thread.ID
		other := w.in.owner.mustCreateThread(t, w.shared.ID, "Other", "another thread").Thread.ID
		uses := askingAgent(t, w, a, ac, other)
		postedMessage(t, w.alice, th, "@asker shall we deploy?")
		mid := questionOf(t, w.alice, th, start).Data["id"].(string)
		approve := msgSel(mid) + " " + testID("component-button", `[data-component="approve"]`)
		next := func(t *testing.T) tokenUse {
			t.Helper()
			select {
			case u := <-uses:
				return u
			case <-time.After(15 * time.Second):
				t.Fatal("the agent got no interaction.created within 15s")
			}
			return tokenUse{}
		}

		step(t, b, "a click on Approve reaches the agent, its answer shows and the button turns disabled live", func(t *testing.T, b *tab) {
			b.visit("/console/threads/" + th)
			b.waitFor(testID("thread", `[data-live="1"]`))
			b.waitFor(approve)
			if cls := b.attr(approve, "class"); !strings.Contains(cls, "primary") {
				t.Fatalf("the Approve button's class is %q", cls)
			}
			b.clickLive(approve)
			if u := next(t); u.in.ComponentID != "approve" || u.in.UserID != w.aliceU.ID {
				t.Fatalf("the agent got %+v", u.in)
			}
			b.until("the agent's answer shows", `[...document.querySelectorAll('[data-testid="message-body"]')].some(e => e.textContent.includes("approve: yes"))`)
			b.until("the button shows disabled", `document.querySelector(`+jsString(approve)+`).disabled === true`)
			b.screenshot("chat-components.png")
		})

		step(t, b, "without the script a pick of the select posts as a form", func(t *testing.T, b *tab) {
			b.scripts(false)
			b.visit("/console/threads/" + th)
			sel := msgSel(mid) + " " + testID("component-select", `[data-component="region"]`)
			b.waitFor(sel)
			b.choose(sel, "eu")
			if st := b.clickTo(msgSel(mid) + " " + testID("component-submit", `[data-component="region"]`)); st != http.StatusOK {
				t.Fatalf("the pick answered %d", st)
			}
			if u := next(t); u.in.ComponentID != "region" || strings.Join(u.in.Values, ",") != "eu" {
				t.Fatalf("the agent got %+v", u.in)
			}
		})
	})
}
