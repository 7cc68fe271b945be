package tests

import (
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserFiles shares files from the console in a real Chromium on each engine: images
// picked with the attach button upload as chips and show in the message as previews of their
// size that open the viewer (arrows between them, Escape closes it); an image pasted and a file
// dropped upload as well; a file that is no image
// goes without text and shows as a card; and an HTML file opened at its content address runs
// none of its script, even when the browser is made to show it instead of downloading it.
func TestBrowserFiles(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		// The red picture has more pixels than a thumbnail is made of: it gets none, and its
		// preview shows the image itself.
		f := mustChatFlow(t, eng, "--set", "files.max_image_pixels=200000")
		w, b := f.w, f.alice
		dir := t.TempDir()
		red, blue := writePNG(t, dir, "red.png", 640, 480, color.RGBA{200, 30, 30, 255}), writePNG(t, dir, "blue.png", 450, 300, color.RGBA{30, 30, 200, 255})
		notes := writeFile(t, dir, "notes.txt", "the minutes of the meeting\n")
		evil := writeFile(t, dir, "page.html", `<!doctype html><title>a file</title><p>plain words</p>`+
			`<script>document.title = "pwned"; document.cookie = "pwned=1; path=/";</script>`)
		b.visit("/console/channels/" + w.shared.ID)
		b.waitFor(testID("thread", `[data-live="1"]`))

		// The message shown with n previews or file cards (sel), as the script placed it.
		withFiles := func(sel string, n int) string {
			return `[...document.querySelectorAll('[data-testid="message"]')].find(m => m.querySelectorAll(` + jsString(sel) + `).length === ` +
				strconv.Itoa(n) + `)`
		}

		var pictures string
		step(t, b, "two images picked with the attach button upload as chips and post as previews of their size", func(t *testing.T, b *tab) {
			b.waitFor(testID("attach-button"))
			b.do("pick two images", chromedp.SetUploadFiles(chromedp.CSS(testID("attach-input")), []string{red, blue}))
			b.until("both chips are uploaded", `document.querySelectorAll('[data-testid="attachment-chip"][data-state="done"]').length === 2`)
			if got := b.text(testID("attachment-chip") + " " + testID("attachment-chip-name")); got != "red.png" {
				t.Fatalf("the first chip names %q", got)
			}
			b.screenshot("files-chips.png")
			b.typeInto(testID("composer-input"), "two pictures")
			b.click(testID("composer-send"))
			b.until("the message shows both previews", withFiles(`[data-testid="attachment-preview"]`, 2)+` !== undefined`)
			pictures = eval[string](b, withFiles(`[data-testid="attachment-preview"]`, 2)+`.dataset.id`)
			if n := eval[int](b, `document.querySelectorAll('[data-testid="attachment-chip"]').length`); n != 0 {
				t.Fatalf("%d chips are left after the post", n)
			}
			sel := msgSel(pictures) + " " + testID("attachment-preview")
			if size := eval[string](b, `(i => i.getAttribute("width") + "x" + i.getAttribute("height"))(document.querySelector(`+jsString(sel)+`))`); size != "360x270" {
				t.Fatalf("the first preview is %s, not scaled from 640x480 into 360x270", size)
			}
			// The blue one shows its thumbnail (the full image stands in while the job makes it,
			// and file.updated brings it once it is there); the red one, which gets none, shows
			// the full image.
			shows := func(i int) string { return `document.querySelectorAll(` + jsString(sel) + `)[` + strconv.Itoa(i) + `]` }
			b.until("the blue preview shows its thumbnail", `(i => i.complete && /\/thumbnail(\?|$)/.test(i.currentSrc) && i.naturalWidth === 400)(`+shows(1)+`)`)
			b.until("the red preview shows the full image", `(i => i.complete && i.currentSrc.endsWith("/content") && i.naturalWidth === 640)(`+shows(0)+`)`)
			var m map[string]any
			w.in.owner.do(t, http.MethodGet, api("messages", pictures), nil).want(t, http.StatusOK).decode(t, &m)
			if as, _ := m["attachments"].([]any); len(as) != 2 {
				t.Fatalf("the API shows the message with %v", m["attachments"])
			}
			b.screenshot("files-previews.png")
		})

		step(t, b, "a preview opens the viewer, the arrows go between the images and Escape closes it", func(t *testing.T, b *tab) {
			b.click(msgSel(pictures) + " " + testID("attachment-image"))
			b.waitFor(testID("viewer"))
			if got := b.text(testID("viewer-name")); got != "red.png" {
				t.Fatalf("the viewer names %q", got)
			}
			if got := b.text(testID("viewer-count")); got != "1 of 2" {
				t.Fatalf("the viewer counts %q", got)
			}
			if href := b.attr(testID("viewer-download"), "href"); !strings.HasSuffix(href, "/content") {
				t.Fatalf("the download link is %q", href)
			}
			b.until("the full image shows", `document.querySelector('[data-testid="viewer-image"]').naturalWidth === 640`)
			b.screenshot("files-viewer.png")
			b.press(testID("viewer-close"), kb.ArrowRight)
			b.until("the arrow shows the second image", `document.querySelector('[data-testid="viewer-name"]').textContent === "blue.png"`)
			if got := b.text(testID("viewer-count")); got != "2 of 2" {
				t.Fatalf("the viewer counts %q", got)
			}
			b.press(testID("viewer-close"), kb.Escape)
			b.until("Escape closes the viewer", `document.querySelector('[data-testid="viewer"]').hidden`)
		})

		step(t, b, "an image pasted into the composer and a file dropped on the thread upload too, and × takes one off", func(t *testing.T, b *tab) {
			b.do("paste an image and drop a file", chromeEval(`(() => {
				const png = Uint8Array.from(atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="), c => c.charCodeAt(0));
				const pasted = new DataTransfer();
				pasted.items.add(new File([png], "image.png", {type: "image/png"}));
				document.querySelector('[data-testid="composer-input"]').dispatchEvent(new ClipboardEvent("paste", {clipboardData: pasted, bubbles: true, cancelable: true}));
				const dropped = new DataTransfer();
				dropped.items.add(new File(["dropped words"], "dropped.txt", {type: "text/plain"}));
				const feed = document.querySelector('[data-testid="feed"]');
				feed.dispatchEvent(new DragEvent("dragover", {dataTransfer: dropped, bubbles: true, cancelable: true}));
				feed.dispatchEvent(new DragEvent("drop", {dataTransfer: dropped, bubbles: true, cancelable: true}));
			})()`))
			b.until("both chips are uploaded", `document.querySelectorAll('[data-testid="attachment-chip"][data-state="done"]').length === 2`)
			b.click(testID("attachment-chip") + `:last-child ` + testID("attachment-remove"))
			b.until("one chip is left", `document.querySelectorAll('[data-testid="attachment-chip"]').length === 1`)
			if got := b.text(testID("attachment-chip-name")); got != "image.png" {
				t.Fatalf("the chip left names %q", got)
			}
			b.typeInto(testID("composer-input"), "pasted")
			b.click(testID("composer-send"))
			b.until("the message shows the pasted image alone", `[...document.querySelectorAll('[data-testid="message"]')].some(m =>
				m.textContent.includes("pasted") && m.querySelectorAll('[data-testid="attachment-image"]').length === 1 &&
				!m.querySelector('[data-testid="attachment-file"]'))`)
		})

		var files string
		step(t, b, "files that are no images go without text and show as cards", func(t *testing.T, b *tab) {
			b.do("pick a text file and an HTML page", chromedp.SetUploadFiles(chromedp.CSS(testID("attach-input")), []string{notes, evil}))
			b.until("both chips are uploaded", `document.querySelectorAll('[data-testid="attachment-chip"][data-state="done"]').length === 2`)
			b.click(testID("composer-send"))
			b.until("the message shows both cards", withFiles(`[data-testid="attachment-file"]`, 2)+` !== undefined`)
			files = eval[string](b, withFiles(`[data-testid="attachment-file"]`, 2)+`.dataset.id`)
			// Read in one go: the script may put a newer rendering of the message in place.
			card := msgSel(files) + " " + testID("attachment-file")
			got := eval[string](b, `(c => [c.querySelector('[data-testid="attachment-name"]').textContent,
				c.querySelector('[data-testid="attachment-size"]').textContent,
				c.querySelector('[data-testid="attachment-download"]').getAttribute("download")].join("|"))(document.querySelector(`+jsString(card)+`))`)
			if got != "notes.txt|27 B|notes.txt" {
				t.Fatalf("the card reads name|size|download %q", got)
			}
			if n := eval[int](b, `document.querySelectorAll(`+jsString(msgSel(files)+" "+testID("attachment-image"))+`).length`); n != 0 {
				t.Fatalf("%d files show as images", n)
			}
			b.screenshot("files-cards.png")
		})

		step(t, b, "an uploaded HTML page at its content address runs none of its script", func(t *testing.T, b *tab) {
			id := eval[string](b, `[...document.querySelectorAll(`+jsString(msgSel(files)+" "+testID("attachment-file"))+`)]
				.find(c => c.querySelector('[data-testid="attachment-name"]').textContent === "page.html").dataset.file`)
			content := api("files", id, "content")
			req, err := http.NewRequest(http.MethodGet, w.in.srv.public+content, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+w.alice.token)
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") ||
				!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
				t.Fatalf("the content answered %d with Content-Security-Policy %q and Content-Disposition %q", resp.StatusCode,
					resp.Header.Get("Content-Security-Policy"), resp.Header.Get("Content-Disposition"))
			}
			// A second tab of the same person opens the address with the Content-Disposition
			// taken off on its way, so that the browser shows the page instead of saving it:
			// the sandbox alone must keep its script from running.
			x := f.c.newTab(t, "file")
			shown := openWithoutDisposition(x, w.in.srv.public+content)
			t.Logf("the browser shows the HTML page without its Content-Disposition: %v", shown)
			if shown {
				x.until("the page is shown", `document.readyState === "complete" && document.body && document.body.textContent.includes("plain words")`)
				if title := eval[string](x, `document.title`); title != "a file" {
					t.Fatalf("the page's script ran: the title is %q", title)
				}
			}
			b.visit("/console/channels/" + w.shared.ID)
			if c := eval[string](b, `document.cookie`); strings.Contains(c, "pwned") {
				t.Fatalf("the page's script set a cookie of the console: %q", c)
			}
		})

		step(t, b, "a message carries at most ten files: the eleventh picked is refused and says so", func(t *testing.T, b *tab) {
			var many []string
			for i := range 11 {
				many = append(many, writeFile(t, dir, "part-"+strconv.Itoa(i)+".txt", "part "+strconv.Itoa(i)))
			}
			b.do("pick eleven files", chromedp.SetUploadFiles(chromedp.CSS(testID("attach-input")), many))
			b.until("ten chips are uploaded", `document.querySelectorAll('[data-testid="attachment-chip"][data-state="done"]').length === 10`)
			if n := eval[int](b, `document.querySelectorAll('[data-testid="attachment-chip"]').length`); n != 10 {
				t.Fatalf("%d chips", n)
			}
			if got := b.text(testID("composer") + " " + testID("form-error")); !strings.Contains(got, "at most 10 files") {
				t.Fatalf("the composer says %q", got)
			}
		})
	})
}

// openWithoutDisposition opens url in the tab with the response's Content-Disposition removed
// on its way (DevTools' Fetch domain), and reports whether the browser shows it as a page; a
// type it would still save rather than show ends the navigation without a page.
func openWithoutDisposition(x *tab, url string) bool {
	x.t.Helper()
	shown := true
	x.do("open "+url+" without its Content-Disposition", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		paused := cdp.Events(lctx, tg, fetch.RequestPaused)
		_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: "*/api/v1/files/*/content", RequestStage: fetch.RequestStageResponse}}})
		if err != nil {
			return err
		}
		nav := make(chan error, 1)
		go func() {
			res, err := chromedp.Call(ctx, cdppage.Navigate, cdppage.NavigateParams{URL: url})
			if err == nil && res.ErrorText != "" {
				err = errors.New(res.ErrorText)
			}
			nav <- err
		}()
		for e, err := range paused {
			if err != nil {
				return err
			}
			var keep []*fetch.HeaderEntry
			for _, h := range e.ResponseHeaders {
				if !strings.EqualFold(h.Name, "Content-Disposition") {
					keep = append(keep, h)
				}
			}
			if _, err := chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: e.RequestID,
				ResponseCode: e.ResponseStatusCode, ResponseHeaders: keep}); err != nil {
				return err
			}
			break
		}
		if err := <-nav; err != nil {
			if !strings.Contains(err.Error(), "ERR_ABORTED") {
				return err
			}
			shown = false
		}
		_, err = chromedp.Call(ctx, fetch.Disable, cdp.Empty{})
		return err
	}))
	return shown
}

// writePNG writes a w×h PNG of one colour into dir and returns its path.
func writePNG(t *testing.T, dir, name string, w, h int, c color.Color) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	p := filepath.Join(dir, name)
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := png.Encode(out, img); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
