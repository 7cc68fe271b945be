package tests

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// TestBrowserNotify drives the console's notification controls in a real Chromium on each
// engine: the level of a channel in its header, Follow and Mute on a thread, the rename of a
// thread by its creator, and "Notifications on this device" on the account page. The REST API
// sees every change the forms make.
func TestBrowserNotify(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		f := mustChatFlow(t, eng)
		w, b := f.w, f.alice
		channel := "/console/channels/" + w.shared.ID

		step(t, b, "the channel's header shows the default level, and Save stores the one chosen", func(t *testing.T, b *tab) {
			b.visit(channel)
			b.waitFor(testID("notify-level"))
			if got := b.text(testID("notify-level-state")); got != "Notified of mentions only (the default)" {
				t.Fatalf("the header says %q", got)
			}
			if got := eval[string](b, `document.querySelector('[data-testid="notify-level"]').value`); got != "mentions" {
				t.Fatalf("the select shows %q", got)
			}
			b.choose(testID("notify-level"), "all")
			if st := b.clickTo(testID("notify-level-save")); st != http.StatusOK {
				t.Fatalf("Save answered %d", st)
			}
			if got := b.text(testID("flash")); !strings.Contains(got, "every message") {
				t.Fatalf("the flash says %q", got)
			}
			if got := b.text(testID("notify-level-state")); got != "Notified of every message" {
				t.Fatalf("the header says %q after Save", got)
			}
			got := w.alice.do(t, http.MethodGet, api("channels", w.shared.ID, "notifications"), nil).want(t, http.StatusOK).obj()
			if got["level"] != "all" || got["default"] != false {
				t.Fatalf("the API says %v", got)
			}
			b.screenshot("chat-notify-level.png")
		})

		theirs := "/console/threads/" + w.sharedTh.Thread.ID
		subscription := func() map[string]any {
			return w.alice.do(t, http.MethodGet, api("threads", w.sharedTh.Thread.ID, "subscription"), nil).want(t, http.StatusOK).obj()
		}

		step(t, b, "Follow, Mute and Unmute change the person's subscription to another's thread", func(t *testing.T, b *tab) {
			b.visit(theirs)
			b.waitFor(testID("thread-follow"))
			if n := eval[int](b, `document.querySelectorAll('[data-testid="notify-level"], [data-testid="thread-title-form"]').length`); n != 0 {
				t.Fatal("another's thread offers the channel's level or Rename to a poster")
			}
			if got := b.attr(testID("thread-follow"), "data-level"); got != "mentions" {
				t.Fatalf("the thread starts at %q", got)
			}
			for _, c := range []struct{ button, level, state string }{
				{"thread-follow-on", "all", "You follow this thread"},
				{"thread-mute", "none", "You muted this thread"},
				{"thread-unmute", "mentions", "Only mentions"},
			} {
				if st := b.clickTo(testID(c.button)); st != http.StatusOK {
					t.Fatalf("%s answered %d", c.button, st)
				}
				if got := b.text(testID("thread-follow-state")); !strings.Contains(got, c.state) {
					t.Fatalf("after %s the header says %q", c.button, got)
				}
				if got := subscription(); got["level"] != c.level || got["default"] != false {
					t.Fatalf("after %s the API says %v", c.button, got)
				}
			}
		})

		own := w.alice.mustCreateThread(t, w.shared.ID, "Draft plans", "a thread of alice's own")

		step(t, b, "the creator renames a thread and the page shows the new title", func(t *testing.T, b *tab) {
			b.visit("/console/threads/" + own.Thread.ID)
			if got := b.attr(testID("thread-follow"), "data-level"); got != "all" {
				t.Fatalf("the creator's own thread is at %q, not followed", got)
			}
			b.click(testID("thread-rename") + " summary")
			b.typeInto(testID("thread-title-input"), "Launch plans")
			if st := b.clickTo(testID("thread-title-save")); st != http.StatusOK {
				t.Fatalf("Rename answered %d", st)
			}
			if got := b.text(testID("thread") + " h1"); got != "Launch plans" {
				t.Fatalf("the page's title is %q", got)
			}
			var th thread
			w.alice.do(t, http.MethodGet, api("threads", own.Thread.ID), nil).want(t, http.StatusOK).decode(t, &th)
			if th.Title != "Launch plans" {
				t.Fatalf("the API's title is %q", th.Title)
			}
		})

		step(t, b, "the account page explains push, and Turn on asks the server for its key", func(t *testing.T, b *tab) {
			allowNotifications(b)
			b.visit("/console/account")
			b.waitFor(testID("push-enable"))
			if got := b.text(testID("push")); !strings.Contains(got, "Notifications on this device") || !strings.Contains(got, "No device gets notifications yet.") {
				t.Fatalf("the section reads %q", got)
			}
			do(b, `window.keyCalls = 0; const real = window.fetch; window.fetch = function (u) {
				if (String(u).indexOf("/console/push/key") >= 0) window.keyCalls++; return real.apply(this, arguments); }`)
			b.click(testID("push-enable"))
			// Headless Chromium has no push service: the subscription itself fails after the key.
			b.until("the key endpoint is called", `window.keyCalls === 1`)
			// With the key, the script subscribes the service worker's registration (the step
			// before it fails only without permission or without the worker).
			b.until("the script subscribes the service worker", `["subscribing", "on", "failed"].includes(document.querySelector('[data-testid="push"]').dataset.step)`)
			if got := b.text(testID("push-status")); strings.Contains(got, "blocked") || strings.Contains(got, "service worker") {
				t.Fatalf("the subscription did not get to the push service: %q", got)
			}
		})

		step(t, b, "a subscription registered over the API is listed, and Remove deletes it", func(t *testing.T, b *tab) {
			var sub struct {
				ID string `json:"id"`
			}
			w.alice.do(t, http.MethodPost, api("me", "push-subscriptions"), map[string]any{"endpoint": "https://push.example.com/abc",
				"keys": browserKeys(t), "previews": true}).want(t, http.StatusCreated).decode(t, &sub)
			b.visit("/console/account")
			dev := testID("push-device", `[data-id="`+sub.ID+`"]`)
			b.waitFor(dev)
			if got := b.text(dev); !strings.Contains(got, "push.example.com") || !strings.Contains(got, "previews") {
				t.Fatalf("the device reads %q", got)
			}
			if shown := eval[bool](b, `getComputedStyle(document.querySelector(`+jsString(dev+" "+testID("push-this-device"))+`)).display !== "none"`); shown {
				t.Fatal("a subscription made elsewhere is marked as this browser's")
			}
			b.screenshot("account-push.png")
			if st := b.clickTo(dev + " " + testID("push-remove")); st != http.StatusOK {
				t.Fatalf("Remove answered %d", st)
			}
			b.waitFor(testID("push-none"))
			var l page[map[string]any]
			w.alice.do(t, http.MethodGet, api("me", "push-subscriptions"), nil).want(t, http.StatusOK).decode(t, &l)
			if len(l.Items) != 0 {
				t.Fatalf("the API lists %v", l.Items)
			}
		})

		step(t, b, "on a phone the header's controls take a line of their own and the page does not scroll sideways", func(t *testing.T, b *tab) {
			b.viewport(phoneWidth, phoneHeight, true)
			for _, path := range []string{channel, "/console/threads/" + own.Thread.ID} {
				b.visit(path)
				b.waitFor(testID("thread-notify"))
				if wide := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth`); wide {
					t.Fatalf("%s is wider than the phone", path)
				}
				if w := eval[float64](b, `document.querySelector('[data-testid="thread"] h1').getBoundingClientRect().width`); w < 40 {
					t.Fatalf("the title of %s is squeezed to %.0f px", path, w)
				}
			}
			b.screenshot("chat-notify-phone.png")
		})
	})
}

// allowNotifications grants the tab's pages the permission to show notifications, as a
// person who clicked Allow.
func allowNotifications(b *tab) {
	b.t.Helper()
	id := chromedp.FromContext(b.ctx).BrowserContextID
	b.do("allow notifications", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted,
			Origin: b.c.base, BrowserContextID: id})
		return err
	}))
}

// browserKeys are the keys of a browser's push subscription: a P-256 public point and a
// 16-byte secret, base64url as PushSubscription.toJSON() gives them.
func browserKeys(tb testing.TB) map[string]string {
	tb.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	secret := make([]byte, 16)
	rand.Read(secret)
	return map[string]string{"p256dh": base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()),
		"auth": base64.RawURLEncoding.EncodeToString(secret)}
}
