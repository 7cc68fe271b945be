package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mustSignIn opens a console browser signed in as handle.
func mustSignIn(tb testing.TB, srv *server, handle, password string) *browser {
	tb.Helper()
	b := newBrowser(tb, srv.public)
	b.get("/console/signin").want(tb, http.StatusOK)
	b.post("/console/signin", url.Values{"handle": {handle}, "password": {password}, "next": {"/console/chat"}}).
		want(tb, http.StatusSeeOther)
	b.get("/console/account").want(tb, http.StatusOK) // the CSRF token of the new session
	return b
}

// mustSay posts content through the composer of the thread and follows the redirect; it returns
// the new message's id and the page after the redirect.
func (b *browser) mustSay(tb testing.TB, threadID, content string) (string, consolePage) {
	tb.Helper()
	p := b.post("/console/threads/"+threadID+"/messages", url.Values{"content": {content}}).want(tb, http.StatusSeeOther)
	loc := p.location()
	_, id, ok := strings.Cut(loc, "#m-")
	if !ok {
		tb.Fatalf("the post redirected to %q, not to a message", loc)
	}
	path, _, _ := strings.Cut(loc, "#")
	return id, b.get(path).want(tb, http.StatusOK)
}

// element is the element with data-testid id and data-id (or data-run-id) equal to dataID,
// from its start tag to the next element of the same kind (or the end of the page): enough to
// look into one message or one run card.
func (p consolePage) element(tb testing.TB, testid, attr, dataID string) string {
	tb.Helper()
	re := regexp.MustCompile(`data-testid="` + testid + `" ` + attr + `="` + regexp.QuoteMeta(dataID) + `"`)
	loc := re.FindStringIndex(p.body)
	if loc == nil {
		tb.Fatalf("no %s %s on the page: %.2000s", testid, dataID, p.body)
	}
	rest := p.body[loc[1]:]
	if end := strings.Index(rest, `data-testid="`+testid+`"`); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

var runCardRe = regexp.MustCompile(`data-testid="run-card" data-run-id="([^"]+)" data-state="([^"]+)"`)

// TestConsoleChat is the console's chat view without a browser: the channels a person may see, a
// thread with its messages, posting through the form, Markdown shown safely, reactions, an
// agent's run card and its cancel, the fragments the script reads, and the script's gateway
// connection by cookie.
func TestConsoleChat(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		th := w.sharedTh.Thread.ID
		mainTh := w.shared.MainThreadID
		alice := mustSignIn(t, w.in.srv, "alice", "alice-password-1")

		t.Run("the chat leads to the first channel the person may see, and lists only those", func(t *testing.T) {
			p := alice.get("/console/chat").want(t, http.StatusSeeOther)
			if !strings.HasPrefix(p.location(), "/console/channels/") {
				t.Fatalf("/console/chat redirects to %q", p.location())
			}
			p = alice.get("/console/channels/"+w.shared.ID).want(t, http.StatusOK)
			for _, id := range []string{"thread", "composer", "composer-input", "composer-send", "channel-link"} {
				if !p.has(id) {
					t.Errorf("the channel page lacks %s", id)
				}
			}
			if !strings.Contains(p.body, `data-id="`+w.lobby.ID+`"`) || strings.Contains(p.body, w.priv.ID) {
				t.Fatalf("the left column lists the wrong channels: %.3000s", p.body)
			}
			if !strings.Contains(p.body, `href="/console/threads/`+th+`"`) {
				t.Fatalf("the channel's thread is not listed: %.3000s", p.body)
			}
		})

		t.Run("a thread shows its messages without JavaScript", func(t *testing.T) {
			p := alice.get("/console/threads/"+th).want(t, http.StatusOK)
			if !strings.Contains(p.body, "the shared thread") || !strings.Contains(p.body, `data-thread-id="`+th+`"`) {
				t.Fatalf("%.3000s", p.body)
			}
			// The script identifies from the head the page was read at, so nothing committed
			// before it connects is missed.
			m := regexp.MustCompile(`data-cursor="(\d+)"`).FindStringSubmatch(p.body)
			if m == nil {
				t.Fatal("the thread has no data-cursor")
			}
			if cur, _ := strconv.ParseInt(m[1], 10, 64); cur < w.in.owner.mustHead(t)-1 || cur == 0 {
				t.Fatalf("data-cursor %d, the head is %d", cur, w.in.owner.mustHead(t))
			}
		})

		t.Run("a person posts through the form and sees the message after the redirect", func(t *testing.T) {
			id, p := alice.mustSay(t, mainTh, "hello **world**")
			msg := p.element(t, "message", "data-id", id)
			if !strings.Contains(msg, "<strong>world</strong>") || !strings.Contains(msg, "@alice") {
				t.Fatalf("the message shows as %q", msg)
			}
		})

		t.Run("the same form sent twice posts once", func(t *testing.T) {
			form := url.Values{"content": {"only once"}, "client_msg_id": {uniqueName("console")}}
			a := alice.post("/console/threads/"+th+"/messages", form).want(t, http.StatusSeeOther)
			b := alice.post("/console/threads/"+th+"/messages", form).want(t, http.StatusSeeOther)
			if a.location() != b.location() {
				t.Fatalf("two messages: %q and %q", a.location(), b.location())
			}
		})

		t.Run("a message with a script shows as text", func(t *testing.T) {
			id, p := alice.mustSay(t, mainTh, `<script>alert(1)</script> <img src=x onerror="alert(2)">`)
			msg := p.element(t, "message", "data-id", id)
			if !strings.Contains(msg, "&lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(p.body, "<script>alert") ||
				strings.Contains(p.body, "<img") {
				t.Fatalf("the script is not escaped: %q", msg)
			}
		})

		t.Run("a Markdown link is nofollow and a javascript link is no link", func(t *testing.T) {
			id, p := alice.mustSay(t, mainTh, "[site](https://bothy.dev/x) and [bad](javascript:alert(1)) and https://example.com/y")
			msg := p.element(t, "message", "data-id", id)
			for _, want := range []string{`<a href="https://bothy.dev/x" rel="noopener nofollow ugc">site</a>`,
				`<a href="https://example.com/y" rel="noopener nofollow ugc">https://example.com/y</a>`, "[bad](javascript:alert(1))"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the message lacks %s: %q", want, msg)
				}
			}
			if strings.Contains(p.body, `href="javascript:`) {
				t.Fatal("a javascript: link")
			}
		})

		t.Run("a refused message comes back in the composer with the reason", func(t *testing.T) {
			p := alice.post("/console/threads/"+mainTh+"/messages", url.Values{"content": {"   "}}).want(t, http.StatusUnprocessableEntity)
			if !p.has("form-error") || !p.has("composer") {
				t.Fatalf("%.3000s", p.body)
			}
		})

		t.Run("a channel or thread without access is the 404 page", func(t *testing.T) {
			for _, path := range []string{"/console/channels/" + w.priv.ID, "/console/threads/" + w.privTh.Thread.ID,
				"/console/messages/" + w.privTh.Message.ID + "/fragment", "/console/channels/not-an-id",
				"/console/channels/" + w.shared.ID + "?before=nope"} {
				if p := alice.get(path).want(t, http.StatusNotFound); !p.has("error-page") {
					t.Fatalf("%s: %.600s", path, p.body)
				}
			}
			p := alice.post("/console/threads/"+w.privTh.Thread.ID+"/messages", url.Values{"content": {"sneaky"}}).
				want(t, http.StatusNotFound)
			if !p.has("error-page") {
				t.Fatalf("%.600s", p.body)
			}
			p = alice.post("/console/messages/"+w.privTh.Message.ID+"/reactions", url.Values{"emoji": {"👍"}}).want(t, http.StatusNotFound)
			if evs, _ := w.in.owner.mustAllEvents(t, w.in.owner.mustHead(t)-3); strings.Contains(fmt.Sprint(types(evs)), "reaction") {
				t.Fatalf("a reaction went through: %v", types(evs))
			}
		})

		t.Run("a person without a channel sees an empty chat", func(t *testing.T) {
			w.in.mustCreateUser(t, "carol")
			carol := mustSignIn(t, w.in.srv, "carol", "carol-password-1")
			if p := carol.get("/console/chat").want(t, http.StatusOK); !p.has("chat-empty") || p.has("channel-link") {
				t.Fatalf("%.2000s", p.body)
			}
		})

		t.Run("signed out, the chat asks to sign in", func(t *testing.T) {
			anon := newBrowser(t, w.in.srv.public)
			if p := anon.get("/console/channels/"+w.shared.ID).want(t, http.StatusSeeOther); !strings.HasPrefix(p.location(), "/console/signin") {
				t.Fatalf("redirects to %q", p.location())
			}
		})

		t.Run("a reaction toggles", func(t *testing.T) {
			id, _ := alice.mustSay(t, mainTh, "react to me")
			p := alice.post("/console/messages/"+id+"/reactions", url.Values{"emoji": {"👍"}}).want(t, http.StatusSeeOther)
			page := alice.get(strings.Split(p.location(), "#")[0]).want(t, http.StatusOK)
			msg := page.element(t, "message", "data-id", id)
			if !strings.Contains(msg, `value="👍" aria-pressed="true" data-testid="reaction"`) || !strings.Contains(msg, "👍 1") {
				t.Fatalf("no reaction after the first post: %q", msg)
			}
			// Bob may read the lobby only: he sees no composer or reaction there, and his view of
			// alice's reaction is not his.
			alice.post("/console/messages/"+id+"/reactions", url.Values{"emoji": {"👍"}}).want(t, http.StatusSeeOther)
			page = alice.get(strings.Split(p.location(), "#")[0]).want(t, http.StatusOK)
			if msg := page.element(t, "message", "data-id", id); strings.Contains(msg, `data-testid="reaction"`) {
				t.Fatalf("the reaction stayed after the second post: %q", msg)
			}
			alice.post("/console/messages/"+id+"/reactions", url.Values{"emoji": {"not an emoji"}}).want(t, http.StatusSeeOther)
			if p := alice.get("/console/channels/" + w.shared.ID); !p.has("flash") {
				t.Fatalf("a refused reaction says nothing: %.2000s", p.body)
			}
		})

		t.Run("a person starts a thread from the channel's page and lands in it", func(t *testing.T) {
			p := alice.get("/console/channels/"+w.shared.ID).want(t, http.StatusOK)
			if !p.has("new-thread-form") {
				t.Fatalf("no new thread form: %.2000s", p.body)
			}
			p = alice.post("/console/channels/"+w.shared.ID+"/threads", url.Values{"title": {"Release notes"},
				"content": {"what goes into **1.0**?"}, "client_msg_id": {"new-thread-1"}}).want(t, http.StatusSeeOther)
			if !strings.HasPrefix(p.location(), "/console/threads/") {
				t.Fatalf("started a thread, went to %q", p.location())
			}
			page := alice.get(p.location()).want(t, http.StatusOK)
			if !strings.Contains(page.body, "Release notes") || !strings.Contains(page.body, "<strong>1.0</strong>") || page.has("new-thread") {
				t.Fatalf("%.3000s", page.body)
			}
			if nav := alice.get("/console/channels/"+w.shared.ID).want(t, http.StatusOK); !strings.Contains(nav.body, `href="`+p.location()+`"`) {
				t.Fatalf("the new thread is not in the channel's list: %.3000s", nav.body)
			}
			p = alice.post("/console/channels/"+w.shared.ID+"/threads", url.Values{"content": {""}}).want(t, http.StatusSeeOther)
			if page := alice.get(p.location()); !page.has("flash") {
				t.Fatalf("an empty thread was not refused with a flash: %.2000s", page.body)
			}
		})

		t.Run("a reader who may not post sees no composer and no reaction palette", func(t *testing.T) {
			w.in.owner.mustGrant(t, w.shared.ID, w.bobU.ID, "view")
			bob := mustSignIn(t, w.in.srv, "bob", "bob-password-1")
			p := bob.get("/console/channels/"+w.shared.ID).want(t, http.StatusOK)
			if p.has("composer") || !p.has("read-only") || p.has("react") || p.has("new-thread") {
				t.Fatalf("%.3000s", p.body)
			}
			bob.post("/console/threads/"+mainTh+"/messages", url.Values{"content": {"hi"}}).want(t, http.StatusNotFound)
		})

		t.Run("an @mention of an agent shows a run card, and its invoker cancels it", func(t *testing.T) {
			a, _ := w.in.mustCreateAgent(t, "helper")
			w.in.owner.mustGrant(t, w.shared.ID, a.ID, "post")
			w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
			// The console reads the people and agents again every two seconds.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				p := alice.get("/console/channels/"+w.shared.ID).want(t, http.StatusOK)
				if regexp.MustCompile(`data-members="[^"]*\bhelper\b`).MatchString(p.body) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the composer does not offer @helper: %.3000s", p.body)
				}
			}
			id, p := alice.mustSay(t, mainTh, "@helper please look")
			m := runCardRe.FindStringSubmatch(p.element(t, "message", "data-id", id))
			if m == nil || m[2] != "queued" {
				t.Fatalf("no queued run card after the message: %.3000s", p.body)
			}
			runID := m[1]
			card := p.element(t, "run-card", "data-run-id", runID)
			for _, want := range []string{"@helper", `data-testid="run-status"`, `data-testid="run-output"`, `data-testid="run-cancel"`} {
				if !strings.Contains(card, want) {
					t.Errorf("the card lacks %s: %q", want, card)
				}
			}
			bob := mustSignIn(t, w.in.srv, "bob", "bob-password-1")
			if card := bob.get("/console/channels/"+w.shared.ID).element(t, "run-card", "data-run-id", runID); strings.Contains(card, "run-cancel") {
				t.Fatalf("bob may not cancel alice's run: %q", card)
			}
			bob.post("/console/runs/"+runID+"/cancel", url.Values{}).want(t, http.StatusNotFound)

			f := alice.get("/console/runs/"+runID+"/fragment").want(t, http.StatusOK)
			if !f.has("run-card") || strings.Contains(f.body, "<html") {
				t.Fatalf("run fragment %.600s", f.body)
			}
			c := alice.post("/console/runs/"+runID+"/cancel", url.Values{}).want(t, http.StatusSeeOther)
			if !strings.HasSuffix(c.location(), "#r-"+runID) {
				t.Fatalf("the cancel redirects to %q", c.location())
			}
			p = alice.get(strings.Split(c.location(), "#")[0]).want(t, http.StatusOK)
			if card := p.element(t, "run-card", "data-run-id", runID); !strings.Contains(p.body, `data-run-id="`+runID+`" data-state="cancelled"`) ||
				strings.Contains(card, "run-cancel") || !p.has("flash") {
				t.Fatalf("after the cancel: %.3000s", p.body)
			}
			alice.post("/console/runs/"+runID+"/cancel", url.Values{}).want(t, http.StatusSeeOther)
		})

		t.Run("the fragment of a message is the message alone", func(t *testing.T) {
			id, _ := alice.mustSay(t, mainTh, "fragment *me*")
			p := alice.get("/console/messages/"+id+"/fragment").want(t, http.StatusOK)
			if !strings.HasPrefix(strings.TrimSpace(p.body), `<article class="msg" id="m-`+id+`"`) || !strings.Contains(p.body, "<em>me</em>") {
				t.Fatalf("%.600s", p.body)
			}
		})

		t.Run("the script's post answers the new message's fragment, or the reason as text", func(t *testing.T) {
			alice.get("/console/channels/" + w.shared.ID)
			p := alice.fetch(t, "/console/threads/"+mainTh+"/messages", url.Values{"content": {"by script"}}).want(t, http.StatusCreated)
			if !strings.Contains(p.body, `data-testid="message"`) || !strings.Contains(p.body, "by script") {
				t.Fatalf("%.600s", p.body)
			}
			p = alice.fetch(t, "/console/threads/"+mainTh+"/messages", url.Values{"content": {""}}).want(t, http.StatusUnprocessableEntity)
			if !strings.HasPrefix(p.header.Get("Content-Type"), "text/plain") || p.body == "" {
				t.Fatalf("%v %q", p.header, p.body)
			}
		})

		t.Run("the script identifies on the gateway with the session cookie and follows the thread", func(t *testing.T) {
			var cookie string
			u, _ := url.Parse(w.in.srv.public + "/console/")
			for _, c := range alice.hc.Jar.Cookies(u) {
				if c.Name == "bothy_session" {
					cookie = c.Name + "=" + c.Value
				}
			}
			h := http.Header{"Cookie": {cookie}, "Origin": {w.in.srv.public}}
			rc := mustDialGateway(t, w.in.srv.public, dialOptions{header: h})
			rc.mustSend(t, "identify", map[string]any{})
			var ready struct {
				Principal struct {
					ID string `json:"id"`
				} `json:"principal"`
			}
			if err := json.Unmarshal(rc.mustExpect(t, "ready"), &ready); err != nil || ready.Principal.ID != w.aliceU.ID {
				t.Fatalf("ready for %+v (%v)", ready, err)
			}
			rc.mustExpect(t, "catchup.complete")
			rc.mustSend(t, "focus", map[string]any{"thread_id": mainTh})
			m := w.in.owner.mustPost(t, mainTh, "live for alice")
			deadline := time.Now().Add(10 * time.Second)
			for {
				f := rc.mustNext(t, time.Until(deadline))
				var e event
				if f.Op == "event" && json.Unmarshal(f.D, &e) == nil && e.Type == "message.created" && e.Data["id"] == m.ID {
					break
				}
			}

			h.Set("Origin", "https://evil.example")
			if _, resp, err := dialGateway(t, w.in.srv.public, dialOptions{header: h}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("a cross-origin upgrade with the cookie was not refused: %v", err)
			}
		})

		t.Run("the first load of a busy thread stays small", func(t *testing.T) {
			for i := range 70 {
				w.in.owner.mustPost(t, th, fmt.Sprintf("message %d with some **Markdown**, a link https://example.com/%d and @alice", i, i))
			}
			p := alice.get("/console/threads/"+th).want(t, http.StatusOK)
			if n := strings.Count(p.body, `data-testid="message"`); n != 50 || !p.has("older") {
				t.Fatalf("%d messages on the first page, older link %v", n, p.has("older"))
			}
			total := len(p.body)
			for _, m := range regexp.MustCompile(`(?:href|src)="(/assets/[^"]+)"`).FindAllStringSubmatch(p.body, -1) {
				resp, err := http.Get(w.in.srv.public + m[1])
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				total += len(b)
			}
			// Each message carries its actions as links and forms that work without the script;
			// the page and the assets go gzipped, which is what a browser fetches, and what the
			// tighter bound below holds. The script has grown with the typing line, the live
			// unread counts, the app's service worker, the agents' buttons, approval cards and
			// slash command list, and the composer's uploads, the image viewer and the search
			// box: 168 KiB before compression.
			if total > 168<<10 {
				t.Fatalf("the first load is %d bytes (HTML %d)", total, len(p.body))
			}
			wire := gzipped(t, alice, "/console/threads/"+th)
			for _, m := range regexp.MustCompile(`(?:href|src)="(/assets/[^"]+)"`).FindAllStringSubmatch(p.body, -1) {
				wire += gzipped(t, alice, m[1])
			}
			if wire > 32<<10 {
				t.Fatalf("the first load is %d bytes on the wire", wire)
			}
			t.Logf("first load: %d bytes (HTML %d), %d bytes on the wire", total, len(p.body), wire)
			older := regexp.MustCompile(`href="(/console/threads/[^"]+\?before=[^"]+)"`).FindStringSubmatch(p.body)
			if older == nil {
				t.Fatal("no older link")
			}
			op := alice.get(strings.ReplaceAll(older[1], "&amp;", "&")).want(t, http.StatusOK)
			if !op.has("latest") || strings.Count(op.body, `data-testid="message"`) == 0 {
				t.Fatalf("the older page: %.2000s", op.body)
			}
		})
	})
}

// TestConsoleChatMessageActions is the actions on a message without JavaScript: the permalink,
// the edit form, the delete confirmation and the reply, each a page with a form that posts to
// the console, through the same use cases and permission checks as the REST API (403 for one
// who may read the message but not do that, 404 for one who may not read it).
func TestConsoleChatMessageActions(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		mainTh, th := w.shared.MainThreadID, w.sharedTh.Thread.ID
		w.in.owner.mustGrant(t, w.shared.ID, w.bobU.ID, "view")
		alice := mustSignIn(t, w.in.srv, "alice", "alice-password-1")
		bob := mustSignIn(t, w.in.srv, "bob", "bob-password-1")
		w.in.mustCreateUser(t, "carol")
		carol := mustSignIn(t, w.in.srv, "carol", "carol-password-1")
		owner := mustSignIn(t, w.in.srv, "owner", ownerPassword)
		id, page := alice.mustSay(t, mainTh, "first *draft*")
		ownersMsg := w.in.owner.mustPost(t, mainTh, "the owner speaks")
		page = alice.get("/console/channels/"+w.shared.ID).want(t, http.StatusOK)
		restContent := func(t *testing.T, id string) (string, bool) {
			t.Helper()
			var m message
			w.in.owner.do(t, http.MethodGet, api("messages", id), nil).want(t, http.StatusOK).decode(t, &m)
			return m.Content, m.Deleted
		}

		t.Run("a message offers edit and delete to its author, delete to a manager, neither to a reader", func(t *testing.T) {
			mine, theirs := page.element(t, "message", "data-id", id), page.element(t, "message", "data-id", ownersMsg.ID)
			for _, want := range []string{`href="/console/messages/` + id + `/edit"`, `href="/console/messages/` + id + `/delete"`,
				`href="/console/messages/` + id + `/reply"`, `href="/console/messages/` + id + `"`} {
				if !strings.Contains(mine, want) {
					t.Errorf("alice's message lacks %s: %s", want, mine)
				}
			}
			if strings.Contains(theirs, "/edit") || strings.Contains(theirs, "/delete") {
				t.Errorf("alice is offered to change the owner's message: %s", theirs)
			}
			op := owner.get("/console/channels/"+w.shared.ID).want(t, http.StatusOK).element(t, "message", "data-id", id)
			if !strings.Contains(op, "/delete") || strings.Contains(op, "/edit") {
				t.Errorf("the owner, who manages the channel, sees on alice's message: %s", op)
			}
			bp := bob.get("/console/channels/"+w.shared.ID).want(t, http.StatusOK).element(t, "message", "data-id", id)
			if strings.Contains(bp, "/edit") || strings.Contains(bp, "/delete") || strings.Contains(bp, "/reply") {
				t.Errorf("bob, who may only read, is offered: %s", bp)
			}
		})

		t.Run("the edit page's form changes the text and leads back to the message", func(t *testing.T) {
			p := alice.get("/console/messages/"+id+"/edit").want(t, http.StatusOK)
			if !p.has("edit-form") || !strings.Contains(p.body, ">first *draft*</textarea>") || !strings.Contains(p.body, `name="csrf_token"`) {
				t.Fatalf("%.3000s", p.body)
			}
			r := alice.post("/console/messages/"+id+"/edit", url.Values{"content": {"second **take**"}}).want(t, http.StatusSeeOther)
			if want := "?at=" + id + "#m-" + id; !strings.HasSuffix(r.location(), want) {
				t.Fatalf("the edit led to %q", r.location())
			}
			msg := alice.get(strings.Split(r.location(), "#")[0]).want(t, http.StatusOK).element(t, "message", "data-id", id)
			if !strings.Contains(msg, "<strong>take</strong>") || !strings.Contains(msg, "(edited)") {
				t.Fatalf("after the edit: %s", msg)
			}
			if c, _ := restContent(t, id); c != "second **take**" {
				t.Fatalf("the API reads %q", c)
			}
			p = alice.post("/console/messages/"+id+"/edit", url.Values{"content": {"  "}}).want(t, http.StatusUnprocessableEntity)
			if !p.has("form-error") || !p.has("edit-form") {
				t.Fatalf("an empty edit: %.2000s", p.body)
			}
			if f := alice.fetch(t, "/console/messages/"+id+"/edit", url.Values{"content": {"by script"}}).want(t, http.StatusOK); !strings.HasPrefix(strings.TrimSpace(f.body), `<article class="msg"`) {
				t.Fatalf("the script's edit answers %.600s", f.body)
			}
		})

		t.Run("one who may read but not change a message gets 403, one who may not read it 404, and nothing changes", func(t *testing.T) {
			for _, c := range []struct {
				who    *browser
				status int
			}{{bob, http.StatusForbidden}, {carol, http.StatusNotFound}} {
				for _, path := range []string{"/edit", "/delete"} {
					c.who.get("/console/messages/"+id+path).want(t, c.status)
					c.who.post("/console/messages/"+id+path, url.Values{"content": {"hijacked"}}).want(t, c.status)
				}
			}
			alice.get("/console/messages/"+ownersMsg.ID+"/edit").want(t, http.StatusForbidden)
			alice.post("/console/messages/"+ownersMsg.ID+"/delete", url.Values{}).want(t, http.StatusForbidden)
			owner.post("/console/messages/"+id+"/edit", url.Values{"content": {"the owner's words"}}).want(t, http.StatusForbidden)
			if c, deleted := restContent(t, id); c != "by script" || deleted {
				t.Fatalf("the message became %q (deleted %v)", c, deleted)
			}
			if c, deleted := restContent(t, ownersMsg.ID); c != "the owner speaks" || deleted {
				t.Fatalf("the owner's message became %q (deleted %v)", c, deleted)
			}
			bob.get("/console/messages/"+id+"/reply").want(t, http.StatusForbidden)
			alice.post("/console/messages/"+id+"/delete", url.Values{"csrf_token": {"forged"}}).want(t, http.StatusForbidden)
			if _, deleted := restContent(t, id); deleted {
				t.Fatal("a form without its token deleted the message")
			}
		})

		t.Run("a manager deletes someone else's message after the confirmation page", func(t *testing.T) {
			p := owner.get("/console/messages/"+id+"/delete").want(t, http.StatusOK)
			if !p.has("delete-form") || !strings.Contains(p.body, "someone else") {
				t.Fatalf("%.3000s", p.body)
			}
			r := owner.post("/console/messages/"+id+"/delete", url.Values{}).want(t, http.StatusSeeOther)
			if msg := owner.get(strings.Split(r.location(), "#")[0]).want(t, http.StatusOK).element(t, "message", "data-id", id); !strings.Contains(msg, "message-deleted") {
				t.Fatalf("after the delete: %s", msg)
			}
			if _, deleted := restContent(t, id); !deleted {
				t.Fatal("the API does not see the message deleted")
			}
			// Deleted once: again is 410, as DELETE /api/v1/messages/{id} answers.
			owner.post("/console/messages/"+id+"/delete", url.Values{}).want(t, http.StatusGone)
			alice.get("/console/messages/"+id+"/edit").want(t, http.StatusGone)
		})

		t.Run("the author deletes their own message", func(t *testing.T) {
			own, _ := alice.mustSay(t, mainTh, "a mistake")
			alice.get("/console/messages/"+own+"/delete").want(t, http.StatusOK)
			alice.post("/console/messages/"+own+"/delete", url.Values{}).want(t, http.StatusSeeOther)
			if _, deleted := restContent(t, own); !deleted {
				t.Fatal("not deleted")
			}
		})

		t.Run("a reply to a message of the channel starts its thread, and Reply then opens that thread", func(t *testing.T) {
			p := alice.get("/console/messages/"+ownersMsg.ID+"/reply").want(t, http.StatusOK)
			if !p.has("reply-form") || !strings.Contains(p.body, `action="/console/messages/`+ownersMsg.ID+`/thread"`) ||
				!strings.Contains(p.body, `name="csrf_token"`) || !strings.Contains(p.body, `name="client_msg_id"`) {
				t.Fatalf("%.4000s", p.body)
			}
			if f := alice.fetchGet(t, "/console/messages/"+ownersMsg.ID+"/reply"); !strings.HasPrefix(strings.TrimSpace(f.body), `<form method="post" action="/console/messages/`+ownersMsg.ID+`/thread"`) {
				t.Fatalf("the script's form: %.600s", f.body)
			}
			alice.post("/console/messages/"+ownersMsg.ID+"/thread", url.Values{"content": {"  "}}).want(t, http.StatusUnprocessableEntity)
			cmid := uniqueName("reply")
			r := alice.post("/console/messages/"+ownersMsg.ID+"/thread", url.Values{"content": {"yes, *indeed*"},
				"client_msg_id": {cmid}}).want(t, http.StatusSeeOther)
			var parent message
			w.in.owner.do(t, http.MethodGet, api("messages", ownersMsg.ID), nil).want(t, http.StatusOK).decode(t, &parent)
			if parent.ReplyThreadID == nil || parent.ReplyCount == nil || *parent.ReplyCount != 1 {
				t.Fatalf("the API reads the message as %+v", parent)
			}
			replies := "/console/threads/" + *parent.ReplyThreadID
			if !strings.HasPrefix(r.location(), replies+"#m-") {
				t.Fatalf("the reply led to %q, not its thread %s", r.location(), replies)
			}
			// The same form sent again (a double click) posts once.
			alice.post("/console/messages/"+ownersMsg.ID+"/thread", url.Values{"content": {"yes, *indeed*"},
				"client_msg_id": {cmid}}).want(t, http.StatusSeeOther)
			if again := alice.get("/console/messages/"+ownersMsg.ID+"/reply").want(t, http.StatusSeeOther); again.location() != replies {
				t.Fatalf("Reply again leads to %q, not the thread %s", again.location(), replies)
			}
			th := alice.get(replies).want(t, http.StatusOK)
			if !th.has("thread-parent") || !strings.Contains(th.element(t, "message", "data-id", ownersMsg.ID), "the owner speaks") ||
				!strings.Contains(th.body, "<h1>Re: the owner speaks</h1>") || !strings.Contains(th.body, "<em>indeed</em>") {
				t.Fatalf("the thread of the reply: %.4000s", th.body)
			}
			msg := alice.get("/console/channels/"+w.shared.ID).want(t, http.StatusOK).element(t, "message", "data-id", ownersMsg.ID)
			for _, want := range []string{`data-reply-thread="` + *parent.ReplyThreadID + `"`, "1 reply", `href="` + replies + `"`} {
				if !strings.Contains(msg, want) {
					t.Errorf("the message in the channel lacks %s: %s", want, msg)
				}
			}
			alice.post("/console/messages/"+ownersMsg.ID+"/thread", url.Values{"content": {"and more"}}).want(t, http.StatusSeeOther)
			if msg := alice.fetchGet(t, "/console/messages/"+ownersMsg.ID+"/fragment").body; !strings.Contains(msg, "2 replies") {
				t.Fatalf("after a second reply the message shows %s", msg)
			}
			bob.get("/console/messages/"+ownersMsg.ID+"/reply").want(t, http.StatusForbidden)
			bob.post("/console/messages/"+ownersMsg.ID+"/thread", url.Values{"content": {"me?"}}).want(t, http.StatusForbidden)
			carol.post("/console/messages/"+ownersMsg.ID+"/thread", url.Values{"content": {"me?"}}).want(t, http.StatusNotFound)
			alice.post("/console/messages/"+w.sharedTh.Message.ID+"/thread", url.Values{"content": {"nested"}}).want(t, http.StatusConflict)
		})

		t.Run("a reply in a thread is an answer there with the quote", func(t *testing.T) {
			p := alice.get("/console/messages/"+w.sharedTh.Message.ID+"/reply").want(t, http.StatusOK)
			if !p.has("reply-form") || !strings.Contains(p.body, `action="/console/threads/`+th+`/messages"`) ||
				!strings.Contains(p.body, "&gt; the shared thread") {
				t.Fatalf("%.4000s", p.body)
			}
			f := alice.fetchGet(t, "/console/messages/"+w.sharedTh.Message.ID+"/reply")
			if !strings.HasPrefix(f.header.Get("Content-Type"), "text/plain") || !strings.HasPrefix(f.body, "> the shared thread\n> — @owner, ") {
				t.Fatalf("the script's quote: %v %q", f.header, f.body)
			}
		})

		t.Run("a permalink opens the thread at its message, even one older than the newest page", func(t *testing.T) {
			for i := range 60 {
				w.in.owner.mustPost(t, mainTh, fmt.Sprintf("later %d", i))
			}
			r := alice.get("/console/messages/"+ownersMsg.ID).want(t, http.StatusSeeOther)
			if r.location() != "/console/channels/"+w.shared.ID+"?at="+ownersMsg.ID+"#m-"+ownersMsg.ID {
				t.Fatalf("the permalink leads to %q", r.location())
			}
			p := alice.get(strings.Split(r.location(), "#")[0]).want(t, http.StatusOK)
			if !strings.Contains(p.body, `id="m-`+ownersMsg.ID+`"`) || !p.has("latest") {
				t.Fatalf("the page at the message: %.2000s", p.body)
			}
			if n := strings.Count(alice.get("/console/channels/"+w.shared.ID).body, `id="m-`+ownersMsg.ID+`"`); n != 0 {
				t.Fatal("the message is on the newest page: the test proves nothing")
			}
			carol.get("/console/messages/"+ownersMsg.ID).want(t, http.StatusNotFound)
			alice.get("/console/threads/"+th+"?at="+ownersMsg.ID).want(t, http.StatusNotFound)
		})
	})
}

// fetchGet reads path as the console's script does (the fragment header).
func (b *browser) fetchGet(tb testing.TB, path string) consolePage {
	tb.Helper()
	return b.script(tb, http.MethodGet, path, nil)
}

// gzipped is the size of path's answer as a browser fetches it: compressed, where the server
// compresses it.
func gzipped(tb testing.TB, b *browser, path string) int {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	hc := &http.Client{Jar: b.hc.Jar, Transport: &http.Transport{DisableCompression: true}}
	resp, err := hc.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s: status %d", path, resp.StatusCode)
	}
	return len(raw)
}

// fetch posts a form as the console's script does (the fragment header, the CSRF field).
func (b *browser) fetch(tb testing.TB, path string, form url.Values) consolePage {
	tb.Helper()
	form.Set("csrf_token", b.csrf)
	return b.script(tb, http.MethodPost, path, form)
}

// script sends a request as the console's script does: with the fragment header, and form
// (if any) as the body.
func (b *browser) script(tb testing.TB, method, path string, form url.Values) consolePage {
	tb.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(context.Background(), method, b.base+path, body)
	if err != nil {
		tb.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Bothy-Fragment", "1")
	resp, err := b.hc.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return consolePage{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}
