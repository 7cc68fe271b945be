package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleNotifyWithoutScript is the console's notification controls as a browser without
// JavaScript uses them, over plain HTTP with the session's CSRF token: the channel's level, the
// thread's subscription and its rename are forms that post and redirect back; a bad level or a
// form without its token changes nothing; the push endpoints of the account page take JSON with
// the token in a header, and Remove is a form.
func TestConsoleNotifyWithoutScript(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		b := mustSignIn(t, w.in.srv, "alice", "alice-password-1")
		shared := "/console/channels/" + w.shared.ID
		level := func() string {
			return w.alice.do(t, http.MethodGet, api("channels", w.shared.ID, "notifications"), nil).want(t, http.StatusOK).obj()["level"].(string)
		}

		t.Run("the channel's page carries the level form, and its post sets the level and redirects back", func(t *testing.T) {
			if p := b.get(shared).want(t, http.StatusOK); !p.has("notify-level") || !p.has("notify-level-save") {
				t.Fatalf("no level form on the channel's page: %.1500s", p.body)
			}
			p := b.post(shared+"/notifications", url.Values{"level": {"none"}}).want(t, http.StatusSeeOther)
			if p.location() != shared {
				t.Fatalf("redirected to %q", p.location())
			}
			if got := level(); got != "none" {
				t.Fatalf("the level is %q", got)
			}
			if page := b.get(shared).want(t, http.StatusOK); !strings.Contains(page.body, `<option value="none" selected>`) || !page.has("flash") {
				t.Fatalf("the page does not show the new level: %.1500s", page.body)
			}
		})

		t.Run("an unknown level and a form without its token change nothing", func(t *testing.T) {
			b.post(shared+"/notifications", url.Values{"level": {"loud"}}).want(t, http.StatusSeeOther)
			if page := b.get(shared).want(t, http.StatusOK); !strings.Contains(page.body, "all, mentions or none") {
				t.Fatalf("the refusal is not shown: %.1500s", page.body)
			}
			b.post(shared+"/notifications", url.Values{"level": {"all"}, "csrf_token": {"forged"}}).want(t, http.StatusForbidden)
			if got := level(); got != "none" {
				t.Fatalf("the level is %q", got)
			}
		})

		t.Run("a DM's level defaults to every message, and its form mutes the DM", func(t *testing.T) {
			var dm channel
			w.alice.do(t, http.MethodPost, api("dms"), map[string]any{"participant_ids": []string{w.bobU.ID}}).want(t, http.StatusCreated).decode(t, &dm)
			page := "/console/channels/" + dm.ID
			if p := b.get(page).want(t, http.StatusOK); !strings.Contains(p.body, `<option value="all" selected>All messages (default)</option>`) {
				t.Fatalf("the DM's header: %.2000s", p.body)
			}
			b.post(page+"/notifications", url.Values{"level": {"none"}}).want(t, http.StatusSeeOther)
			got := w.alice.do(t, http.MethodGet, api("channels", dm.ID, "notifications"), nil).want(t, http.StatusOK).obj()
			if got["level"] != "none" || got["default"] != false {
				t.Fatalf("the DM's level is %v", got)
			}
		})

		t.Run("the thread's subscription form follows the thread", func(t *testing.T) {
			th := "/console/threads/" + w.sharedTh.Thread.ID
			if p := b.get(th).want(t, http.StatusOK); !p.has("thread-follow") {
				t.Fatalf("no follow form: %.1500s", p.body)
			}
			if p := b.post(th+"/subscription", url.Values{"level": {"all"}}).want(t, http.StatusSeeOther); p.location() != th {
				t.Fatalf("redirected to %q", p.location())
			}
			got := w.alice.do(t, http.MethodGet, api("threads", w.sharedTh.Thread.ID, "subscription"), nil).want(t, http.StatusOK).obj()
			if got["level"] != "all" {
				t.Fatalf("the subscription is %v", got)
			}
		})

		t.Run("a poster who did not start the thread may not rename it", func(t *testing.T) {
			th := "/console/threads/" + w.sharedTh.Thread.ID
			if p := b.get(th).want(t, http.StatusOK); p.has("thread-title-form") {
				t.Fatal("the rename form is offered to one who may not rename")
			}
			b.post(th+"/title", url.Values{"title": {"Mine now"}}).want(t, http.StatusForbidden)
			var got thread
			w.alice.do(t, http.MethodGet, api("threads", w.sharedTh.Thread.ID), nil).want(t, http.StatusOK).decode(t, &got)
			if got.Title != "Shared" {
				t.Fatalf("the title is %q", got.Title)
			}
		})

		t.Run("the creator renames the thread with the form", func(t *testing.T) {
			own := w.alice.mustCreateThread(t, w.shared.ID, "Draft", "mine")
			th := "/console/threads/" + own.Thread.ID
			b.post(th+"/title", url.Values{"title": {"Final"}}).want(t, http.StatusSeeOther)
			if p := b.get(th).want(t, http.StatusOK); !strings.Contains(p.body, "<h1>Final</h1>") {
				t.Fatalf("the page's title: %.1500s", p.body)
			}
		})

		t.Run("the push key and subscription take JSON with the token in a header, and Remove is a form", func(t *testing.T) {
			key := b.get("/console/push/key").want(t, http.StatusOK)
			if !strings.HasPrefix(key.header.Get("Content-Type"), "application/json") || !strings.Contains(key.body, `"public_key":"B`) {
				t.Fatalf("the key answered %s", key.body)
			}
			sub := map[string]any{"endpoint": "https://push.example.com/console", "keys": browserKeys(t), "previews": false}
			if st, _ := b.postJSON(t, "/console/push/subscriptions", sub, ""); st != http.StatusForbidden {
				t.Fatalf("a subscription without the token answered %d", st)
			}
			st, body := b.postJSON(t, "/console/push/subscriptions", sub, b.csrf)
			if st != http.StatusCreated {
				t.Fatalf("the subscription answered %d: %s", st, body)
			}
			var s struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal([]byte(body), &s); err != nil || s.ID == "" {
				t.Fatalf("the subscription answered %s", body)
			}
			page := b.get("/console/account").want(t, http.StatusOK)
			if !page.has("push-device") || !strings.Contains(page.body, "push.example.com") || !page.has("push-noscript") {
				t.Fatalf("the account page: %.3000s", page.body)
			}
			b.post("/console/push/subscriptions/"+s.ID+"/delete", url.Values{}).want(t, http.StatusSeeOther)
			if page := b.get("/console/account").want(t, http.StatusOK); page.has("push-device") || !page.has("push-none") {
				t.Fatalf("the device is still listed: %.3000s", page.body)
			}
		})
	})
}

// postJSON posts v as JSON, as the account page's script does, with csrf (if any) in the header
// the console takes it from; it answers the status and the body.
func (b *browser) postJSON(tb testing.TB, path string, v any, csrf string) (int, string) {
	tb.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, b.base+path, bytes.NewReader(raw))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if csrf != "" {
		req.Header.Set("Bothy-CSRF", csrf)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
