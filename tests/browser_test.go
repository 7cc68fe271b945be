package tests

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBrowser is the web console in a real headless Chromium, as a person uses it: open the
// bare address, create the owner from the printed setup link, sign out and in, look at the
// overview, build a space and a channel, create an agent and run `bothy agent echo` with its
// token, mention it in the chat view and watch its run card finish and its answer appear
// without a reload. Besides: a form without its CSRF token is refused, a message holding a
// script shows as text, and a person without access to a channel gets the 404 page at its
// address. Screenshots go to the artifact folder (BOTHY_TEST_ARTIFACTS, else tests/artifacts).
// SQLite only: the browser sees the same pages on either engine.
func TestBrowser(t *testing.T) {
	t.Parallel()
	chromium := mustChromium(t)
	srv := mustStart(t, sqliteEngine)
	_, owner := mustChrome(t, chromium, srv.public)
	const ownerPW = "correct horse battery staple"
	parent := t

	// Each step needs the ones before it: the flow stops at the first that fails.
	step := func(name string, f func(t *testing.T, b *tab)) {
		t.Helper()
		if !t.Run(name, func(t *testing.T) { f(t, owner.on(t)) }) {
			t.FailNow()
		}
	}

	step("the bare address leads to the sign-in page", func(t *testing.T, b *tab) {
		if st := b.visit("/"); st != http.StatusOK {
			t.Fatalf("/ ended with status %d", st)
		}
		b.waitFor(testID("signin-form"))
		if loc := b.location(); !strings.Contains(loc, "/console/signin") {
			t.Fatalf("/ led to %s", loc)
		}
	})

	step("the printed setup link creates the owner and signs them in", func(t *testing.T, b *tab) {
		if st := b.visit(srv.setupLink); st != http.StatusOK {
			t.Fatalf("the setup link answered %d", st)
		}
		b.waitFor(testID("setup-form"))
		b.typeInto("#handle", "olga")
		b.typeInto("#display_name", "Olga Owner")
		b.typeInto("#password", ownerPW)
		b.typeInto("#password2", ownerPW)
		if st := b.clickTo(testID("setup-submit")); st != http.StatusOK {
			t.Fatalf("after the setup: status %d", st)
		}
		b.waitFor(testID("overview"))
		if f := b.text(testID("flash")); !strings.Contains(f, "Olga Owner") {
			t.Fatalf("flash %q", f)
		}
	})

	step("sign out, then sign in with the new password", func(t *testing.T, b *tab) {
		b.clickTo(testID("signout"))
		b.waitFor(testID("signin-form"))
		b.typeInto("#handle", "olga")
		b.typeInto("#password", ownerPW)
		if st := b.clickTo(testID("signin-submit")); st != http.StatusOK {
			t.Fatalf("after the sign-in: status %d", st)
		}
		b.waitFor(testID("overview"))
		b.waitFor(testID("nav"))
		if who := b.text(testID("who")); !strings.Contains(who, "@olga") {
			t.Fatalf("signed in as %q", who)
		}
	})

	step("the overview shows the instance", func(t *testing.T, b *tab) {
		b.visit("/console/")
		b.waitFor(testID("overview"))
		if e := b.text(testID("engine")); !strings.Contains(strings.ToLower(e), "sqlite") {
			t.Errorf("engine %q", e)
		}
		b.screenshot("overview.png")
	})

	step("a form posted without its CSRF token is refused with the 403 page", func(t *testing.T, b *tab) {
		b.visit("/console/")
		b.waitFor(testID("signout"))
		// The sign-out form, with its hidden csrf_token removed by a script before it is sent.
		st := b.loads("submit the sign-out form without its token", chromeEval(
			`(() => { const f = document.querySelector('[data-testid="signout"]').form;
			   f.querySelector('input[name="csrf_token"]').remove(); f.submit(); })()`))
		if st != http.StatusForbidden {
			t.Fatalf("status %d, want 403", st)
		}
		b.waitFor(testID("error-page"))
		if s := b.attr(testID("error-page"), "data-status"); s != "403" {
			t.Fatalf("error page of status %q", s)
		}
		// Nothing happened: the owner is still signed in.
		b.visit("/console/")
		b.waitFor(testID("overview"))
	})

	var spaceID, channelID string
	const bobPW = "bob's own password"
	step("the people page adds a person", func(t *testing.T, b *tab) {
		b.clickTo(testID("nav") + ` a[href="/console/people"]`)
		b.waitFor(testID("people"))
		b.typeInto("#handle", "bob")
		b.typeInto("#display_name", "Bob")
		b.typeInto("#password", bobPW)
		b.clickTo(testID("person-add"))
		b.waitFor(testID("person-row", `[data-handle="bob"]`))
		if f := b.text(testID("flash")); !strings.Contains(f, "@bob") {
			t.Fatalf("flash %q", f)
		}
	})

	step("the spaces page creates a space and a channel in it", func(t *testing.T, b *tab) {
		b.clickTo(testID("nav") + ` a[href="/console/spaces"]`)
		b.waitFor(testID("spaces"))
		b.typeInto("#space-name", "Crew")
		b.clickTo(testID("space-create"))
		b.waitFor(testID("space"))
		if n := b.text(testID("space-name")); n != "Crew" {
			t.Fatalf("space %q", n)
		}
		spaceID = b.attr(testID("space"), "data-id")
		b.typeInto("#channel-name", "general")
		b.typeInto("#channel-topic", "Where the crew talks")
		b.clickTo(testID("channel-create"))
		b.waitFor(testID("channel-row"))
		if n := b.text(testID("channel-row") + " " + testID("channel-name")); n != "general" {
			t.Fatalf("channel %q", n)
		}
		channelID = b.attr(testID("channel-row"), "data-id")
		if spaceID == "" || channelID == "" {
			t.Fatalf("space %q, channel %q: no data-id", spaceID, channelID)
		}
	})

	var agentID, agentToken, agentPath string
	step("the agents page creates an agent and shows its token once", func(t *testing.T, b *tab) {
		b.clickTo(testID("nav") + ` a[href="/console/agents"]`)
		b.waitFor(testID("agents"))
		b.typeInto("#agent-handle", "echo")
		b.typeInto("#agent-name", "Echo")
		b.typeInto("#agent-description", "answers each mention with its text")
		b.clickTo(testID("agent-create"))
		b.waitFor(testID("agent-token-panel"))
		agentToken = strings.TrimSpace(b.text(testID("agent-token")))
		agentID = b.attr(testID("agent"), "data-id")
		if !strings.HasPrefix(agentToken, "bothy_") || agentID == "" {
			t.Fatalf("token %q, agent %q", agentToken, agentID)
		}
		agentPath = b.location()[len(srv.public):]
		// Shown once: the agent's page opened again has no token.
		b.visit(agentPath)
		b.waitFor(testID("agent"))
		if n := eval[int](b, `document.querySelectorAll('[data-testid="agent-token"]').length`); n != 0 {
			t.Fatal("the token is shown again")
		}
	})

	step("the channel's access page grants the agent post", func(t *testing.T, b *tab) {
		b.visit("/console/spaces/" + spaceID)
		b.clickTo(testID("channel-row", `[data-id="`+channelID+`"]`) + " " + testID("channel-access-link"))
		b.waitFor(testID("access"))
		b.choose("#grant-principal", agentID)
		b.choose("#grant-level", "post")
		b.clickTo(testID("grant-submit"))
		b.waitFor(testID("grant-row", `[data-principal="`+agentID+`"][data-level="post"]`))
	})

	step("bothy agent echo connects with the token", func(t *testing.T, b *tab) {
		mustRunEcho(t, parent, srv, agentToken)
	})

	var channelPath string
	step("a mention in the chat view: the run card goes to succeeded and the answer appears without a reload", func(t *testing.T, b *tab) {
		b.clickTo(testID("nav") + ` a[href="/console/chat"]`)
		b.clickTo(testID("channel-link", `[data-id="`+channelID+`"]`))
		b.waitFor(testID("thread", `[data-channel-id="`+channelID+`"]`))
		channelPath = b.location()[len(srv.public):]
		// A second tab of the same person holds the thread open and is never reloaded: what the
		// post brings must arrive there live.
		w := owner.c.newTab(t, "watcher")
		w.visit(channelPath)
		w.waitFor(testID("thread"))
		// The script marks the thread live once the gateway has identified it by its cookie.
		w.waitFor(testID("thread", `[data-live="1"]`))
		b.waitFor(testID("thread", `[data-live="1"]`))
		do(w, `window.__bothyNoReload = 1`)
		do(b, `window.__bothyNoReload = 1`)

		b.typeInto(testID("composer-input"), "@echo hello")
		b.click(testID("composer-send"))
		for _, x := range []*tab{b, w} {
			mention := messageWith(x, "@echo hello")
			x.until("the run card of the mention shows succeeded",
				`document.querySelector('[data-testid="run-card"][data-trigger=`+jsString(mention)+`][data-state="succeeded"]')`)
			x.until("the echo's answer is shown", `[...document.querySelectorAll('[data-testid="message"]')].some(m =>
				m.getAttribute("data-id") !== `+jsString(mention)+` && m.querySelector('[data-testid="message-body"]') &&
				m.querySelector('[data-testid="message-body"]').textContent.trim() === "hello")`)
		}
		for _, x := range []*tab{b, w} {
			if !eval[bool](x, `window.__bothyNoReload === 1`) {
				t.Fatalf("the %s tab was reloaded", x.name)
			}
		}
		if out := b.text(testID("run-card", `[data-state="succeeded"]`) + " " + testID("run-output")); !strings.Contains(out, "hello") {
			t.Errorf("run output %q", out)
		}
		b.screenshot("chat-run-succeeded.png")
	})

	step("the chat view fits a phone", func(t *testing.T, b *tab) {
		b.viewport(phoneWidth, phoneHeight, true)
		defer b.viewport(desktopWidth, desktopHeight, false)
		b.visit(channelPath)
		b.waitFor(testID("composer-input"))
		if over := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`); over {
			t.Errorf("the chat view scrolls sideways on a %d px wide phone", phoneWidth)
		}
		b.screenshot("chat-phone.png")
	})

	step("the agent's page lists its finished run", func(t *testing.T, b *tab) {
		b.visit(agentPath)
		b.waitFor(testID("run-row", `[data-status="succeeded"]`))
		b.screenshot("agent.png")
	})

	step("a message holding a script shows as text and runs nothing", func(t *testing.T, b *tab) {
		const evil = `<script>window.__x=1</script>`
		b.visit(channelPath)
		b.typeInto(testID("composer-input"), evil)
		b.click(testID("composer-send"))
		messageWith(b, evil)
		for range 2 { // as it arrived, and as the server renders it
			if n := eval[int](b, `document.querySelectorAll('[data-testid="messages"] script').length`); n != 0 {
				t.Fatalf("%d script elements in the messages", n)
			}
			if eval[bool](b, `typeof window.__x !== "undefined"`) {
				t.Fatal("the message's script ran")
			}
			b.visit(channelPath)
			messageWith(b, evil)
		}
	})

	step("a person without access to the channel gets the 404 page at its address", func(t *testing.T, b *tab) {
		bob := owner.c.newVisitor(t, "bob")
		bob.visit("/console/signin")
		bob.typeInto("#handle", "bob")
		bob.typeInto("#password", bobPW)
		bob.clickTo(testID("signin-submit"))
		bob.waitFor(testID("nav"))
		if n := eval[int](bob, `document.querySelectorAll('[data-testid="channel-link"][data-id=`+jsString(channelID)+`]').length`); n != 0 {
			t.Fatal("bob's chat lists the channel")
		}
		for _, path := range []string{channelPath, "/console/channels/" + channelID} {
			if st := bob.visit(path); st != http.StatusNotFound {
				t.Fatalf("bob opened %s: status %d, want 404", path, st)
			}
			bob.waitFor(testID("error-page", `[data-status="404"]`))
			if n := eval[int](bob, `document.querySelectorAll('[data-testid="message"], [data-testid="composer"]').length`); n != 0 {
				t.Fatalf("the 404 page at %s shows %d messages or a composer", path, n)
			}
		}
	})
}

// messageWith waits until the page shows a message whose body's text is content and returns
// its id.
func messageWith(b *tab, content string) string {
	b.t.Helper()
	find := `[...document.querySelectorAll('[data-testid="message"]')].find(m => m.querySelector('[data-testid="message-body"]') &&
		m.querySelector('[data-testid="message-body"]').textContent.trim() === ` + jsString(content) + `)`
	b.until("a message reading "+content, find)
	return eval[string](b, find+`.getAttribute("data-id")`)
}

// do runs a script in the page.
func do(b *tab, js string) {
	b.t.Helper()
	b.do("run "+js, chromeEval(js))
}

// mustRunEcho runs `bothy agent echo` with token against srv until the test parent ends, and
// waits until it logs its connection.
func mustRunEcho(t, parent *testing.T, srv *server, token string) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	cmd := exec.Command(binPath, "agent", "echo", "--url", srv.public, "--token-file", tokenFile)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The flow's later steps need it: it runs until the whole test ends.
	parent.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if parent.Failed() {
			parent.Logf("bothy agent echo logged:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(stepDeadline)
	for !strings.Contains(logs.String(), "echo: connected") {
		select {
		case err := <-exited:
			t.Fatalf("bothy agent echo exited (%v):\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("bothy agent echo did not connect within %s:\n%s", stepDeadline, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
