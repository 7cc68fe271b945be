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

// TestConsoleChat is issue 6's chat view without a browser: the channels a person may see, a
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
			for _, want := range []string{`<a href="https://bothy.dev/x" rel="noopener nofollow">site</a>`,
				`<a href="https://example.com/y" rel="noopener nofollow">https://example.com/y</a>`, "[bad](javascript:alert(1))"} {
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
			if total > 100<<10 {
				t.Fatalf("the first load is %d bytes", total)
			}
			t.Logf("first load: %d bytes (HTML %d)", total, len(p.body))
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

// fetch posts a form as the console's script does (the fragment header, the CSRF field).
func (b *browser) fetch(tb testing.TB, path string, form url.Values) consolePage {
	tb.Helper()
	form.Set("csrf_token", b.csrf)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Bothy-Fragment", "1")
	resp, err := b.hc.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return consolePage{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}
