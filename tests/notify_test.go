package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// notification is the data of notification.created.
type notification struct {
	MessageID string `json:"message_id"`
	ChannelID string `json:"channel_id"`
	ThreadID  string `json:"thread_id"`
	Reason    string `json:"reason"`
}

// notifications returns the notification.created events b was handed, by message id.
func notifications(tb testing.TB, b *bot) map[string]notification {
	tb.Helper()
	out := map[string]notification{}
	for _, e := range b.handed() {
		if e.Type != "notification.created" {
			continue
		}
		var n notification
		if err := json.Unmarshal(e.Data, &n); err != nil {
			tb.Fatal(err)
		}
		if _, dup := out[n.MessageID]; dup {
			tb.Fatalf("bot %s: two notifications of message %s", b.name, n.MessageID)
		}
		out[n.MessageID] = n
	}
	return out
}

// mustNotified waits until b has a notification of message id and returns it.
func mustNotified(tb testing.TB, b *bot, id string) notification {
	tb.Helper()
	var n notification
	b.waitFor(tb, "the notification of message "+id, 10*time.Second, func() bool {
		for _, e := range b.events {
			if e.Type == "notification.created" {
				json.Unmarshal(e.Data, &n)
				if n.MessageID == id {
					return true
				}
			}
		}
		return false
	})
	return n
}

// mustNotNotified fails when b has a notification of one of ids. Call it after a later
// notification of b has arrived: the notifier handles the log in order.
func mustNotNotified(tb testing.TB, b *bot, ids ...string) {
	tb.Helper()
	got := notifications(tb, b)
	for _, id := range ids {
		if n, ok := got[id]; ok {
			tb.Fatalf("bot %s was notified of message %s: %+v", b.name, id, n)
		}
	}
}

// TestNotifications runs the notifier on the real binary: the default levels (a mention in a
// channel notifies, a plain message does not, a DM message notifies its other participant),
// level none silences, level all notifies, the followers of a thread hear of its replies but not
// while they look at it, and notification.created reaches only its person over the gateway; the
// title of a thread and its thread.updated; subscriptions; bad input.
func TestNotifications(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Notes")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		annU, ann := in.mustCreateUser(t, "ann")
		benU, ben := in.mustCreateUser(t, "ben")
		catU, cat := in.mustCreateUser(t, "cat")
		_, dave := in.mustCreateUser(t, "dave")
		for _, id := range []string{annU.ID, benU.ID, catU.ID} {
			in.owner.mustGrant(t, ch.ID, id, "post")
		}
		start := in.owner.mustHead(t)
		annBot := mustStartBot(t, "ann", in.srv.public, ann.token, botclient.WithCursor(start))
		benBot := mustStartBot(t, "ben", in.srv.public, ben.token, botclient.WithCursor(start))
		catBot := mustStartBot(t, "cat", in.srv.public, cat.token, botclient.WithCursor(start))
		daveBot := mustStartBot(t, "dave", in.srv.public, dave.token, botclient.WithCursor(start))

		t.Run("a mention notifies the mentioned person, and no one else hears of it", func(t *testing.T) {
			m := ann.mustPost(t, ch.MainThreadID, "@ben have a look")
			n := mustNotified(t, benBot, m.ID)
			if n != (notification{MessageID: m.ID, ChannelID: ch.ID, ThreadID: ch.MainThreadID, Reason: "mention"}) {
				t.Fatalf("notification %+v", n)
			}
			fence := ann.mustPost(t, ch.MainThreadID, "@cat and @dave, a fence")
			mustNotified(t, catBot, fence.ID)
			mustNotNotified(t, catBot, m.ID)
			mustNotNotified(t, annBot, m.ID, fence.ID)
			if got := notifications(t, daveBot); len(got) != 0 {
				t.Fatalf("dave, who cannot read the channel, was notified: %v", got)
			}
		})

		t.Run("a plain message notifies no one at the default level", func(t *testing.T) {
			plain := ann.mustPost(t, ch.MainThreadID, "just saying")
			fence := ann.mustPost(t, ch.MainThreadID, "@ben fence")
			mustNotified(t, benBot, fence.ID)
			mustNotNotified(t, benBot, plain.ID)
		})

		t.Run("the level of a channel is mentions by default, and level all notifies every message", func(t *testing.T) {
			got := cat.do(t, http.MethodGet, api("channels", ch.ID, "notifications"), nil).want(t, http.StatusOK).obj()
			if got["level"] != "mentions" || got["default"] != true || got["channel_id"] != ch.ID {
				t.Fatalf("default level %v", got)
			}
			set := cat.do(t, http.MethodPut, api("channels", ch.ID, "notifications"), map[string]any{"level": "all"}).want(t, http.StatusOK).obj()
			if set["level"] != "all" || set["default"] != false {
				t.Fatalf("set %v", set)
			}
			if again := cat.do(t, http.MethodGet, api("channels", ch.ID, "notifications"), nil).want(t, http.StatusOK).obj(); again["level"] != "all" || again["default"] != false {
				t.Fatalf("read back %v", again)
			}
			m := ann.mustPost(t, ch.MainThreadID, "news for everyone")
			if n := mustNotified(t, catBot, m.ID); n.Reason != "all" {
				t.Fatalf("notification %+v", n)
			}
			// The choice reached cat's connections, and only cat's.
			catBot.waitFor(t, "notification_level.updated", 10*time.Second, func() bool {
				for _, e := range catBot.events {
					var d map[string]any
					if e.Type == "notification_level.updated" && json.Unmarshal(e.Data, &d) == nil && d["channel_id"] == ch.ID && d["level"] == "all" {
						return true
					}
				}
				return false
			})
			for _, b := range []*bot{annBot, benBot} {
				for _, e := range b.handed() {
					if e.Type == "notification_level.updated" {
						t.Fatalf("bot %s was handed cat's level: %s", b.name, e.Data)
					}
				}
			}
		})

		t.Run("level none silences even a mention", func(t *testing.T) {
			ben.do(t, http.MethodPut, api("channels", ch.ID, "notifications"), map[string]any{"level": "none"}).want(t, http.StatusOK)
			muted := ann.mustPost(t, ch.MainThreadID, "@ben are you there?")
			mustNotified(t, catBot, muted.ID) // cat's level is all: the notifier has passed the message
			fence := ann.mustPost(t, ch.MainThreadID, "@ben still?")
			mustNotified(t, catBot, fence.ID)
			mustNotNotified(t, benBot, muted.ID, fence.ID)
			ben.do(t, http.MethodPut, api("channels", ch.ID, "notifications"), map[string]any{"level": "mentions"}).want(t, http.StatusOK)
			cat.do(t, http.MethodPut, api("channels", ch.ID, "notifications"), map[string]any{"level": "mentions"}).want(t, http.StatusOK)
		})

		t.Run("a DM message notifies the other participant, whose DM level is all by default", func(t *testing.T) {
			dm := ann.mustDM(t, http.StatusCreated, benU.ID)
			got := ben.do(t, http.MethodGet, api("channels", dm.ID, "notifications"), nil).want(t, http.StatusOK).obj()
			if got["level"] != "all" || got["default"] != true {
				t.Fatalf("DM level %v", got)
			}
			m := ann.mustPost(t, dm.MainThreadID, "hello ben")
			if n := mustNotified(t, benBot, m.ID); n.Reason != "dm" || n.ChannelID != dm.ID {
				t.Fatalf("notification %+v", n)
			}
			fence := ann.mustPost(t, ch.MainThreadID, "@ann fence for myself? no: @cat")
			mustNotified(t, catBot, fence.ID)
			mustNotNotified(t, annBot, m.ID)
			cat.do(t, http.MethodGet, api("channels", dm.ID, "notifications"), nil).want(t, http.StatusNotFound)
		})

		// ben's message; ann replies (she makes the thread) and so does cat: all three follow it.
		parent := ben.mustPost(t, ch.MainThreadID, "a plan")
		var tm threadWithMessage
		ann.do(t, http.MethodPost, api("messages", parent.ID, "thread"), map[string]any{"content": "sounds good"}).
			want(t, http.StatusCreated).decode(t, &tm)
		th := tm.Thread
		first := cat.do(t, http.MethodPost, api("threads", th.ID, "messages"), map[string]any{"content": "me too"}).want(t, http.StatusCreated)
		var catReply message
		first.decode(t, &catReply)

		t.Run("the parent's author and who replied follow the thread and hear of its replies", func(t *testing.T) {
			if n := mustNotified(t, benBot, tm.Message.ID); n.Reason != "thread" || n.ThreadID != th.ID {
				t.Fatalf("ben on ann's reply: %+v", n)
			}
			for _, c := range []struct {
				who *client
				bot *bot
			}{{ben, benBot}, {ann, annBot}} {
				got := c.who.do(t, http.MethodGet, api("threads", th.ID, "subscription"), nil).want(t, http.StatusOK).obj()
				if got["level"] != "all" || got["default"] != false || got["thread_id"] != th.ID {
					t.Fatalf("%s's subscription %v", c.bot.name, got)
				}
				if n := mustNotified(t, c.bot, catReply.ID); n.Reason != "thread" {
					t.Fatalf("%s on cat's reply: %+v", c.bot.name, n)
				}
			}
			got := dave.do(t, http.MethodGet, api("threads", th.ID, "subscription"), nil)
			got.want(t, http.StatusNotFound)
		})

		t.Run("a follower who looks at the thread is not notified of it", func(t *testing.T) {
			ctx := context.Background()
			if err := catBot.cl.Focus(ctx, th.ID); err != nil {
				t.Fatal(err)
			}
			// The gateway reads a connection's frames in order: once ann has cat's typing, sent
			// after the focus, cat's focus is in place.
			if err := catBot.cl.StartTyping(ctx, th.ID); err != nil {
				t.Fatal(err)
			}
			annBot.waitFor(t, "cat's typing.started", 10*time.Second, func() bool { return len(annBot.ephemeralsLocked("typing.started")) > 0 })
			m := ann.mustPost(t, th.ID, "while cat looks")
			mustNotified(t, benBot, m.ID)
			fence := ann.mustPost(t, ch.MainThreadID, "@cat fence")
			mustNotified(t, catBot, fence.ID)
			mustNotNotified(t, catBot, m.ID)
			if err := catBot.cl.Focus(ctx, ch.MainThreadID); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("a subscription set to none silences the thread, and writing there keeps the choice", func(t *testing.T) {
			got := ben.do(t, http.MethodPut, api("threads", th.ID, "subscription"), map[string]any{"level": "none"}).want(t, http.StatusOK).obj()
			if got["level"] != "none" || got["default"] != false {
				t.Fatalf("set %v", got)
			}
			ben.mustPost(t, th.ID, "my last word")
			m := ann.mustPost(t, th.ID, "@ben, and another")
			mustNotified(t, catBot, m.ID)
			mustNotNotified(t, benBot, m.ID)
			if again := ben.do(t, http.MethodGet, api("threads", th.ID, "subscription"), nil).want(t, http.StatusOK).obj(); again["level"] != "none" {
				t.Fatalf("after writing: %v", again)
			}
		})

		t.Run("a thread without a row answers mentions by default", func(t *testing.T) {
			other := in.owner.mustCreateThread(t, ch.ID, "Other", "elsewhere")
			got := ben.do(t, http.MethodGet, api("threads", other.Thread.ID, "subscription"), nil).want(t, http.StatusOK).obj()
			if got["level"] != "mentions" || got["default"] != true {
				t.Fatalf("default subscription %v", got)
			}
		})

		t.Run("the thread's creator titles it, and readers get thread.updated", func(t *testing.T) {
			got := ann.do(t, http.MethodPatch, api("threads", th.ID), map[string]any{"title": "  The plan  "}).want(t, http.StatusOK).obj()
			if got["title"] != "The plan" || got["id"] != th.ID {
				t.Fatalf("patched %v", got)
			}
			if read := ben.do(t, http.MethodGet, api("threads", th.ID), nil).want(t, http.StatusOK).obj(); read["title"] != "The plan" {
				t.Fatalf("read %v", read)
			}
			catBot.waitFor(t, "thread.updated", 10*time.Second, func() bool {
				return slices.ContainsFunc(catBot.events, func(e botclient.Event) bool { return e.Type == "thread.updated" && e.ThreadID == th.ID })
			})
			if slices.ContainsFunc(daveBot.handed(), func(e botclient.Event) bool { return e.Type == "thread.updated" }) {
				t.Fatal("dave, who cannot read the channel, got thread.updated")
			}
			in.owner.do(t, http.MethodPatch, api("threads", th.ID), map[string]any{"title": "Owner's"}).want(t, http.StatusOK)
		})

		t.Run("bad input gets its error and changes nothing", func(t *testing.T) {
			for _, c := range []struct {
				name   string
				who    *client
				method string
				path   string
				body   any
				status int
				code   string
				opts   []reqOption
			}{
				{"an unknown level", ben, http.MethodPut, api("channels", ch.ID, "notifications"), map[string]any{"level": "loud"}, http.StatusBadRequest, "validation_failed", []reqOption{breaksDocument()}},
				{"no level", ben, http.MethodPut, api("threads", th.ID, "subscription"), map[string]any{}, http.StatusBadRequest, "validation_failed", []reqOption{breaksDocument()}},
				{"another member's thread title", ben, http.MethodPatch, api("threads", th.ID), map[string]any{"title": "mine"}, http.StatusForbidden, "forbidden", nil},
				{"a thread one cannot read", dave, http.MethodPatch, api("threads", th.ID), map[string]any{"title": "mine"}, http.StatusNotFound, "not_found", nil},
				{"reading a thread one cannot read", dave, http.MethodGet, api("threads", th.ID), nil, http.StatusNotFound, "not_found", nil},
				{"a main thread's title", in.owner, http.MethodPatch, api("threads", ch.MainThreadID), map[string]any{"title": "x"}, http.StatusConflict, "main_thread", nil},
				{"a main thread's subscription", ben, http.MethodPut, api("threads", ch.MainThreadID, "subscription"), map[string]any{"level": "all"}, http.StatusConflict, "main_thread", nil},
				{"a level of a channel one cannot read", dave, http.MethodPut, api("channels", ch.ID, "notifications"), map[string]any{"level": "all"}, http.StatusNotFound, "not_found", nil},
				{"an unknown member", ben, http.MethodPut, api("channels", ch.ID, "notifications"), map[string]any{"level": "all", "loud": true}, http.StatusBadRequest, "", []reqOption{breaksDocument()}},
			} {
				t.Run(c.name, func(t *testing.T) {
					r := c.who.do(t, c.method, c.path, c.body, c.opts...).want(t, c.status)
					if c.code != "" {
						r.wantProblem(t, c.code)
					}
				})
			}
			if got := ben.do(t, http.MethodGet, api("channels", ch.ID, "notifications"), nil).want(t, http.StatusOK).obj(); got["level"] != "mentions" {
				t.Fatalf("ben's level after the refusals: %v", got)
			}
			if got := ben.do(t, http.MethodGet, api("threads", th.ID), nil).want(t, http.StatusOK).obj(); got["title"] != "Owner's" {
				t.Fatalf("title after the refusals: %v", got)
			}
		})
	})
}
