package tests

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The chat view in a real Chromium, as a new person uses it, on each engine: where a thread
// opens and how it scrolls, the actions on a message, the times and the words of a failed run,
// and the view on a phone. Each flow's steps need the ones before them and stop at the first
// that fails.

// chatFlow is one browser flow against one server: a world of people and channels, and the
// tab of alice, who may post in the channel shared.
type chatFlow struct {
	w     *world
	c     *chrome
	alice *tab
}

func mustChatFlow(t *testing.T, eng engine, args ...string) *chatFlow {
	t.Helper()
	chromium := mustChromium(t)
	w := mustWorld(t, eng, args...)
	c, first := mustChrome(t, chromium, w.in.srv.public)
	first.signIn("alice", "alice-password-1")
	return &chatFlow{w: w, c: c, alice: first}
}

// step runs one step of a flow on b; the flow stops at the first that fails.
func step(t *testing.T, b *tab, name string, f func(t *testing.T, b *tab)) {
	t.Helper()
	if !t.Run(name, func(t *testing.T) { f(t, b.on(t)) }) {
		t.FailNow()
	}
}

// The page's geometry, from the script of the test: the messages' box, where a message is in
// it, and what the reader looks at.
const (
	jsBox = `document.querySelector('[data-testid="messages"]')`
	// jsBelow is how far the newest item lies below the bottom of the view (0 at the bottom).
	jsBelow = `(document.querySelector('[data-testid="feed"]').getBoundingClientRect().bottom - ` + jsBox + `.getBoundingClientRect().bottom)`
	// jsAnchor is the first message the reader sees, with its distance from the view's top.
	jsAnchor = `(() => { const v = ` + jsBox + `.getBoundingClientRect();
		const m = [...document.querySelectorAll('[data-testid="message"]')].find(m => m.getBoundingClientRect().bottom > v.top + 1);
		return m.id + " " + Math.round(m.getBoundingClientRect().top - v.top); })()`
)

// sameAnchor reports whether two jsAnchor readings are the same message within a pixel: the
// browser scrolls by whole device pixels, layout measures in fractions.
func sameAnchor(a, b string) bool {
	var ida, idb string
	var ta, tb int
	if _, err := fmt.Sscan(a, &ida, &ta); err != nil {
		return false
	}
	if _, err := fmt.Sscan(b, &idb, &tb); err != nil {
		return false
	}
	return ida == idb && ta-tb <= 1 && tb-ta <= 1
}

// jsShown is true when the element sel is wholly inside the messages' view and above the
// composer.
func jsShown(sel string) string {
	return `(() => { const e = document.querySelector(` + jsString(sel) + `); if (!e) return false;
		const r = e.getBoundingClientRect(), v = ` + jsBox + `.getBoundingClientRect();
		const c = document.querySelector('[data-testid="composer"]');
		return r.top >= v.top - 1 && r.bottom <= v.bottom + 1 && (!c || r.bottom <= c.getBoundingClientRect().top + 1); })()`
}

func msgSel(id string) string { return testID("message", `[data-id="`+id+`"]`) }

func TestBrowserChatScrolling(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		mainTh := w.shared.MainThreadID
		var firstID, newest string
		for i := range 130 {
			m := w.in.owner.mustPost(t, mainTh, fmt.Sprintf("message %d\n\nwith a second paragraph", i))
			if i == 0 {
				firstID = m.ID
			}
			newest = m.ID
		}
		channel := "/console/channels/" + w.shared.ID

		step(t, b, "a channel opens at its newest message, above the composer", func(t *testing.T, b *tab) {
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			if !eval[bool](b, jsShown(msgSel(newest))) {
				t.Fatalf("the newest message is not in view: %s below the bottom", fmt.Sprint(eval[float64](b, jsBelow)))
			}
			if !eval[bool](b, `document.querySelector('[data-testid="jump"]').hidden`) {
				t.Fatal("the jump to the latest shows at the latest")
			}
			// The script follows the thread from the log's head at the page's read, so that
			// nothing committed before its connection is missed.
			if cur := eval[string](b, `document.querySelector('[data-testid="thread"]').dataset.cursor`); !regexp.MustCompile(`^[1-9]\d*$`).MatchString(cur) {
				t.Fatalf("the script reads the cursor %q", cur)
			}
			b.screenshot("chat-open-newest.png")
		})

		step(t, b, "without JavaScript too", func(t *testing.T, b *tab) {
			b.scripts(false)
			defer b.scripts(true)
			b.visit(channel)
			b.waitFor(msgSel(newest))
			if !eval[bool](b, jsShown(msgSel(newest))) {
				t.Fatal("without the script the newest message is not in view")
			}
		})

		step(t, b, "scrolling up loads the older pages and leaves in place what the reader looks at", func(t *testing.T, b *tab) {
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			if n := eval[int](b, `document.querySelectorAll('[data-testid="message"]').length`); n != 50 {
				t.Fatalf("%d messages on the first page", n)
			}
			// To the top of the first page: the reader sees its oldest message.
			before := eval[string](b, `(() => { `+jsBox+`.scrollTop = -`+jsBox+`.scrollHeight; return `+jsAnchor+`; })()`)
			b.until("the page before loads", `document.querySelectorAll('[data-testid="message"]').length > 50`)
			if after := eval[string](b, `(() => { const [id, top] = `+jsString(before)+`.split(" ");
				const v = `+jsBox+`.getBoundingClientRect(); return id + " " + Math.round(document.getElementById(id).getBoundingClientRect().top - v.top); })()`); !sameAnchor(after, before) {
				t.Fatalf("what the reader looked at moved: %q, then %q", before, after)
			}
			// On to the very first message of the channel.
			b.until("every page loads, up to the first message", `(() => { `+jsBox+`.scrollTop = -`+jsBox+`.scrollHeight;
				return document.querySelector('[data-id="`+firstID+`"]') && !document.querySelector('[data-testid="older"]'); })()`)
			if n := eval[int](b, `new Set([...document.querySelectorAll('[data-testid="message"]')].map(m => m.id)).size`); n != 130 {
				t.Fatalf("%d distinct messages after loading every page, want 130", n)
			}
		})

		step(t, b, "a new message while the reader is up the thread moves nothing and shows the new messages control; going down to it reads it", func(t *testing.T, b *tab) {
			do(b, jsBox+`.scrollTop = -1500`)
			b.until("the jump to the latest shows", `!document.querySelector('[data-testid="jump"]').hidden`)
			before := eval[string](b, jsAnchor)
			m := w.in.owner.mustPost(t, mainTh, "posted while alice reads old ones")
			b.waitFor(msgSel(m.ID) + `, [data-id="` + m.ID + `"]`)
			b.until("the control says there are new messages", `document.querySelector('[data-testid="jump"]').textContent.includes("New messages")`)
			if after := eval[string](b, jsAnchor); !sameAnchor(after, before) {
				t.Fatalf("the view moved: %q, then %q", before, after)
			}
			b.screenshot("chat-new-messages.png")
			b.click(testID("jump"))
			b.until("the view is at the new message", jsShown(msgSel(m.ID)))
			b.until("the control goes", `document.querySelector('[data-testid="jump"]').hidden`)
			// Seen at the newest, the message is read, as one that comes with the reader there.
			mustBecomeRead(t, w.alice, w.shared.ID, "")
		})

		step(t, b, "at the newest, a new message keeps the view at the newest", func(t *testing.T, b *tab) {
			m := w.in.owner.mustPost(t, mainTh, "posted while alice is at the bottom\n\nwith a second paragraph\n\nand a third")
			b.until("the new message is in view", jsShown(msgSel(m.ID)))
			if below := eval[float64](b, jsBelow); below > 40 {
				t.Fatalf("the newest is %.0f px below the view", below)
			}
		})

		step(t, b, "one's own message goes to the newest and is seen above the composer, from anywhere in the thread", func(t *testing.T, b *tab) {
			do(b, jsBox+`.scrollTop = -2000`)
			b.until("the reader is up the thread", `!document.querySelector('[data-testid="jump"]').hidden`)
			b.typeInto(testID("composer-input"), "my own words")
			b.press(testID("composer-input"), kb.Enter)
			id := messageWith(b, "my own words")
			b.until("one's own message is in view above the composer", jsShown(msgSel(id)))
			b.screenshot("chat-own-message.png")
		})
	})
}

// waitRun polls the run id as reader until match holds, for at most stepDeadline.
func waitRun(t *testing.T, reader *client, id string, what string, match func(runView) bool) runView {
	t.Helper()
	deadline := time.Now().Add(stepDeadline)
	for {
		r := runOf(t, reader, id)
		if match(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %s: still %+v", id, what, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mustInvocation polls the agent's events until the invocation of the message mid and returns
// its run and invocation token.
func mustInvocation(t *testing.T, ac *client, mid string) (runID, token string) {
	t.Helper()
	deadline := time.Now().Add(stepDeadline)
	for runID == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no agent.invocation of %s within %s", mid, stepDeadline)
		}
		var p struct {
			Events []event `json:"events"`
		}
		ac.do(t, http.MethodGet, api("agents", "me", "events")+"?wait=1s", nil).want(t, http.StatusOK).decode(t, &p)
		for _, e := range p.Events {
			if e.Type == "agent.invocation" && e.Data["message_id"] == mid {
				runID, _ = e.Data["run_id"].(string)
				token, _ = e.Data["invocation_token"].(string)
			}
		}
	}
	return runID, token
}

// bodyOf is the text of the message id's body as the page shows it.
func bodyOf(b *tab, id string) string {
	b.t.Helper()
	return eval[string](b, `(() => { const m = document.querySelector(`+jsString(msgSel(id))+`);
		const body = m && m.querySelector('[data-testid="message-body"]'); return body ? body.textContent.trim() : ""; })()`)
}

func TestBrowserChatMessageActions(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		mainTh, th := w.shared.MainThreadID, w.sharedTh.Thread.ID
		channel := "/console/channels/" + w.shared.ID
		// The owner watches the same channel in a browser of their own, never reloaded.
		owner := f.c.newVisitor(t, "owner")
		owner.signIn("owner", ownerPassword)
		owner.visit(channel)
		owner.waitFor(testID("thread", `[data-live="1"]`))
		do(owner, `window.__bothyNoReload = 1`)
		b.visit(channel)
		b.waitFor(testID("thread", `[data-live="1"]`))
		ownersMsg := w.in.owner.mustPost(t, mainTh, "the owner's own words")
		b.waitFor(msgSel(ownersMsg.ID))

		var mine string
		step(t, b, "the author edits a message in place; the other reader sees the edit live", func(t *testing.T, b *tab) {
			b.typeInto(testID("composer-input"), "a typo in thsi one")
			b.press(testID("composer-input"), kb.Enter)
			mine = messageWith(b, "a typo in thsi one")
			b.click(msgSel(mine) + " " + testID("message-edit"))
			b.waitFor(msgSel(mine) + " " + testID("edit-input"))
			if v := eval[string](b, `document.querySelector('[data-testid="edit-input"]').value`); v != "a typo in thsi one" {
				t.Fatalf("the edit form holds %q", v)
			}
			b.screenshot("chat-edit.png")
			b.typeInto(msgSel(mine)+" "+testID("edit-input"), "no typo in this one")
			b.press(msgSel(mine)+" "+testID("edit-input"), kb.Enter)
			for _, x := range []*tab{b, owner} {
				x.until("the message shows its new text, edited", `(() => { const m = document.querySelector(`+jsString(msgSel(mine))+`);
					return m && !m.querySelector("form.edit") && m.querySelector('[data-testid="message-edited"]') &&
						m.querySelector('[data-testid="message-body"]').textContent.trim() === "no typo in this one"; })()`)
			}
		})

		step(t, b, "up on an empty composer edits one's newest message; Escape leaves it as it was", func(t *testing.T, b *tab) {
			b.click(testID("composer-input"))
			b.press(testID("composer-input"), kb.ArrowUp)
			b.waitFor(msgSel(mine) + " " + testID("edit-input"))
			b.press(msgSel(mine)+" "+testID("edit-input"), kb.Escape)
			b.until("the form goes and the body comes back", `(() => { const m = document.querySelector(`+jsString(msgSel(mine))+`);
				return !m.querySelector("form.edit") && !m.querySelector('[data-testid="message-body"]').hidden; })()`)
			if got := bodyOf(b, mine); got != "no typo in this one" {
				t.Fatalf("after Escape the message reads %q", got)
			}
		})

		step(t, b, "only one's own messages offer edit and delete; the server refuses the others with 403", func(t *testing.T, b *tab) {
			n := eval[int](b, `document.querySelectorAll(`+jsString(msgSel(ownersMsg.ID)+` [data-action="edit"], `+msgSel(ownersMsg.ID)+` [data-action="delete"]`)+`).length`)
			if n != 0 || eval[int](b, `document.querySelectorAll(`+jsString(msgSel(mine)+` [data-action="delete"]`)+`).length`) != 1 {
				t.Fatalf("alice is offered %d actions on the owner's message", n)
			}
			for _, path := range []string{"/console/messages/" + ownersMsg.ID + "/delete", "/console/messages/" + ownersMsg.ID + "/edit"} {
				got := await[string](b, `(async () => { const fd = new URLSearchParams({csrf_token: document.querySelector('[name="csrf_token"]').value, content: "x"});
					const r = await fetch(`+jsString(path)+`, {method: "POST", body: fd, headers: {"Bothy-Fragment": "1"}}); return r.status + " " + await r.text(); })()`)
				if !strings.HasPrefix(got, "403 ") {
					t.Fatalf("POST %s as alice answered %q", path, got)
				}
			}
			if got := bodyOf(b, ownersMsg.ID); got != "the owner's own words" {
				t.Fatalf("the owner's message reads %q", got)
			}
		})

		step(t, b, "the author deletes a message after confirming; both readers see it deleted", func(t *testing.T, b *tab) {
			b.typeInto(testID("composer-input"), "delete me")
			b.press(testID("composer-input"), kb.Enter)
			gone := messageWith(b, "delete me")
			b.click(msgSel(gone) + " " + testID("message-delete"))
			b.waitFor(msgSel(gone) + " " + testID("delete-form"))
			b.screenshot("chat-delete-confirm.png")
			b.click(msgSel(gone) + " " + testID("delete-confirm"))
			for _, x := range []*tab{b, owner} {
				x.waitFor(msgSel(gone) + " " + testID("message-deleted"))
			}
		})

		step(t, b, "a manager of the channel deletes someone else's message", func(t *testing.T, b *tab) {
			o := owner.on(t)
			o.click(msgSel(mine) + " " + testID("message-delete"))
			o.waitFor(msgSel(mine) + " " + testID("delete-form"))
			if txt := o.text(msgSel(mine) + " " + testID("delete-form")); !strings.Contains(txt, "someone else") {
				t.Errorf("the confirmation does not say whose message it is: %q", txt)
			}
			o.click(msgSel(mine) + " " + testID("delete-confirm"))
			for _, x := range []*tab{o, b} {
				x.waitFor(msgSel(mine) + " " + testID("message-deleted"))
			}
			if !eval[bool](o, `window.__bothyNoReload === 1`) {
				t.Fatal("the owner's page was reloaded")
			}
		})

		var replies string
		step(t, b, "Reply on a message of the channel opens a form under it; the reply starts its thread, which the other reader sees counted live", func(t *testing.T, b *tab) {
			b.click(msgSel(ownersMsg.ID) + " " + testID("message-reply"))
			b.waitFor(msgSel(ownersMsg.ID) + " " + testID("reply-content"))
			b.do("write the reply", chromedp.SendKeys(chromedp.CSS(msgSel(ownersMsg.ID)+" "+testID("reply-content")), "I agree", chromedp.NodeVisible))
			b.screenshot("chat-reply-form.png")
			b.loads("send the reply with Enter", chromedp.SendKeys(chromedp.CSS(msgSel(ownersMsg.ID)+" "+testID("reply-content")), kb.Enter, chromedp.NodeVisible))
			b.waitFor(testID("thread", `[data-live="1"]`))
			loc := b.location()
			if !strings.Contains(loc, "/console/threads/") {
				t.Fatalf("the reply led to %s", loc)
			}
			replies = strings.SplitN(strings.TrimPrefix(loc, w.in.srv.public), "#", 2)[0]
			if got := b.text(testID("thread-parent") + " " + testID("message-body")); got != "the owner's own words" {
				t.Fatalf("the thread shows above its replies %q", got)
			}
			messageWith(b, "I agree")
			b.screenshot("chat-reply-thread.png")
			owner.until("the owner's page counts one reply under the message, linking to its thread", `(() => {
				const r = document.querySelector(`+jsString(msgSel(ownersMsg.ID)+" "+testID("message-replies"))+`);
				return r && r.textContent.includes("1 reply") && r.getAttribute("href") === `+jsString(replies)+`; })()`)
		})

		step(t, b, "Reply on the same message again opens the same thread, where a second reply is counted live too", func(t *testing.T, b *tab) {
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			if got := b.text(msgSel(ownersMsg.ID) + " " + testID("message-replies")); !strings.Contains(got, "1 reply") || !strings.Contains(got, "last reply") {
				t.Fatalf("the message shows %q", got)
			}
			b.clickTo(msgSel(ownersMsg.ID) + " " + testID("message-reply"))
			b.waitFor(testID("thread", `[data-live="1"]`))
			if loc := strings.TrimPrefix(b.location(), w.in.srv.public); loc != replies {
				t.Fatalf("the second Reply led to %s, not the thread %s", loc, replies)
			}
			b.typeInto(testID("thread-pane")+" "+testID("composer-input"), "and one more thing")
			b.press(testID("thread-pane")+" "+testID("composer-input"), kb.Enter)
			messageWith(b, "and one more thing")
			owner.until("the owner's page counts two replies", `(() => {
				const r = document.querySelector(`+jsString(msgSel(ownersMsg.ID)+" "+testID("message-replies"))+`);
				return r && r.textContent.includes("2 replies"); })()`)
			owner.screenshot("chat-replies-count.png")
			if !eval[bool](owner, `window.__bothyNoReload === 1`) {
				t.Fatal("the owner's page was reloaded")
			}
		})

		step(t, b, "a reply in a thread quotes the message in the composer", func(t *testing.T, b *tab) {
			b.visit("/console/threads/" + th)
			b.waitFor(testID("thread", `[data-live="1"]`))
			first := eval[string](b, `document.querySelector('[data-testid="message"]').dataset.id`)
			b.click(msgSel(first) + " " + testID("message-reply"))
			b.until("the composer holds the quote", `document.querySelector('[data-testid="composer-input"]').value.startsWith("> the shared thread")`)
			b.do("write under the quote", chromedp.SendKeys(chromedp.CSS(testID("composer-input")), "answered here", chromedp.NodeVisible))
			b.press(testID("composer-input"), kb.Enter)
			b.until("the answer shows with its quote", `[...document.querySelectorAll('[data-testid="message-body"]')].some(e =>
				e.querySelector("blockquote") && e.textContent.includes("answered here"))`)
		})

		step(t, b, "copy link copies the message's permalink, which opens its thread at it, marked", func(t *testing.T, b *tab) {
			// An old message, far from the newest page.
			old := w.in.owner.mustPost(t, mainTh, "an old message worth a link")
			for i := range 70 {
				w.in.owner.mustPost(t, mainTh, fmt.Sprintf("later %d", i))
			}
			b.allowClipboard()
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			do(b, jsBox+`.scrollTop = -`+jsBox+`.scrollHeight`)
			b.waitFor(msgSel(old.ID))
			b.click(msgSel(old.ID) + " " + testID("message-copy"))
			b.until("the link says it was copied", `document.querySelector(`+jsString(msgSel(old.ID)+" "+testID("message-copy"))+`).textContent === "Link copied"`)
			link := await[string](b, `navigator.clipboard.readText()`)
			if link != w.in.srv.public+"/console/messages/"+old.ID {
				t.Fatalf("copied %q", link)
			}
			other := f.c.newTab(t, "permalink")
			other.visit(link)
			other.waitFor(testID("thread", `[data-live="1"]`))
			if !eval[bool](other, `document.querySelector(":target") === document.querySelector(`+jsString(msgSel(old.ID))+`)`) {
				t.Fatalf("the permalink's message is not marked: at %s", other.location())
			}
			other.until("the message is in view", jsShown(msgSel(old.ID)))
			other.screenshot("chat-permalink.png")
		})
	})
}

func TestBrowserChatTimesAndRuns(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng, "--set", "agent.queued_timeout=3s", "--set", "agent.cancel_grace=2s")
		w, b := f.w, f.alice
		mainTh := w.shared.MainThreadID
		channel := "/console/channels/" + w.shared.ID
		sage, sageClient := w.in.mustCreateAgent(t, "sage")
		sleepy, _ := w.in.mustCreateAgent(t, "sleepy")
		for _, id := range []string{sage.ID, sleepy.ID} {
			w.in.owner.mustGrant(t, w.shared.ID, id, "post")
		}
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")

		step(t, b, "times show in the reader's time zone, the whole date on hover", func(t *testing.T, b *tab) {
			m := w.in.owner.mustPost(t, mainTh, "what time is it?")
			at, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
			if err != nil {
				t.Fatal(err)
			}
			kolkata, err := time.LoadLocation("Asia/Kolkata")
			if err != nil {
				t.Skipf("no time zone database: %v", err)
			}
			local := at.In(kolkata)
			b.timezone("Asia/Kolkata")
			defer b.timezone("")
			b.visit(channel)
			sel := msgSel(m.ID) + " time"
			b.until("the time is rewritten", `document.querySelector(`+jsString(sel)+`).dataset.local === "1"`)
			text, title := b.text(sel), b.attr(sel, "title")
			if want := local.Format("03:04 PM"); text != want && text != local.Format("15:04") {
				t.Errorf("the time reads %q, want %q (Asia/Kolkata) for %s", text, want, m.CreatedAt)
			}
			if strings.Contains(text, "UTC") || !strings.Contains(title, local.Format("2006")) || !strings.Contains(title, "GMT+5:30") {
				t.Errorf("time %q, title %q", text, title)
			}
			if dt := b.attr(sel, "datetime"); dt != at.UTC().Format(time.RFC3339) {
				t.Errorf("datetime %q", dt)
			}
			b.scripts(false)
			defer b.scripts(true)
			b.visit(channel)
			if text := b.text(sel); text != at.UTC().Format("Jan 2 15:04")+" UTC" {
				t.Errorf("without the script the time reads %q, want it in UTC, labelled", text)
			}
		})

		var runID, token string
		step(t, b, "a patch that reached a run card is not undone by an older rendering of the card", func(t *testing.T, b *tab) {
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			b.typeInto(testID("composer-input"), "@sage summarise the week")
			b.press(testID("composer-input"), kb.Enter)
			mid := messageWith(b, "@sage summarise the week")
			runID, token = mustInvocation(t, sageClient, mid)
			with := header("Invocation-Token", token)
			card := testID("run-card", `[data-run-id="`+runID+`"]`)
			b.waitFor(card + `[data-state="queued"]`)
			// The card as rendered at the start comes back only after the first patch has
			// reached the page: the older rendering must not undo the patch.
			do(b, `window.__held = []; window.__hold = true; const real = window.fetch;
				window.fetch = (u, o) => { const p = real(u, o); return window.__hold && String(u).endsWith("/fragment") && String(u).includes("/runs/") ?
					new Promise(done => window.__held.push(() => done(p))) : p; };`)
			sageClient.do(t, http.MethodPost, api("runs", runID, "start"), nil, with).want(t, http.StatusOK)
			b.until("the page asks for the started run's card", `window.__held.length > 0`)
			sageClient.do(t, http.MethodPatch, api("runs", runID), map[string]any{"version": 1, "status": "Reading the channel",
				"steps": []map[string]any{{"id": "s1", "kind": "tool_call", "title": "read the channel", "status": "running"}}}, with).want(t, http.StatusOK)
			b.until("the patch shows", `document.querySelector(`+jsString(card+` li[data-step-id="s1"][data-status="running"]`)+`)`)
			do(b, `window.__hold = false; window.__held.forEach(release => release())`)
			b.until("the card shows the run started with its step running", `document.querySelector(`+jsString(card+`[data-state="running"] li[data-step-id="s1"][data-status="running"]`)+`)`)
		})

		step(t, b, "an agent's failure shows a sentence and the agent's own message; its running step shows stopped", func(t *testing.T, b *tab) {
			with := header("Invocation-Token", token)
			card := testID("run-card", `[data-run-id="`+runID+`"]`)
			const said = "The model's quota is used up until 14:00. Ask again then."
			sageClient.do(t, http.MethodPost, api("runs", runID, "finish"), map[string]any{"outcome": "failed",
				"error": map[string]any{"code": "quota", "message": said}}, with).want(t, http.StatusOK)
			b.until("the card shows the failure", `document.querySelector(`+jsString(card+`[data-state="failed"]`)+`)`)
			if got := b.text(card + " " + testID("run-error")); got != said {
				t.Errorf("the agent's message reads %q", got)
			}
			if got := b.text(card + " " + testID("run-reason")); !strings.Contains(got, "@sage") {
				t.Errorf("the failure reads %q", got)
			}
			if got := b.text(card + " " + testID("run-state")); got != "Failed" {
				t.Errorf("the state reads %q", got)
			}
			if n := eval[int](b, `document.querySelectorAll(`+jsString(card+` li[data-status="running"]`)+`).length`); n != 0 {
				t.Errorf("%d steps of the failed run show running", n)
			}
			if got := b.text(card + ` li[data-step-id="s1"] .st`); got != "stopped" {
				t.Errorf("the step of the failed run shows %q", got)
			}
			if r := runOf(t, w.alice, runID); r.Status != "failed" {
				t.Fatalf("run %+v", r)
			}
			b.screenshot("chat-run-failed.png")
		})

		step(t, b, "a run no agent picks up reads as a sentence, not as agent_unavailable", func(t *testing.T, b *tab) {
			b.typeInto(testID("composer-input"), "@sleepy are you there?")
			b.press(testID("composer-input"), kb.Enter)
			mid := messageWith(b, "@sleepy are you there?")
			card := testID("run-card", `[data-trigger="`+mid+`"]`)
			b.until("the run fails for want of an agent", `document.querySelector(`+jsString(card+`[data-state="failed"][data-reason="agent_unavailable"]`)+`)`)
			got := b.text(card)
			if strings.Contains(got, "agent_unavailable") || !strings.Contains(b.text(card+" "+testID("run-reason")), "did not pick this up") {
				t.Errorf("the card reads %q", got)
			}
		})

		step(t, b, "after a cancel no step of the run shows as running, and the timeout reads as a sentence", func(t *testing.T, b *tab) {
			b.typeInto(testID("composer-input"), "@sage take your time")
			b.press(testID("composer-input"), kb.Enter)
			mid := messageWith(b, "@sage take your time")
			id, tok := mustInvocation(t, sageClient, mid)
			with := header("Invocation-Token", tok)
			sageClient.do(t, http.MethodPost, api("runs", id, "start"), nil, with).want(t, http.StatusOK)
			sageClient.do(t, http.MethodPatch, api("runs", id), map[string]any{"version": 1, "steps": []map[string]any{
				{"id": "a", "kind": "task", "title": "look things up", "status": "running"},
				{"id": "b", "kind": "task", "title": "write it down", "status": "pending"}}}, with).want(t, http.StatusOK)
			card := testID("run-card", `[data-run-id="`+id+`"]`)
			b.until("the run and its step show running", `document.querySelector(`+jsString(card+`[data-state="running"] li[data-step-id="a"][data-status="running"]`)+`)`)
			b.clickLive(card + " " + testID("run-cancel"))
			b.waitFor(card + " " + testID("run-cancelling"))
			// The agent never confirms: the cancel's grace ends the run.
			b.until("the run ends cancelled", `document.querySelector(`+jsString(card+`[data-state="cancelled"][data-reason="cancel_timeout"]`)+`)`)
			if n := eval[int](b, `[...document.querySelectorAll(`+jsString(card+" li")+`)].filter(li => li.dataset.status === "running" || li.textContent.includes("running")).length`); n != 0 {
				t.Errorf("%d steps of the cancelled run show running: %q", n, b.text(card))
			}
			if got := b.text(card + " " + testID("run-reason")); strings.Contains(got, "cancel_timeout") || !strings.Contains(got, "Cancelled") {
				t.Errorf("the reason reads %q", got)
			}
			if b.text(card+" "+testID("run-state")) != "Cancelled" {
				t.Errorf("the state reads %q", b.text(card+" "+testID("run-state")))
			}
			b.screenshot("chat-run-cancelled.png")
		})
	})
}

func TestBrowserChatPhone(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		newest := w.in.owner.mustPost(t, w.shared.MainThreadID, "the newest, seen on a phone")
		channel := "/console/channels/" + w.shared.ID
		b.viewport(phoneWidth, phoneHeight, true)
		defer b.viewport(desktopWidth, desktopHeight, false)
		// jsInView is true when the element sel shows, wholly within the window's width.
		jsInView := func(sel string) string {
			return `(() => { const e = document.querySelector(` + jsString(sel) + `); if (!e) return false; const r = e.getBoundingClientRect();
				return getComputedStyle(e).visibility !== "hidden" && r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= window.innerWidth + 0.5 && r.top >= 0 && r.bottom <= window.innerHeight; })()`
		}

		step(t, b, "at phone width the thread takes the screen: no channel list above it, no navigation cut off", func(t *testing.T, b *tab) {
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			if eval[bool](b, jsInView(testID("channels"))) {
				t.Error("the channel list shows above the messages")
			}
			if eval[bool](b, `[...document.querySelectorAll('[data-testid="nav"] a')].some(a => a.getBoundingClientRect().width > 0)`) {
				t.Error("the navigation shows in the top bar")
			}
			if top := eval[float64](b, `document.querySelector(".thead h1").getBoundingClientRect().top`); top > 100 {
				t.Errorf("the thread's title is %.0f px down the screen", top)
			}
			if !eval[bool](b, jsShown(msgSel(newest.ID))) || !eval[bool](b, jsInView(testID("composer"))) {
				t.Error("the newest message or the composer is not in view")
			}
			if eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
				t.Error("the page scrolls sideways")
			}
			b.screenshot("chat-phone.png")
		})

		step(t, b, "the menu opens with every link of the navigation in view, and closes", func(t *testing.T, b *tab) {
			b.click(testID("menu-toggle"))
			b.until("the menu opens", jsInView(testID("menu")))
			links := eval[[]string](b, `[...document.querySelectorAll('[data-testid="nav"] a, [data-testid="who"], [data-testid="signout"]')].map(a => a.textContent)`)
			if len(links) < 4 {
				t.Fatalf("the menu holds %v", links)
			}
			if !eval[bool](b, `[...document.querySelectorAll('[data-testid="nav"] a, [data-testid="who"], [data-testid="signout"]')].every(a => {
				const r = a.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth + 0.5 && r.bottom <= window.innerHeight; })`) {
				t.Errorf("a link of the menu is cut off: %v", links)
			}
			if b.attr(testID("menu-toggle"), "aria-expanded") != "true" {
				t.Error("the menu link does not say it is open")
			}
			b.screenshot("chat-phone-menu.png")
			b.press(testID("composer-input"), kb.Escape)
			b.until("the menu closes", `!(`+jsInView(testID("menu"))+`)`)
			// A link of the menu leads where it says.
			b.click(testID("menu-toggle"))
			b.until("the menu opens again", jsInView(testID("menu")))
			b.clickTo(testID("nav") + ` a[href="/console/tokens"]`)
			if loc := b.location(); !strings.HasSuffix(loc, "/console/tokens") {
				t.Fatalf("the menu's link led to %s", loc)
			}
		})

		step(t, b, "the channel drawer opens over the thread and leads to another channel", func(t *testing.T, b *tab) {
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			b.click(testID("channels-toggle"))
			b.until("the drawer opens", jsInView(testID("channels")))
			b.screenshot("chat-phone-channels.png")
			b.clickTo(testID("channel-link", `[data-id="`+w.lobby.ID+`"]`))
			b.waitFor(testID("thread", `[data-channel-id="`+w.lobby.ID+`"]`))
			if eval[bool](b, jsInView(testID("channels"))) {
				t.Error("the drawer stays open on the next channel")
			}
		})

		step(t, b, "without JavaScript the menu and the drawer open too", func(t *testing.T, b *tab) {
			b.scripts(false)
			defer b.scripts(true)
			b.visit(channel)
			b.waitFor(testID("menu-toggle"))
			b.click(testID("menu-toggle"))
			b.until("the menu opens", jsInView(testID("menu")))
			b.click(testID("menu-close"))
			b.until("the menu closes", `!(`+jsInView(testID("menu"))+`)`)
			b.click(testID("channels-toggle"))
			b.until("the drawer opens", jsInView(testID("channels")))
			b.click(testID("channels-close"))
			b.until("the drawer closes", `!(`+jsInView(testID("channels"))+`)`)
		})
	})
}
