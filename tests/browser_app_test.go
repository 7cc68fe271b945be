package tests

import (
	"net/http"
	"strings"
	"testing"
)

// TestBrowserInstallsAsApp checks what makes the console installable on a phone's home screen,
// in a real Chromium on each engine: every page names a web app manifest that the browser can
// read, with the instance's name, a start inside the console and icons that load; and a
// signed-in page registers the service worker that shows push notifications, which becomes
// active for the console's scope.
func TestBrowserInstallsAsApp(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		b := f.alice
		b.visit("/console/chat")

		step(t, b, "the page names a manifest whose start, scope and icons are the console's", func(t *testing.T, b *tab) {
			if href := b.attr(`link[rel="manifest"]`, "href"); href != "/console/manifest.webmanifest" {
				t.Fatalf("the manifest link is %q", href)
			}
			got := await[string](b, `fetch("/console/manifest.webmanifest").then(r => r.json()).then(m =>
				[m.name, m.start_url, m.scope, m.display, m.icons.map(i => i.sizes).join(",")].join("|"))`)
			if got != "bothy|/console/chat|/console/|standalone|192x192,512x512,any" {
				t.Fatalf("the manifest reads %q", got)
			}
			for _, src := range []string{"/console/icon-192.png", "/console/icon-512.png"} {
				size := await[string](b, `new Promise((ok, fail) => { const i = new Image(); i.onload = () => ok(i.naturalWidth + "x" + i.naturalHeight);
					i.onerror = () => fail(new Error("no icon")); i.src = `+jsString(src)+`; })`)
				if !strings.HasPrefix(src, "/console/icon-"+strings.Split(size, "x")[0]) {
					t.Fatalf("%s is %s", src, size)
				}
			}
		})

		step(t, b, "a signed-in page registers the service worker for the console", func(t *testing.T, b *tab) {
			got := await[string](b, `navigator.serviceWorker.ready.then(r => r.scope + " " + (r.active ? r.active.state : "none"))`)
			if !strings.HasSuffix(got, "/console/ activated") && !strings.HasSuffix(got, "/console/ activating") {
				t.Fatalf("the service worker is %q", got)
			}
		})
	})
}

// TestAppFiles checks the fixed-name files the browser asks for: the service worker is
// JavaScript and never cached stale, the manifest is a manifest, and both answer without a
// session.
func TestAppFiles(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		for path, ctype := range map[string]string{
			"/console/sw.js":                "text/javascript",
			"/console/manifest.webmanifest": "application/manifest+json",
			"/console/icon-192.png":         "image/png",
		} {
			resp, err := http.Get(in.srv.public + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) {
				t.Errorf("%s answers %d %q, want 200 %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), ctype)
			}
			if path == "/console/sw.js" && resp.Header.Get("Cache-Control") != "no-cache" {
				t.Errorf("the service worker is cached with %q", resp.Header.Get("Cache-Control"))
			}
		}
	})
}
