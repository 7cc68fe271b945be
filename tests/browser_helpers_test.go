package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's chromium headless through the DevTools protocol (chromedp),
// against a real `bothy serve` on loopback. CI (.ci/run) installs chromium and names it in
// chromiumEnv; where chromium is missing the tests fail under CI=true and skip elsewhere.

// chromiumEnv names the Chromium binary for the browser tests (.ci/run sets it).
const chromiumEnv = "BOTHY_TEST_CHROMIUM"

// artifactsEnv names the folder the browser tests write their screenshots to; the default is
// tests/artifacts in the repository (ignored by git).
const artifactsEnv = "BOTHY_TEST_ARTIFACTS"

// stepDeadline bounds every single wait of a browser test: a navigation, a query, a condition
// polled in a loop. A failing step ends the test with the page's HTML and a
// screenshot instead of hanging.
const stepDeadline = 20 * time.Second

// Window sizes: a laptop for the screenshots of the pages, a phone for the chat view's.
const (
	desktopWidth, desktopHeight = 1280, 900
	phoneWidth, phoneHeight     = 390, 844
)

// mustChromium returns the Chromium to run: chromiumEnv, else chromium on the PATH. Without
// one the test fails in CI, which must have installed it, and is skipped elsewhere.
func mustChromium(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(chromiumEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("%s=%s: %v", chromiumEnv, p, err)
		}
		return p
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("no chromium: CI must install it (.ci/run: apt-get install chromium) and set %s", chromiumEnv)
	}
	tb.Skipf("skipped outside CI only: no chromium on the PATH and %s unset (apt-get install chromium)", chromiumEnv)
	return ""
}

// artifactDir is where the screenshots go, made if missing.
func artifactDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = filepath.Join(repoRoot, "tests", "artifacts")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		tb.Fatalf("artifact folder: %v", err)
	}
	return abs
}

// chrome is one headless Chromium process with a fresh profile.
type chrome struct {
	alloc   context.Context // the allocator: new browser contexts are made from browser
	browser context.Context // the first tab's context, which owns the browser
	base    string          // the server's public base URL
	shots   string          // the artifact folder
}

// mustChrome starts the Chromium bin (see mustChromium) with the flags this machine needs (no
// sandbox as root, no GPU, no QUIC, nothing that reaches out to the network by itself) and a
// fresh --user-data-dir, and returns it with its first tab on the server at base. Both end
// with the test.
func mustChrome(t *testing.T, bin, base string) (*chrome, *tab) {
	t.Helper()
	profile, err := os.MkdirTemp("", "bothy-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(desktopWidth, desktopHeight),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	// Cleanups run last-in first-out: the browser stops before its profile is removed.
	t.Cleanup(func() { os.RemoveAll(profile) })
	t.Cleanup(cancelAlloc)
	t.Cleanup(cancelBrowser)
	c := &chrome{alloc: alloc, browser: browser, base: base, shots: artifactDir(t)}
	tb := &tab{t: t, c: c, ctx: browser, name: "main"}
	// The first action starts the browser; a browser that cannot start fails here, plainly.
	if err := firstAction(browser, cancelBrowser); err != nil {
		t.Fatalf("start %s headless: %v", bin, err)
	}
	return c, tb
}

// firstAction opens about:blank in a new chromedp context, which starts its browser or tab.
// It must run on that context itself, not on one derived with a timeout (the browser would
// live only as long as the derived one), so the deadline cancels the context instead.
func firstAction(ctx context.Context, cancel context.CancelFunc) error {
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx, chromedp.Navigate("about:blank")) }()
	select {
	case err := <-done:
		return err
	case <-time.After(stepDeadline):
		cancel()
		<-done
		return fmt.Errorf("no page within %s", stepDeadline)
	}
}

// newVisitor is a tab in a browser context of its own: its own cookies, as a second person
// on another computer.
func (c *chrome) newVisitor(t *testing.T, name string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(c.browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := firstAction(ctx, cancel); err != nil {
		t.Fatalf("open a tab in a new browser context: %v", err)
	}
	return &tab{t: t, c: c, ctx: ctx, name: name}
}

// newTab is another tab of the first tab's browser context: the same person, the same cookies.
// It closes when t ends.
func (c *chrome) newTab(t *testing.T, name string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(c.browser)
	t.Cleanup(cancel)
	if err := firstAction(ctx, cancel); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return &tab{t: t, c: c, ctx: ctx, name: name}
}

// tab is one browser tab, as one person uses it. Its methods fail the test they were made
// with (use tab.on for a subtest), after saving a screenshot and printing the page's HTML.
type tab struct {
	t    *testing.T
	c    *chrome
	ctx  context.Context
	name string
}

// on is the same tab, failing t: each subtest of a flow calls it first.
func (b *tab) on(t *testing.T) *tab {
	c := *b
	c.t = t
	return &c
}

// do runs actions within stepDeadline.
func (b *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepDeadline)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

// value runs one action that returns a value, within stepDeadline.
func value[T any](b *tab, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepDeadline)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.fail(what, err)
	}
	return v
}

// visit opens path of the server (or a whole URL) and waits for the page to load; it returns
// the HTTP status of the document.
func (b *tab) visit(path string) int64 {
	b.t.Helper()
	u := path
	if !strings.HasPrefix(u, "http") && u != "about:blank" {
		u = b.c.base + path
	}
	resp := value(b, "open "+u, chromedp.NavigateResponse(u))
	if resp == nil {
		return 0
	}
	return resp.Status
}

// loads runs actions that lead to a new page (a click on a link or a submit button) and waits
// for it; it returns the HTTP status of the document that loaded.
func (b *tab) loads(what string, actions ...chromedp.Action[chromedp.Void]) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepDeadline)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		b.fail(what, err)
	}
	if resp == nil {
		return 0
	}
	return responseStatus(resp)
}

func responseStatus(r *network.Response) int64 { return r.Status }

// testID is the CSS selector of the element with data-testid id; more narrows it, as in
// testID("message", `[data-id="…"]`).
func testID(id string, more ...string) string {
	return `[data-testid="` + id + `"]` + strings.Join(more, "")
}

// waitFor waits until the element sel (CSS) is visible.
func (b *tab) waitFor(sel string) {
	b.t.Helper()
	b.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// click clicks the visible element sel, like a person with a mouse.
func (b *tab) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// clickTo clicks sel and waits for the page it leads to; it returns its HTTP status.
func (b *tab) clickTo(sel string) int64 {
	b.t.Helper()
	return b.loads("click "+sel+" and wait for the next page", chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// typeInto types text into the field sel, key by key, after emptying it.
func (b *tab) typeInto(sel, text string) {
	b.t.Helper()
	b.do("type into "+sel, chromedp.WaitVisible(chromedp.CSS(sel)),
		chromeEval(`document.querySelector(`+jsString(sel)+`).value = ""`),
		chromedp.SendKeys(chromedp.CSS(sel), text, chromedp.NodeVisible))
}

// choose picks the option value of the select sel, as a person does with the list, and fails
// when the list has no such option.
func (b *tab) choose(sel, value string) {
	b.t.Helper()
	b.waitFor(sel)
	ok := eval[bool](b, `(() => { const s = document.querySelector(`+jsString(sel)+`);
		if (![...s.options].some(o => o.value === `+jsString(value)+`)) return false;
		s.value = `+jsString(value)+`; s.dispatchEvent(new Event("input", {bubbles: true}));
		s.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`)
	if !ok {
		b.fail("choose "+value+" in "+sel, errors.New("no such option"))
	}
}

// text is the visible text of the element sel.
func (b *tab) text(sel string) string {
	b.t.Helper()
	return value(b, "read the text of "+sel, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
}

// attr is the attribute name of the element sel ("" when it has none).
func (b *tab) attr(sel, name string) string {
	b.t.Helper()
	return value(b, "read "+name+" of "+sel, chromedp.AttributeValue(chromedp.CSS(sel), name, chromedp.NodeReady)).Value
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *tab, js string) T {
	b.t.Helper()
	return value(b, "evaluate "+js, chromedp.Evaluate[T](js))
}

// location is the page's URL.
func (b *tab) location() string {
	b.t.Helper()
	return value(b, "read the location", chromedp.Location())
}

// until polls the JavaScript condition js (an expression that is true when done) every 100 ms
// until it holds, for at most stepDeadline: for what the page's script changes without a
// navigation.
func (b *tab) until(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(stepDeadline)
	var last error
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(`+js+`)`))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			if last == nil {
				last = fmt.Errorf("still false after %s: %s", stepDeadline, js)
			}
			b.fail(what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screenshot saves a full-page PNG as name in the artifact folder.
func (b *tab) screenshot(name string) {
	b.t.Helper()
	png := value(b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(b.c.shots, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("write %s: %v", path, err)
	}
	b.t.Logf("screenshot %s (%d bytes)", path, len(png))
}

// viewport sets the size of the tab's page; mobile also makes it a phone (touch, device scale).
func (b *tab) viewport(width, height int64, mobile bool) {
	b.t.Helper()
	var opts []chromedp.EmulateViewportOption
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	b.do(fmt.Sprintf("set the viewport to %dx%d", width, height), chromedp.EmulateViewport(width, height, opts...))
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// fail ends the test with what went wrong, the page's address and HTML, and a screenshot of
// it in the artifact folder (failure-<test>.png).
func (b *tab) fail(what string, err error) {
	b.t.Helper()
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w (after %s)", err, stepDeadline)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	where, _ := chromedp.Run(ctx, chromedp.Location())
	html, herr := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement ? document.documentElement.outerHTML : ""`))
	if herr != nil {
		html = "(could not read the page: " + herr.Error() + ")"
	}
	if len(html) > 12000 {
		html = html[:12000] + "\n…(cut)"
	}
	shot := "(no screenshot)"
	if png, serr := chromedp.Run(ctx, chromedp.FullScreenshot(100)); serr == nil {
		p := filepath.Join(b.c.shots, "failure-"+unsafeName.ReplaceAllString(b.t.Name(), "_")+".png")
		if os.WriteFile(p, png, 0o644) == nil {
			shot = p
		}
	}
	b.t.Fatalf("%s tab: %s: %v\nat %s; screenshot %s\npage HTML:\n%s", b.name, what, err, where, shot, html)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// chromeEval is an action that runs a script in the page and ignores its result.
func chromeEval(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](js)
}

// signIn signs the tab in as handle through the console's sign-in form and waits for the page
// it leads to.
func (b *tab) signIn(handle, password string) {
	b.t.Helper()
	b.visit("/console/signin")
	b.typeInto("#handle", handle)
	b.typeInto("#password", password)
	b.clickTo(testID("signin-submit"))
	b.waitFor(testID("nav"))
}

// timezone makes the tab's page see the IANA time zone tz, as a person in that zone does.
func (b *tab) timezone(tz string) {
	b.t.Helper()
	b.do("set the time zone to "+tz, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: tz})
		return err
	}))
}

// scripts turns the page's JavaScript on or off, for what a page does without it.
func (b *tab) scripts(on bool) {
	b.t.Helper()
	b.do(fmt.Sprintf("set script execution to %v", on), chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on})
		return err
	}))
}

// allowClipboard lets the pages of the tab's browser context write and read the clipboard,
// as a person allows it.
func (b *tab) allowClipboard() {
	b.t.Helper()
	id := chromedp.FromContext(b.ctx).BrowserContextID
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		b.do("allow "+name, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted,
				Origin: b.c.base, BrowserContextID: id})
			return err
		}))
	}
}

// press sends one key (a kb constant such as kb.Enter, or a character) to the element sel.
func (b *tab) press(sel, key string) {
	b.t.Helper()
	b.do("press "+key+" in "+sel, chromedp.SendKeys(chromedp.CSS(sel), key, chromedp.NodeVisible))
}

// await evaluates a JavaScript expression that gives a promise, and waits for its value.
func await[T any](b *tab, js string) T {
	b.t.Helper()
	return value(b, "evaluate "+js, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
}

// clickLive clicks sel in a part of the page that the page's script may replace while the
// click is on its way (a run card that a new state re-renders): when the node went away in
// between, it clicks the one that replaced it, as a person would click again.
func (b *tab) clickLive(sel string) {
	b.t.Helper()
	deadline := time.Now().Add(stepDeadline)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, stepDeadline)
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
		cancel()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node") && !strings.Contains(err.Error(), "No node with given id") || time.Now().After(deadline) {
			b.fail("click "+sel, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
