package tests

import (
	"net/http"
	"strings"
	"testing"
)

// TestBrowserPins pins and unpins a message from the console, in a real Chromium on each
// engine: the message's Pin leads to a page whose form pins it, the thread comes back with the message marked and the
// channel header's "Pinned" listing it, and Unpin takes it off again; the REST API sees the same;
// a pin made elsewhere shows live.
func TestBrowserPins(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		channel := "/console/channels/" + w.shared.ID
		m := w.in.owner.mustPost(t, w.shared.MainThreadID, "the plan we keep at hand")
		b.visit(channel)
		b.waitFor(msgSel(m.ID))
		pins := func() int {
			var l page[map[string]any]
			w.in.owner.do(t, http.MethodGet, api("channels", w.shared.ID, "pins"), nil).want(t, http.StatusOK).decode(t, &l)
			return len(l.Items)
		}

		step(t, b, "a person pins another's message and the header lists it", func(t *testing.T, b *tab) {
			if got := b.text(testID("channel-pins") + " summary"); got != "Pinned (0)" {
				t.Fatalf("the header says %q before the pin", got)
			}
			if st := b.clickTo(msgSel(m.ID) + " " + testID("message-pin")); st != http.StatusOK {
				t.Fatalf("the pin's page answered %d", st)
			}
			if st := b.clickTo(testID("pin-confirm")); st != http.StatusOK {
				t.Fatalf("the pin answered %d", st)
			}
			b.waitFor(msgSel(m.ID) + " " + testID("message-pinned"))
			if got := b.text(testID("channel-pins") + " summary"); got != "Pinned (1)" {
				t.Fatalf("the header says %q after the pin", got)
			}
			b.click(testID("channel-pins") + " summary")
			b.waitFor(testID("pin-item", `[data-id="`+m.ID+`"]`))
			if got := b.text(testID("pin-item")); !strings.Contains(got, "the plan we keep at hand") {
				t.Fatalf("the pin reads %q", got)
			}
			if href := b.attr(testID("pin-item"), "href"); href != "/console/messages/"+m.ID {
				t.Fatalf("the pin leads to %q", href)
			}
			b.screenshot("chat-pins.png")
			if n := pins(); n != 1 {
				t.Fatalf("the API lists %d pins", n)
			}
		})

		step(t, b, "the same person unpins it and the header is empty again", func(t *testing.T, b *tab) {
			if st := b.clickTo(msgSel(m.ID) + " " + testID("message-unpin")); st != http.StatusOK {
				t.Fatalf("the unpin's page answered %d", st)
			}
			if st := b.clickTo(testID("pin-confirm")); st != http.StatusOK {
				t.Fatalf("the unpin answered %d", st)
			}
			b.waitFor(msgSel(m.ID) + " " + testID("message-pin"))
			if got := b.text(testID("channel-pins") + " summary"); got != "Pinned (0)" {
				t.Fatalf("the header says %q after the unpin", got)
			}
			if n := eval[int](b, `document.querySelectorAll(`+jsString(msgSel(m.ID)+" "+testID("message-pinned"))+`).length`); n != 0 {
				t.Fatal("the message is still marked pinned")
			}
			if n := pins(); n != 0 {
				t.Fatalf("the API lists %d pins", n)
			}
		})

		step(t, b, "a pin another person makes shows in the header and on the message live, and so does its removal", func(t *testing.T, b *tab) {
			b.waitFor(testID("thread", `[data-live="1"]`))
			w.in.owner.do(t, http.MethodPut, api("messages", m.ID, "pin"), nil).want(t, http.StatusOK)
			b.until("the header counts the owner's pin", `document.querySelector('[data-testid="channel-pins"] summary').textContent === "Pinned (1)"`)
			b.waitFor(msgSel(m.ID) + " " + testID("message-pinned"))
			w.in.owner.do(t, http.MethodDelete, api("messages", m.ID, "pin"), nil).want(t, http.StatusNoContent)
			b.until("the header is empty again", `document.querySelector('[data-testid="channel-pins"] summary').textContent === "Pinned (0)"`)
		})
	})
}
