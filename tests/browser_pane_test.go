package tests

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
)

// The thread under a message opens in a pane beside its channel, in a real Chromium on each
// engine: the channel stays in the main column, the pane shows the message and its replies
// with a composer of its own, both are live from the page's one gateway connection, Close
// leads back to the channel alone, on a phone the pane covers the channel, and without the
// script the pane's form posts back to the page with the pane open.

// The two columns of a page with the pane open.
var (
	paneSel   = testID("thread-pane")
	columnSel = "main" + testID("thread")
)

// inPane and inColumn narrow sel to the pane or to the main column.
func inPane(sel string) string   { return paneSel + " " + sel }
func inColumn(sel string) string { return columnSel + " " + sel }

// jsMessageIn is the message of scope (a CSS selector) whose body reads content, or null.
func jsMessageIn(scope, content string) string {
	return `[...document.querySelectorAll(` + jsString(scope+" "+testID("message")) + `)].find(m => m.querySelector('[data-testid="message-body"]') &&
		m.querySelector('[data-testid="message-body"]').textContent.trim() === ` + jsString(content) + `)`
}

// jsVisibleIn is true when the element sel lies wholly in the scroll view of its thread's
// messages and has a size.
func jsVisibleIn(sel string) string {
	return `(() => { const e = document.querySelector(` + jsString(sel) + `); if (!e) return false;
		const r = e.getBoundingClientRect(), v = e.closest('[data-testid="messages"]').getBoundingClientRect();
		return r.width > 0 && r.height > 0 && r.top >= v.top - 1 && r.bottom <= v.bottom + 1 && r.left >= v.left - 1 && r.right <= v.right + 1; })()`
}

// jsRect is the element sel's box as [left, right, width] of the window, [] when missing.
func jsRect(sel string) string {
	return `(() => { const e = document.querySelector(` + jsString(sel) + `); if (!e) return [];
		const r = e.getBoundingClientRect(); return [r.left, r.right, r.width]; })()`
}

// mustBecomeRead waits until c has nothing unread in the thread threadID of the channel ("" for
// its main thread), as the REST API counts it: until a page has marked it read.
func mustBecomeRead(t *testing.T, c *client, channelID, threadID string) {
	t.Helper()
	for deadline := time.Now().Add(stepDeadline); ; time.Sleep(100 * time.Millisecond) {
		e, _ := c.mustUnread(t).entry(channelID, threadID)
		if e.UnreadCount == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread %q of %s stays unread: %d messages", threadID, channelID, e.UnreadCount)
		}
	}
}

func TestBrowserThreadPane(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		mainTh := w.shared.MainThreadID
		channel := "/console/channels/" + w.shared.ID
		before := w.in.owner.mustPost(t, mainTh, "good morning, all")
		parent := w.in.owner.mustPost(t, mainTh, "where do we meet?")
		var replies threadWithMessage
		w.in.owner.do(t, http.MethodPost, api("messages", parent.ID, "thread"), map[string]any{"content": "at the bothy"}).
			want(t, http.StatusCreated).decode(t, &replies)
		pane := "/console/threads/" + replies.Thread.ID
		parentInColumn := inColumn(msgSel(parent.ID))

		step(t, b, "the replies of a message open in a pane beside the channel, whose messages stay in view", func(t *testing.T, b *tab) {
			b.visit(channel)
			b.waitFor(testID("thread", `[data-live="1"]`))
			if n := eval[int](b, `document.querySelectorAll(`+jsString(paneSel)+`).length`); n != 0 {
				t.Fatal("the channel alone shows a pane")
			}
			if st := b.clickTo(msgSel(parent.ID) + " " + testID("message-replies")); st != http.StatusOK {
				t.Fatalf("the replies link answered %d", st)
			}
			b.waitFor(inPane(testID("thread", `[data-live="1"]`)))
			b.waitFor(columnSel + `[data-live="1"]`)
			if loc := strings.TrimPrefix(b.location(), w.in.srv.public); loc != pane {
				t.Fatalf("the replies link led to %s, not %s", loc, pane)
			}
			if got := b.text(inPane(testID("thread-parent") + " " + testID("message-body"))); got != "where do we meet?" {
				t.Fatalf("the pane shows above its replies %q", got)
			}
			b.until("the pane shows the reply", jsMessageIn(paneSel+" "+testID("feed"), "at the bothy"))
			b.waitFor(inPane(testID("composer-input")))
			for _, m := range []string{before.ID, parent.ID} {
				if !eval[bool](b, jsVisibleIn(inColumn(msgSel(m)))) {
					t.Errorf("the channel's message %s is not in view beside the pane", m)
				}
			}
			if eval[bool](b, `!!`+jsMessageIn(columnSel, "at the bothy")) {
				t.Error("the reply shows in the channel's column")
			}
			col, side := eval[[]float64](b, jsRect(columnSel)), eval[[]float64](b, jsRect(paneSel))
			if len(col) != 3 || len(side) != 3 || col[2] < 300 || side[2] < 300 || side[0] < col[1]-1 || side[1] > desktopWidth+1 {
				t.Fatalf("the column %v and the pane %v are not side by side", col, side)
			}
			if !strings.Contains(b.attr(parentInColumn, "class"), "hl") {
				t.Error("the channel does not mark the message whose replies are open")
			}
			b.screenshot("chat-thread-pane.png")
		})

		step(t, b, "a reply posted in the pane shows there, and the channel counts it without a reload", func(t *testing.T, b *tab) {
			do(b, `window.__bothyNoReload = 1`)
			b.typeInto(inPane(testID("composer-input")), "see you there")
			b.press(inPane(testID("composer-input")), kb.Enter)
			b.until("the pane shows the reply", jsMessageIn(paneSel+" "+testID("feed"), "see you there"))
			b.until("the channel counts two replies", `(() => { const r = document.querySelector(`+jsString(parentInColumn+" "+testID("message-replies"))+`);
				return r && r.textContent.includes("2 replies"); })()`)
			if eval[bool](b, `!!`+jsMessageIn(columnSel, "see you there")) {
				t.Error("the reply shows in the channel's column")
			}
			var got page[message]
			w.in.owner.do(t, http.MethodGet, api("threads", replies.Thread.ID, "messages"), nil).want(t, http.StatusOK).decode(t, &got)
			if len(got.Items) != 2 || !slices.ContainsFunc(got.Items, func(m message) bool { return m.Content == "see you there" }) {
				t.Fatalf("the API lists the thread as %+v", got.Items)
			}
			if !eval[bool](b, `window.__bothyNoReload === 1`) {
				t.Fatal("the page was reloaded")
			}
		})

		step(t, b, "while the pane is open, the channel's new messages come live in the main column and others' replies in the pane", func(t *testing.T, b *tab) {
			w.in.owner.mustPost(t, mainTh, "meanwhile in the channel")
			b.until("the channel's column shows the owner's message", jsMessageIn(columnSel+" "+testID("feed"), "meanwhile in the channel"))
			if eval[bool](b, `!!`+jsMessageIn(paneSel, "meanwhile in the channel")) {
				t.Error("the channel's message shows in the pane")
			}
			w.in.owner.mustPost(t, replies.Thread.ID, "I'll bring tea")
			b.until("the pane shows the owner's reply", jsMessageIn(paneSel+" "+testID("feed"), "I'll bring tea"))
			b.until("the channel counts three replies", `(() => { const r = document.querySelector(`+jsString(parentInColumn+" "+testID("message-replies"))+`);
				return r && r.textContent.includes("3 replies"); })()`)
			b.until("the parent above the pane's replies counts them too", `(() => { const r = document.querySelector(`+jsString(inPane(testID("thread-parent")+" "+testID("message-replies")))+`);
				return r && r.textContent.includes("3 replies"); })()`)
			if !eval[bool](b, `window.__bothyNoReload === 1`) {
				t.Fatal("the page was reloaded")
			}
		})

		step(t, b, "each column has its own typing line and marks its own thread read", func(t *testing.T, b *tab) {
			owner := f.c.newVisitor(t, "owner")
			owner.signIn("owner", ownerPassword)
			owner.visit(pane)
			owner.waitFor(inPane(testID("thread", `[data-live="1"]`)))
			owner.typeInto(inPane(testID("composer-input")), "one more thing")
			b.until("the pane's typing line names the owner", `(() => { const l = document.querySelector(`+jsString(inPane(testID("typing")))+`);
				return !l.hidden && l.textContent.indexOf("The Owner is typing") === 0; })()`)
			if !eval[bool](b, `document.querySelector(`+jsString(inColumn(testID("typing")))+`).hidden`) {
				t.Error("the channel's typing line shows who types in the pane")
			}
			owner.press(inPane(testID("composer-input")), kb.Enter)
			b.until("the pane shows the owner's message", jsMessageIn(paneSel+" "+testID("feed"), "one more thing"))
			b.until("the pane's typing line is hidden", `document.querySelector(`+jsString(inPane(testID("typing")))+`).hidden`)
			mustBecomeRead(t, w.alice, w.shared.ID, replies.Thread.ID)
			w.in.owner.mustPost(t, mainTh, "a word in the channel")
			b.until("the channel's column shows it", jsMessageIn(columnSel+" "+testID("feed"), "a word in the channel"))
			mustBecomeRead(t, w.alice, w.shared.ID, "")
		})

		step(t, b, "Close returns to the channel without the pane", func(t *testing.T, b *tab) {
			if st := b.clickTo(inPane(testID("thread-pane-close"))); st != http.StatusOK {
				t.Fatalf("Close answered %d", st)
			}
			b.waitFor(testID("thread", `[data-live="1"]`))
			if loc := strings.TrimPrefix(b.location(), w.in.srv.public); loc != channel {
				t.Fatalf("Close led to %s, not %s", loc, channel)
			}
			if n := eval[int](b, `document.querySelectorAll(`+jsString(paneSel)+`).length`); n != 0 {
				t.Fatal("the pane is still open")
			}
			messageWith(b, "meanwhile in the channel")
		})

		step(t, b, "on a phone the pane covers the channel, with its Close link in view", func(t *testing.T, b *tab) {
			b.viewport(phoneWidth, phoneHeight, true)
			defer b.viewport(desktopWidth, desktopHeight, false)
			b.visit(pane)
			b.waitFor(inPane(testID("thread", `[data-live="1"]`)))
			side := eval[[]float64](b, jsRect(paneSel))
			if len(side) != 3 || side[0] > 1 || side[2] < phoneWidth-1 {
				t.Fatalf("the pane is at %v on a %d px wide screen", side, phoneWidth)
			}
			if eval[bool](b, jsVisibleIn(parentInColumn)) {
				t.Error("the channel's messages show beside the pane on a phone")
			}
			if r := eval[[]float64](b, jsRect(inPane(testID("thread-pane-close")))); len(r) != 3 || r[2] == 0 || r[1] > phoneWidth {
				t.Fatalf("the Close link is at %v", r)
			}
			if eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
				t.Error("the page scrolls sideways")
			}
			b.screenshot("chat-thread-pane-phone.png")
			b.clickTo(inPane(testID("thread-pane-close")))
			b.waitFor(testID("thread", `[data-live="1"]`))
			if loc := strings.TrimPrefix(b.location(), w.in.srv.public); loc != channel || eval[int](b, `document.querySelectorAll(`+jsString(paneSel)+`).length`) != 0 {
				t.Fatalf("Close on a phone led to %s", loc)
			}
		})

		step(t, b, "without JavaScript the pane opens from the link and its form posts back to the page, the pane open", func(t *testing.T, b *tab) {
			b.scripts(false)
			defer b.scripts(true)
			b.visit(channel)
			b.clickTo(msgSel(parent.ID) + " " + testID("message-replies"))
			b.waitFor(inPane(testID("composer-input")))
			b.typeInto(inPane(testID("composer-input")), "posted by a plain form")
			if st := b.clickTo(inPane(testID("composer-send"))); st != http.StatusOK {
				t.Fatalf("the pane's form answered %d", st)
			}
			if loc := strings.TrimPrefix(b.location(), w.in.srv.public); !strings.HasPrefix(loc, pane+"#m-") {
				t.Fatalf("the pane's form led to %s", loc)
			}
			b.until("the pane shows the reply", jsMessageIn(paneSel+" "+testID("feed"), "posted by a plain form"))
			b.waitFor(parentInColumn)
		})
	})
}
