package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// The shapes of the inbox's answers, as a client decodes them.
type (
	readPosition struct {
		ThreadID          string `json:"thread_id"`
		ChannelID         string `json:"channel_id"`
		LastReadMessageID string `json:"last_read_message_id"`
		UnreadCount       int64  `json:"unread_count"`
	}
	unreadEntry struct {
		ChannelID     string  `json:"channel_id"`
		ThreadID      *string `json:"thread_id"`
		UnreadCount   int64   `json:"unread_count"`
		MentionCount  int64   `json:"mention_count"`
		LastMessageID string  `json:"last_message_id"`
	}
	unreadAnswer struct {
		Items        []unreadEntry `json:"items"`
		UnreadCount  int64         `json:"unread_count"`
		MentionCount int64         `json:"mention_count"`
	}
	mentionItem struct {
		Message struct {
			message
			Broadcast string `json:"broadcast"`
		} `json:"message"`
		Read bool `json:"read"`
	}
	mentionsPage struct {
		Items   []mentionItem `json:"items"`
		HasMore bool          `json:"has_more"`
		Next    *string       `json:"next"`
	}
)

func (c *client) mustUnread(tb testing.TB) unreadAnswer {
	tb.Helper()
	var u unreadAnswer
	c.do(tb, http.MethodGet, api("me", "unread"), nil).want(tb, http.StatusOK).decode(tb, &u)
	return u
}

// entry is the unread entry of a channel's main thread (thread "") or of a thread, if any.
func (u unreadAnswer) entry(channelID, threadID string) (unreadEntry, bool) {
	for _, e := range u.Items {
		if e.ChannelID == channelID && (threadID == "" && e.ThreadID == nil || e.ThreadID != nil && *e.ThreadID == threadID) {
			return e, true
		}
	}
	return unreadEntry{}, false
}

func (c *client) mustMarkRead(tb testing.TB, threadID, messageID string) readPosition {
	tb.Helper()
	var p readPosition
	c.do(tb, http.MethodPost, api("threads", threadID, "read"), map[string]string{"message_id": messageID}).want(tb, http.StatusOK).decode(tb, &p)
	return p
}

// TestInbox reads what is new for a person on the real binary: unread counts after others'
// posts and after reading, a read on one connection reaching the person's other connection, own
// messages never unread, mention counts by @handle and @here, the mentions inbox in pages, and
// the refusals (a message of another thread, a thread one cannot see).
func TestInbox(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Talk")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		other := in.owner.mustCreateChannel(t, sp.ID, "hidden")
		bob, bobc := in.mustCreateUser(t, "bob")
		carol, carolc := in.mustCreateUser(t, "carol")
		_, davec := in.mustCreateUser(t, "dave")
		in.owner.mustGrant(t, ch.ID, bob.ID, "post")
		in.owner.mustGrant(t, ch.ID, carol.ID, "post")

		t.Run("others' posts are unread, one's own are not", func(t *testing.T) {
			bobc.mustPost(t, ch.MainThreadID, "one")
			bobc.mustPost(t, ch.MainThreadID, "two")
			carolc.mustPost(t, ch.MainThreadID, "mine")
			last := bobc.mustPost(t, ch.MainThreadID, "three")
			u := carolc.mustUnread(t)
			e, ok := u.entry(ch.ID, "")
			// carol's own post moved her position: only bob's "three" is after it.
			if !ok || e.UnreadCount != 1 || e.MentionCount != 0 || e.LastMessageID != last.ID || u.UnreadCount != 1 {
				t.Fatalf("carol's unread %+v", u)
			}
			if e, ok := bobc.mustUnread(t).entry(ch.ID, ""); ok {
				t.Fatalf("bob has his own last message unread: %+v", e)
			}
		})

		var main []message
		var l page[message]
		carolc.do(t, http.MethodGet, api("threads", ch.MainThreadID, "messages"), nil).want(t, http.StatusOK).decode(t, &l)
		main = l.Items
		newest := main[len(main)-1]

		t.Run("reading on one connection reaches the person's other connection, and the count drops", func(t *testing.T) {
			start := carolc.mustHead(t)
			other := mustStartBot(t, "carol-2", in.srv.public, carolc.token, botclient.WithCursor(start))
			other.mustBeReady(t)
			p := carolc.mustMarkRead(t, ch.MainThreadID, newest.ID)
			if p.ThreadID != ch.MainThreadID || p.ChannelID != ch.ID || p.LastReadMessageID != newest.ID || p.UnreadCount != 0 {
				t.Fatalf("position %+v", p)
			}
			if _, ok := carolc.mustUnread(t).entry(ch.ID, ""); ok {
				t.Fatal("the channel is still unread after reading its newest message")
			}
			other.waitFor(t, "read_state.updated", 10*time.Second, func() bool {
				for _, e := range other.events {
					if e.Type == "read_state.updated" {
						var d readPosition
						_ = json.Unmarshal(e.Data, &d)
						return d.ThreadID == ch.MainThreadID && d.LastReadMessageID == newest.ID && d.ChannelID == ch.ID
					}
				}
				return false
			})
			evs, _ := bobc.mustAllEvents(t, start)
			for _, e := range evs {
				if e.Type == "read_state.updated" {
					t.Fatalf("bob sees carol's read position: %+v", e)
				}
			}
		})

		t.Run("reading an older message changes nothing", func(t *testing.T) {
			head := carolc.mustHead(t)
			p := carolc.mustMarkRead(t, ch.MainThreadID, main[0].ID)
			if p.LastReadMessageID != newest.ID || p.UnreadCount != 0 {
				t.Fatalf("position %+v moved back", p)
			}
			if carolc.mustHead(t) != head {
				t.Fatal("a no-op read appended an event")
			}
		})

		t.Run("mentions by @handle and @here are counted", func(t *testing.T) {
			bobc.mustPost(t, ch.MainThreadID, "hey @carol")
			m := bobc.mustPost(t, ch.MainThreadID, "@here standup")
			var got struct {
				Mentions  []string `json:"mentions"`
				Broadcast string   `json:"broadcast"`
			}
			carolc.do(t, http.MethodGet, api("messages", m.ID), nil).want(t, http.StatusOK).decode(t, &got)
			if len(got.Mentions) != 0 || got.Broadcast != "here" {
				t.Fatalf("the @here message shows mentions %v broadcast %q", got.Mentions, got.Broadcast)
			}
			e, ok := carolc.mustUnread(t).entry(ch.ID, "")
			if !ok || e.UnreadCount != 2 || e.MentionCount != 2 {
				t.Fatalf("carol's entry %+v", e)
			}
			// The owner reads every channel, so @here reaches the owner too; dave sees nothing.
			if e, ok := in.owner.mustUnread(t).entry(ch.ID, ""); !ok || e.MentionCount != 1 {
				t.Fatalf("the owner's entry %+v", e)
			}
			if u := davec.mustUnread(t); len(u.Items) != 0 || u.UnreadCount != 0 {
				t.Fatalf("dave's unread %+v", u)
			}
		})

		t.Run("a read position in a thread counts that thread apart from the channel", func(t *testing.T) {
			tw := bobc.mustCreateThread(t, ch.ID, "", "a thread for @carol")
			p := carolc.mustMarkRead(t, tw.Thread.ID, tw.Message.ID)
			if p.UnreadCount != 0 {
				t.Fatalf("position %+v", p)
			}
			r := bobc.mustPost(t, tw.Thread.ID, "reply @carol")
			e, ok := carolc.mustUnread(t).entry(ch.ID, tw.Thread.ID)
			if !ok || e.UnreadCount != 1 || e.MentionCount != 1 || e.LastMessageID != r.ID {
				t.Fatalf("thread entry %+v", e)
			}
		})

		t.Run("refusals change nothing", func(t *testing.T) {
			head := carolc.mustHead(t)
			before := carolc.mustUnread(t)
			carolc.do(t, http.MethodPost, api("threads", ch.MainThreadID, "read"), map[string]string{"message_id": in.owner.mustPost(t, other.MainThreadID, "elsewhere").ID}).
				want(t, http.StatusUnprocessableEntity).wantProblem(t, "message_not_in_thread")
			carolc.do(t, http.MethodPost, api("threads", other.MainThreadID, "read"), map[string]string{"message_id": newest.ID}).
				want(t, http.StatusNotFound).wantProblem(t, "not_found")
			carolc.do(t, http.MethodPost, api("threads", ch.MainThreadID, "read"), map[string]string{"message_id": "nope"}, breaksDocument()).
				want(t, http.StatusBadRequest).wantProblem(t, "validation_failed")
			carolc.do(t, http.MethodGet, api("me", "mentions")+"?limit=101", nil, breaksDocument()).want(t, http.StatusBadRequest).wantProblem(t, "validation_failed")
			after := carolc.mustUnread(t)
			if a, b := mustJSON(t, after), mustJSON(t, before); a != b {
				t.Fatalf("unread changed: %+v, was %+v", after, before)
			}
			for _, e := range func() []event { evs, _ := carolc.mustAllEvents(t, head); return evs }() {
				if e.Type == "read_state.updated" {
					t.Fatalf("a refused read appended %+v", e)
				}
			}
		})

		t.Run("the mentions inbox pages newest first, and says what is read", func(t *testing.T) {
			for i := range 5 {
				bobc.mustPost(t, ch.MainThreadID, fmt.Sprintf("@carol number %d", i))
			}
			// carol is mentioned by "hey @carol", "@here standup", the thread, its reply and the 5.
			var seen []mentionItem
			after, pages := "", 0
			for {
				path := api("me", "mentions") + "?limit=3"
				if after != "" {
					path += "&after=" + after
				}
				var p mentionsPage
				carolc.do(t, http.MethodGet, path, nil).want(t, http.StatusOK).decode(t, &p)
				pages++
				seen = append(seen, p.Items...)
				if !p.HasMore {
					if p.Next != nil {
						t.Fatalf("the last page has a next: %v", *p.Next)
					}
					break
				}
				if p.Next == nil || len(p.Items) != 3 || pages > 5 {
					t.Fatalf("page %d: %+v", pages, p)
				}
				after = *p.Next
			}
			if len(seen) != 9 || pages != 3 {
				t.Fatalf("%d mentions in %d pages, want 9 in 3", len(seen), pages)
			}
			for i := 1; i < len(seen); i++ {
				if seen[i].Message.ID >= seen[i-1].Message.ID {
					t.Fatalf("not newest first at %d", i)
				}
			}
			if seen[0].Read || seen[0].Message.Content != "@carol number 4" {
				t.Fatalf("newest %+v", seen[0])
			}
			if oldest := seen[len(seen)-1]; oldest.Message.Content != "hey @carol" || oldest.Read {
				t.Fatalf("oldest %+v (carol had not read it)", oldest)
			}
			if e := seen[2]; e.Message.Content != "@carol number 2" {
				t.Fatalf("third %+v", e)
			}
			carolc.mustMarkRead(t, ch.MainThreadID, seen[0].Message.ID)
			var p mentionsPage
			carolc.do(t, http.MethodGet, api("me", "mentions")+"?limit=1", nil).want(t, http.StatusOK).decode(t, &p)
			if len(p.Items) != 1 || !p.Items[0].Read {
				t.Fatalf("after reading: %+v", p)
			}
		})

		t.Run("with broadcast_mentions manage, only a manager mentions the whole channel", func(t *testing.T) {
			var st struct {
				Name              string `json:"name"`
				BroadcastMentions string `json:"broadcast_mentions"`
			}
			in.owner.do(t, http.MethodGet, api("instance"), nil).want(t, http.StatusOK).decode(t, &st)
			if st.BroadcastMentions != "post" {
				t.Fatalf("the default setting %+v", st)
			}
			in.owner.do(t, http.MethodPut, api("instance"), map[string]any{"name": st.Name, "broadcast_mentions": "manage"}).want(t, http.StatusOK).decode(t, &st)
			if st.BroadcastMentions != "manage" {
				t.Fatalf("setting %+v", st)
			}
			defer func() {
				in.owner.do(t, http.MethodPut, api("instance"), map[string]any{"name": st.Name, "broadcast_mentions": "post"}).want(t, http.StatusOK)
			}()
			in.owner.do(t, http.MethodPut, api("instance"), map[string]any{"name": st.Name, "broadcast_mentions": "all"}, breaksDocument()).
				want(t, http.StatusBadRequest).wantProblem(t, "validation_failed")
			var got struct {
				Broadcast string `json:"broadcast"`
			}
			in.owner.do(t, http.MethodGet, api("instance"), nil).want(t, http.StatusOK).decode(t, &st)
			if st.BroadcastMentions != "manage" {
				t.Fatalf("read back %+v", st)
			}
			m := bobc.mustPost(t, ch.MainThreadID, "@channel nobody hears this")
			carolc.do(t, http.MethodGet, api("messages", m.ID), nil).want(t, http.StatusOK).decode(t, &got)
			if got.Broadcast != "" {
				t.Fatalf("a poster broadcast under manage: %q", got.Broadcast)
			}
			o := in.owner.mustPost(t, ch.MainThreadID, "@channel the owner manages")
			carolc.do(t, http.MethodGet, api("messages", o.ID), nil).want(t, http.StatusOK).decode(t, &got)
			if got.Broadcast != "channel" {
				t.Fatalf("the owner's broadcast: %q", got.Broadcast)
			}
		})

		t.Run("the owner sets who may mention a whole channel in the console's settings", func(t *testing.T) {
			b := newBrowser(t, in.srv.public)
			mustConsoleSignIn(t, b, "owner", ownerPassword)
			if p := b.get("/console/settings").want(t, http.StatusOK); !strings.Contains(p.body, `<option value="post" selected`) {
				t.Fatalf("%.3000s", p.body)
			}
			p := b.follow(b.post("/console/settings", url.Values{"name": {"bothy"}, "broadcast_mentions": {"manage"}}))
			if !strings.Contains(p.body, `<option value="manage" selected`) {
				t.Fatalf("%.3000s", p.body)
			}
			var st struct {
				BroadcastMentions string `json:"broadcast_mentions"`
			}
			in.owner.do(t, http.MethodGet, api("instance"), nil).want(t, http.StatusOK).decode(t, &st)
			if st.BroadcastMentions != "manage" {
				t.Fatalf("the API after the console's form: %+v", st)
			}
			if p := b.post("/console/settings", url.Values{"name": {"bothy"}, "broadcast_mentions": {"everyone"}}).want(t, http.StatusUnprocessableEntity); !p.has("form-error") {
				t.Fatalf("%.2000s", p.body)
			}
			b.follow(b.post("/console/settings", url.Values{"name": {"bothy"}})) // without the field: as it is
			in.owner.do(t, http.MethodGet, api("instance"), nil).want(t, http.StatusOK).decode(t, &st)
			if st.BroadcastMentions != "manage" {
				t.Fatalf("a form without the field changed it: %+v", st)
			}
		})
	})
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
