package tests

import (
	"net/http"
	"strings"
	"testing"
)

// TestBrowserUnread follows what is new for a person in the console, in a real Chromium on each
// engine: messages in another channel show as counts beside it, live, with a mention counted
// apart; opening the channel puts the "new messages" line before the first one she had not
// read and clears the counts, on her other tab too; the Mentions page lists the mention and
// leads to it.
func TestBrowserUnread(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		lobby := "/console/channels/" + w.lobby.ID
		lobbyLink := testID("channel-link", `[data-id="`+w.lobby.ID+`"]`)
		// Alice has read the lobby once; she then reads the shared channel in two tabs.
		w.in.owner.mustPost(t, w.lobby.MainThreadID, "what alice has read")
		b.visit(lobby)
		b.waitFor(testID("thread", `[data-live="1"]`))
		b.visit("/console/channels/" + w.shared.ID)
		b.waitFor(testID("thread", `[data-live="1"]`))
		other := f.c.newTab(t, "second tab")
		other.visit("/console/channels/" + w.shared.ID)
		other.waitFor(testID("thread", `[data-live="1"]`))

		var first message
		step(t, b, "messages in another channel show as counts beside it, live, a mention apart", func(t *testing.T, b *tab) {
			if n := eval[int](b, `document.querySelectorAll(`+jsString(lobbyLink+" "+testID("unread-badge"))+`).length`); n != 0 {
				t.Fatal("the lobby shows unread messages before any was posted")
			}
			first = w.in.owner.mustPost(t, w.lobby.MainThreadID, "the first new one")
			w.in.owner.mustPost(t, w.lobby.MainThreadID, "and @alice, this is for you")
			for _, x := range []*tab{b, other} {
				x.until("the lobby counts two unread and one mention", `(() => { const a = document.querySelector(`+jsString(lobbyLink)+`);
					const u = a.querySelector('[data-testid="unread-badge"]'), m = a.querySelector('[data-testid="mention-badge"]');
					return u && u.textContent === "2" && m && m.textContent === "@1" && a.classList.contains("unread"); })()`)
			}
			b.until("the Mentions link counts the mention", `(() => { const m = document.querySelector('[data-testid="mentions-link"] [data-testid="mention-badge"]');
				return m && m.textContent === "@1"; })()`)
			b.screenshot("chat-unread.png")
		})

		step(t, b, "opening the channel shows the new messages line and clears the counts on both tabs", func(t *testing.T, b *tab) {
			if st := b.clickTo(lobbyLink); st != http.StatusOK {
				t.Fatalf("the lobby answered %d", st)
			}
			b.waitFor(testID("new-divider"))
			next := eval[string](b, `document.querySelector('[data-testid="new-divider"]').nextElementSibling.id`)
			if next != "m-"+first.ID {
				t.Fatalf("the line is before %q, want the first new message m-%s", next, first.ID)
			}
			if n := eval[int](b, `document.querySelectorAll(`+jsString(lobbyLink+" "+testID("unread-badge"))+`).length`); n != 0 {
				t.Fatal("the open lobby still counts unread messages")
			}
			other.until("the other tab's lobby counts clear", `document.querySelectorAll(`+jsString(lobbyLink+" .count")+`).length === 0`)
			b.screenshot("chat-new-messages.png")
		})

		step(t, b, "the Mentions page lists the mention and leads to it", func(t *testing.T, b *tab) {
			if st := b.clickTo(testID("mentions-link")); st != http.StatusOK {
				t.Fatalf("the Mentions page answered %d", st)
			}
			b.waitFor(testID("mention-item"))
			if got := b.text(testID("mention-link")); !strings.Contains(got, "this is for you") {
				t.Fatalf("the mention reads %q", got)
			}
			if got := b.text(testID("mention-item")); !strings.Contains(got, "#lobby") {
				t.Fatalf("the mention does not say where it is: %q", got)
			}
			b.screenshot("chat-mentions.png")
			if st := b.clickTo(testID("mention-link")); st != http.StatusOK {
				t.Fatalf("the mention's link answered %d", st)
			}
			b.waitFor(testID("thread", `[data-channel-id="`+w.lobby.ID+`"]`))
		})
	})
}
