package tests

import (
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// TestBrowserApprovals is a run asking a person in the console: the card shows in the thread
// live and the Approvals link counts it, the person approves from it and the agent goes on; the
// Approvals page lists what waits, and a denial from it works without the script.
func TestBrowserApprovals(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		a, _, _ := w.mustPostingAgent(t, "gate")
		runAgent(t, botclient.NewAgent(w.in.srv.public, a.Token), asker())
		channel := "/console/channels/" + w.shared.ID

		step(t, b, "a person approves from the card in the thread and the agent goes on", func(t *testing.T, b *tab) {
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			postedMessage(t, w.alice, w.shared.MainThreadID, "@gate deploy")
			card := testID("approval-card", `[data-state="pending"]`)
			b.waitFor(card + " " + testID("approval-approve"))
			if title := b.text(card + " " + testID("approval-title")); title != "deploy" {
				t.Fatalf("the card asks %q", title)
			}
			b.screenshot("approval-card.png")
			b.until("the Approvals link counts it, live", `(document.querySelector('[data-testid="approvals-badge"]') || {}).textContent === "1"`)
			b.clickLive(card + " " + testID("approval-approve"))
			b.until("the card says approved", `document.querySelector('[data-testid="approval-card"][data-state="approved"]') !== null`)
			b.until("the badge goes", `document.querySelector('[data-testid="approvals-badge"]') === null`)
			messageWith(b, "approve approved false "+w.aliceU.ID)
			if got := b.text(testID("approval-card") + " " + testID("approval-state")); got != "Approved by you" {
				t.Errorf("the card's line reads %q", got)
			}
		})

		step(t, b, "the Approvals page counts what waits and denies it without the script", func(t *testing.T, b *tab) {
			postedMessage(t, w.alice, w.shared.MainThreadID, "@gate release")
			pendingIn(t, w.alice, w.shared.MainThreadID)
			b.scripts(false)
			defer b.scripts(true)
			b.visit(channel)
			if n := b.text(testID("approvals-badge")); n != "1" {
				t.Fatalf("the badge reads %q", n)
			}
			b.clickTo(testID("approvals-link"))
			b.waitFor(testID("approval-item"))
			if title := b.text(testID("approval-item") + " " + testID("approval-title")); title != "release" {
				t.Fatalf("the page lists %q", title)
			}
			b.clickTo(testID("approval-item") + " " + testID("approval-deny"))
			b.waitFor(testID("approvals-empty"))
			want := "deny denied false " + w.aliceU.ID
			deadline := time.Now().Add(15 * time.Second)
			for !answered(t, w.alice, want) {
				if time.Now().After(deadline) {
					t.Fatalf("the agent did not answer %q within 15s", want)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	})
}

// answered reports whether a message reading content reached c.
func answered(tb testing.TB, c *client, content string) bool {
	tb.Helper()
	evs, _ := c.mustAllEvents(tb, 0)
	for _, e := range evs {
		if e.Type == "message.created" && e.Data["content"] == content {
			return true
		}
	}
	return false
}
