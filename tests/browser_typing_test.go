package tests

import (
	"testing"

	kb "github.com/chromedp/chromedp/kb"
)

// TestBrowserTyping shows who types in a thread, in a real Chromium on each engine: the owner
// types in the channel alice reads, her page names them under the messages, and the line goes
// when their message arrives.
func TestBrowserTyping(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		channel := "/console/channels/" + w.shared.ID
		owner := f.c.newVisitor(t, "owner")
		owner.signIn("owner", ownerPassword)
		owner.visit(channel)
		owner.waitFor(testID("thread", `[data-live="1"]`))
		b.visit(channel)
		b.waitFor(testID("thread", `[data-live="1"]`))

		step(t, b, "the reader sees who types, and the typer does not see themself", func(t *testing.T, b *tab) {
			owner.typeInto(testID("composer-input"), "let me think about")
			b.until("the typing line names the owner", `(() => { const l = document.querySelector('[data-testid="typing"]');
				return !l.hidden && /is typing/.test(l.textContent) && l.textContent.indexOf(`+jsString("The Owner")+`) === 0; })()`)
			b.screenshot("chat-typing.png")
			if !eval[bool](owner, `document.querySelector('[data-testid="typing"]').hidden`) {
				t.Fatal("the typer's own page shows a typing line")
			}
		})

		step(t, b, "the line goes when the typer's message arrives", func(t *testing.T, b *tab) {
			owner.press(testID("composer-input"), kb.Enter)
			b.until("the typing line is hidden", `document.querySelector('[data-testid="typing"]').hidden`)
			messageWith(b, "let me think about")
		})
	})
}
