package tests

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestConsoleInbox is what is new for a person in the console without JavaScript, on each
// engine: the left column counts another channel's unread messages and mentions, showing a
// channel's newest page reads it (the API agrees), the read form moves the position of a thread
// the page was not showing the newest of, and the Mentions page lists the mention with its
// place and leads to it; someone else's thread answers 404.
func TestConsoleInbox(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		alice := mustSignIn(t, w.in.srv, "alice", "alice-password-1")
		unread := func(t *testing.T) map[string]any {
			t.Helper()
			var u map[string]any
			w.alice.do(t, http.MethodGet, api("me", "unread"), nil).want(t, http.StatusOK).decode(t, &u)
			return u
		}
		first := w.in.owner.mustPost(t, w.lobby.MainThreadID, "good morning")
		w.in.owner.mustPost(t, w.lobby.MainThreadID, "@alice the notes please")

		t.Run("the left column counts the unread messages and the mention of another channel", func(t *testing.T) {
			p := alice.get("/console/channels/"+w.shared.ID).want(t, http.StatusOK)
			link := match(t, p.body, `(?s)<a [^>]*data-testid="channel-link" data-id="`+w.lobby.ID+`"[^>]*>.*?</a>`)
			if !strings.Contains(link, `data-testid="unread-badge" title="Unread messages">2<`) || !strings.Contains(link, `>@1<`) {
				t.Fatalf("the lobby's link: %s", link)
			}
			if !strings.Contains(p.body, `data-testid="mentions-link"`) {
				t.Fatal("no link to the Mentions page")
			}
		})

		t.Run("showing the channel's newest page reads it", func(t *testing.T) {
			alice.get("/console/channels/"+w.lobby.ID).want(t, http.StatusOK)
			if n := unread(t)["unread_count"].(float64); n != 0 {
				t.Fatalf("%v unread after the page, want 0", n)
			}
		})

		t.Run("the read form moves the position forward only, and refuses a message of another thread and a thread one may not see", func(t *testing.T) {
			later := w.in.owner.mustPost(t, w.lobby.MainThreadID, "one more")
			alice.post("/console/threads/"+w.lobby.MainThreadID+"/read", url.Values{"message_id": {first.ID}}).want(t, http.StatusSeeOther)
			if n := unread(t)["unread_count"].(float64); n != 1 {
				t.Fatalf("%v unread after reading an older message, want 1 (never backwards)", n)
			}
			alice.post("/console/threads/"+w.lobby.MainThreadID+"/read", url.Values{"message_id": {later.ID}}).want(t, http.StatusSeeOther)
			if n := unread(t)["unread_count"].(float64); n != 0 {
				t.Fatalf("%v unread after reading the newest, want 0", n)
			}
			other := w.in.owner.mustPost(t, w.shared.MainThreadID, "elsewhere")
			alice.post("/console/threads/"+w.lobby.MainThreadID+"/read", url.Values{"message_id": {other.ID}}).want(t, http.StatusUnprocessableEntity)
			alice.post("/console/threads/"+w.privTh.Thread.ID+"/read", url.Values{"message_id": {w.privTh.Message.ID}}).want(t, http.StatusNotFound)
		})

		t.Run("the Mentions page lists the mention, where it is, and leads to it", func(t *testing.T) {
			p := alice.get("/console/mentions").want(t, http.StatusOK)
			item := match(t, p.body, `(?s)<li [^>]*data-testid="mention-item".*?</li>`)
			if !strings.Contains(item, "the notes please") || !strings.Contains(item, "#lobby") || !strings.Contains(item, "The Owner") {
				t.Fatalf("the mention: %s", item)
			}
			if strings.Count(p.body, `data-testid="mention-item"`) != 1 {
				t.Fatalf("%d mentions listed, want 1", strings.Count(p.body, `data-testid="mention-item"`))
			}
			to := alice.get(match(t, item, `href="(/console/messages/[^"]+)"`)).want(t, http.StatusSeeOther).header.Get("Location")
			if !strings.HasPrefix(to, "/console/channels/"+w.lobby.ID+"?at=") {
				t.Fatalf("the mention leads to %q, not its place in the lobby", to)
			}
		})
	})
}

// match is the first group of expr in s (the whole match when it has no group); the test fails
// when expr does not match.
func match(t *testing.T, s, expr string) string {
	t.Helper()
	m := regexp.MustCompile(expr).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in %.3000s", expr, s)
	}
	return m[len(m)-1]
}
