package tests

import (
	"net/http"
	"testing"
)

// TestReplies covers a reply under a message of a channel (POST /messages/{id}/thread): the
// first starts the message's thread, later ones answer there, the message counts them, and what
// may not get a thread or may not be read is refused without a change.
func TestReplies(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Talk")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		bob, bobc := in.mustCreateUser(t, "bob")
		in.owner.mustGrant(t, ch.ID, bob.ID, "post")
		viewer, viewerc := in.mustCreateUser(t, "vera")
		in.owner.mustGrant(t, ch.ID, viewer.ID, "view")
		_, strangerc := in.mustCreateUser(t, "stranger")
		parent := in.owner.mustPost(t, ch.MainThreadID, "a question for everyone")
		other := in.owner.mustPost(t, ch.MainThreadID, "another question")
		side := in.owner.mustCreateThread(t, ch.ID, "Side", "a message inside a thread")

		p := newPlay(in.srv)
		p.clients["owner"] = in.owner
		p.clients["bob"] = bobc
		p.clients["vera"] = viewerc
		p.clients["stranger"] = strangerc
		p.vars["parent"] = map[string]any{"id": parent.ID}
		p.vars["other"] = map[string]any{"id": other.ID}
		p.vars["side"] = map[string]any{"id": side.Message.ID}
		p.vars["ch"] = map[string]any{"id": ch.ID, "main": ch.MainThreadID}
		reply := func(id string) string { return api("messages", id, "thread") }
		p.run(t, []scenario{
			{
				name: "the first reply starts the message's thread and answers 201", as: "bob", method: "POST", path: reply("{parent.id}"),
				body: map[string]any{"content": "an answer", "client_msg_id": "r-1"}, status: http.StatusCreated, save: "r1",
				events: []string{"thread.created", "message.created"},
				check: func(t *testing.T, p *play, r *response) {
					var tm threadWithMessage
					r.decode(t, &tm)
					if tm.Thread.ParentMessageID == nil || *tm.Thread.ParentMessageID != parent.ID || tm.Thread.IsMain ||
						tm.Thread.ChannelID != ch.ID || tm.Thread.MessageCount != 1 || tm.Message.ThreadID != tm.Thread.ID ||
						tm.Message.Content != "an answer" {
						t.Errorf("thread and reply: %s", r.raw)
					}
				},
			},
			{
				name: "the message carries its thread and one reply", as: "vera", method: "GET", path: api("messages", "{parent.id}"),
				status: http.StatusOK, fields: map[string]any{"thread_id": "{ch.main}", "reply_thread_id": "{r1.thread.id}",
					"reply_count": 1, "last_reply_at": "{r1.message.created_at}"},
			},
			{
				name: "a message without a thread carries none", as: "vera", method: "GET", path: api("messages", "{other.id}"),
				status: http.StatusOK, fields: map[string]any{"reply_thread_id": absent, "reply_count": absent, "last_reply_at": absent},
			},
			{
				name: "a second reply goes into the same thread and answers 200", as: "owner", method: "POST", path: reply("{parent.id}"),
				body: map[string]any{"content": "me too"}, status: http.StatusOK, save: "r2", events: []string{"message.created"},
				check: func(t *testing.T, p *play, r *response) {
					var tm threadWithMessage
					r.decode(t, &tm)
					if tm.Thread.ID != p.lookup(t, "r1.thread.id") || tm.Message.ThreadID != tm.Thread.ID || tm.Thread.MessageCount != 2 {
						t.Errorf("not the same thread: %s", r.raw)
					}
				},
			},
			{
				name: "the channel's page shows the message with two replies", as: "vera", method: "GET", path: api("threads", "{ch.main}", "messages"),
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var l page[message]
					r.decode(t, &l)
					for _, m := range l.Items {
						if m.ID == parent.ID {
							if m.ReplyThreadID == nil || *m.ReplyThreadID != p.lookup(t, "r1.thread.id") || m.ReplyCount == nil ||
								*m.ReplyCount != 2 || m.LastReplyAt == nil || *m.LastReplyAt != p.lookup(t, "r2.message.created_at") {
								t.Errorf("the parent on the page: %+v", m)
							}
							return
						}
					}
					t.Errorf("the parent is not on the page: %s", r.raw)
				},
			},
			{
				name: "the same client_msg_id again answers the first reply and appends nothing", as: "bob", method: "POST", path: reply("{parent.id}"),
				body: map[string]any{"content": "an answer", "client_msg_id": "r-1"}, status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var tm threadWithMessage
					r.decode(t, &tm)
					if tm.Thread.ID != p.lookup(t, "r1.thread.id") || tm.Message.ID != p.lookup(t, "r1.message.id") {
						t.Errorf("another thread or message: %s", r.raw)
					}
				},
			},
			{
				name: "the same client_msg_id under another message is a conflict", as: "bob", method: "POST", path: reply("{other.id}"),
				body: map[string]any{"content": "an answer", "client_msg_id": "r-1"}, status: http.StatusConflict,
				fields: map[string]any{"code": "conflict"},
			},
			{
				name: "a message inside a thread gets no thread of its own", as: "owner", method: "POST", path: reply("{side.id}"),
				body: map[string]any{"content": "nested?"}, status: http.StatusConflict, fields: map[string]any{"code": "not_in_main_thread"},
			},
			{
				name: "a message the caller may not read is not found", as: "stranger", method: "POST", path: reply("{parent.id}"),
				body: map[string]any{"content": "hello?"}, status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "a message that does not exist is not found", as: "owner", method: "POST", path: reply("0193a000-0000-7000-8000-000000000000"),
				body: map[string]any{"content": "hello?"}, status: http.StatusNotFound, fields: map[string]any{"code": "not_found"},
			},
			{
				name: "a reader who may not post cannot reply", as: "vera", method: "POST", path: reply("{parent.id}"),
				body: map[string]any{"content": "me?"}, status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"},
			},
			{
				name: "blank content is refused", as: "bob", method: "POST", path: reply("{other.id}"),
				body: map[string]any{"content": " "}, status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed", "field": "content"},
			},
			{
				name: "a deleted reply counts no more", as: "owner", method: "DELETE", path: api("messages", "{r2.message.id}"),
				status: http.StatusNoContent, events: []string{"message.deleted"},
			},
			{
				name: "the message counts one reply again, its last reply time unchanged", as: "bob", method: "GET", path: api("messages", "{parent.id}"),
				status: http.StatusOK, fields: map[string]any{"reply_count": 1, "last_reply_at": "{r2.message.created_at}"},
			},
			{
				name: "the thread lists the message it started under", as: "bob", method: "GET", path: api("channels", "{ch.id}", "threads"),
				status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var l page[thread]
					r.decode(t, &l)
					for _, th := range l.Items {
						switch {
						case th.ID == p.lookup(t, "r1.thread.id"):
							if th.ParentMessageID == nil || *th.ParentMessageID != parent.ID {
								t.Errorf("the reply thread: %+v", th)
							}
						case th.ParentMessageID != nil:
							t.Errorf("another thread names a parent: %+v", th)
						}
					}
				},
			},
			{
				name: "the message's author deletes it", as: "owner", method: "DELETE", path: api("messages", "{other.id}"),
				status: http.StatusNoContent, events: []string{"message.deleted"},
			},
			{
				name: "a deleted message without a thread starts none", as: "bob", method: "POST", path: reply("{other.id}"),
				body: map[string]any{"content": "too late"}, status: http.StatusGone, fields: map[string]any{"code": "message_deleted"},
			},
		})
	})
}

// TestRepliesInvokeTheOperator holds that a thread under a message behaves like any new thread
// in a channel with an operator: the first reply invokes it, a reply in the existing thread
// does not (unless it mentions the agent).
func TestRepliesInvokeTheOperator(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Desk")
		ch := in.owner.mustCreateChannel(t, sp.ID, "help")
		bot, _ := in.mustCreateAgent(t, "helper")
		in.owner.mustGrant(t, ch.ID, bot.ID, "post")
		in.owner.do(t, http.MethodPut, api("channels", ch.ID, "operator"), map[string]any{"agent_id": bot.ID}).want(t, http.StatusOK)
		parent := in.owner.mustPost(t, ch.MainThreadID, "the printer is on fire")

		var first, second threadWithMessage
		in.owner.do(t, http.MethodPost, api("messages", parent.ID, "thread"), map[string]any{"content": "more detail"}).
			want(t, http.StatusCreated).decode(t, &first)
		if got := in.owner.do(t, http.MethodGet, api("messages", first.Message.ID), nil).want(t, http.StatusOK).obj()["trigger_state"]; got != "triggered" {
			t.Fatalf("the reply that started the thread: trigger_state %v, want triggered", got)
		}
		in.owner.do(t, http.MethodPost, api("messages", parent.ID, "thread"), map[string]any{"content": "still burning"}).
			want(t, http.StatusOK).decode(t, &second)
		if got := in.owner.do(t, http.MethodGet, api("messages", second.Message.ID), nil).want(t, http.StatusOK).obj()["trigger_state"]; got != nil {
			t.Fatalf("a reply in the existing thread: trigger_state %v, want none", got)
		}
		var runs page[map[string]any]
		in.owner.do(t, http.MethodGet, api("threads", first.Thread.ID, "runs"), nil).want(t, http.StatusOK).decode(t, &runs)
		if len(runs.Items) != 1 || runs.Items[0]["trigger_message_id"] != first.Message.ID {
			t.Fatalf("runs of the thread: %+v", runs.Items)
		}
	})
}
