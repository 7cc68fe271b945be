package tests

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
)

// The shapes of the answers, as a user of the API decodes them.
type (
	user struct {
		ID          string `json:"id"`
		Handle      string `json:"handle"`
		DisplayName string `json:"display_name"`
		Kind        string `json:"kind"`
		Status      string `json:"status"`
		IsOwner     bool   `json:"is_owner"`
		CreatedAt   string `json:"created_at"`
	}
	session struct {
		Token     string `json:"token"`
		ExpiresAt string `json:"expires_at"`
		User      user   `json:"user"`
	}
	apiToken struct {
		ID         string  `json:"id"`
		Name       string  `json:"name"`
		Token      string  `json:"token"`
		CreatedAt  string  `json:"created_at"`
		LastUsedAt *string `json:"last_used_at"`
	}
	space struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		CreatedAt string `json:"created_at"`
		UpdatedAt string `json:"updated_at"`
	}
	channel struct {
		ID           string `json:"id"`
		SpaceID      string `json:"space_id"`
		Name         string `json:"name"`
		Kind         string `json:"kind"`
		Topic        string `json:"topic"`
		MainThreadID string `json:"main_thread_id"`
	}
	grant struct {
		ChannelID   string `json:"channel_id"`
		PrincipalID string `json:"principal_id"`
		Level       string `json:"level"`
	}
	thread struct {
		ID            string  `json:"id"`
		ChannelID     string  `json:"channel_id"`
		SpaceID       string  `json:"space_id"`
		Title         string  `json:"title"`
		IsMain        bool    `json:"is_main"`
		CreatedBy     string  `json:"created_by"`
		MessageCount  int64   `json:"message_count"`
		LastMessageAt *string `json:"last_message_at"`
		// ParentMessageID is the message the thread started under, if any.
		ParentMessageID *string `json:"parent_message_id"`
	}
	message struct {
		ID          string   `json:"id"`
		ThreadID    string   `json:"thread_id"`
		ChannelID   string   `json:"channel_id"`
		SpaceID     string   `json:"space_id"`
		AuthorID    string   `json:"author_id"`
		Content     string   `json:"content"`
		ClientMsgID *string  `json:"client_msg_id"`
		Mentions    []string `json:"mentions"`
		Version     int      `json:"version"`
		CreatedAt   string   `json:"created_at"`
		EditedAt    *string  `json:"edited_at"`
		Deleted     bool     `json:"deleted"`
		// The thread under the message, when it has one.
		ReplyThreadID *string `json:"reply_thread_id"`
		ReplyCount    *int64  `json:"reply_count"`
		LastReplyAt   *string `json:"last_reply_at"`
	}
	revision struct {
		MessageID string `json:"message_id"`
		Version   int    `json:"version"`
		Content   string `json:"content"`
	}
	threadWithMessage struct {
		Thread  thread  `json:"thread"`
		Message message `json:"message"`
	}
	event struct {
		Seq       int64          `json:"seq"`
		Type      string         `json:"type"`
		Data      map[string]any `json:"data"`
		CreatedAt string         `json:"created_at"`
		SpaceID   string         `json:"space_id"`
		ChannelID string         `json:"channel_id"`
		ThreadID  string         `json:"thread_id"`
	}
	eventPage struct {
		Events    []event `json:"events"`
		HeadSeq   int64   `json:"head_seq"`
		NextAfter int64   `json:"next_after"`
	}
	page[T any] struct {
		Items   []T  `json:"items"`
		HasMore bool `json:"has_more"`
	}
)

const ownerPassword = "correct horse battery staple"

// instance is a started server with its owner logged in.
type instance struct {
	srv   *server
	owner *client
	me    user
}

// mustStartWithOwner starts a server on eng (with the extra command-line args), redeems its
// setup code and logs the owner in.
func mustStartWithOwner(tb testing.TB, eng engine, args ...string) *instance {
	tb.Helper()
	srv := mustStart(tb, eng, args...)
	me := mustSetupOwner(tb, srv)
	return &instance{srv: srv, owner: mustLogin(tb, srv, "owner", ownerPassword), me: me}
}

// mustSetupOwner redeems the printed setup code for the owner "owner".
func mustSetupOwner(tb testing.TB, srv *server) user {
	tb.Helper()
	var u user
	as(srv, "").do(tb, http.MethodPost, api("setup"), map[string]any{
		"code": srv.setupCode, "handle": "owner", "display_name": "The Owner", "password": ownerPassword,
	}).want(tb, http.StatusCreated).decode(tb, &u)
	return u
}

// mustLogin logs in and returns a client with the session token.
func mustLogin(tb testing.TB, srv *server, handle, password string) *client {
	tb.Helper()
	var s session
	as(srv, "").do(tb, http.MethodPost, api("auth", "login"), map[string]any{"handle": handle, "password": password}).
		want(tb, http.StatusOK).decode(tb, &s)
	if s.Token == "" || s.User.Handle != handle {
		tb.Fatalf("login of %s answered token %q for %q", handle, s.Token, s.User.Handle)
	}
	return as(srv, s.Token)
}

// mustCreateUser has the owner create a person and logs the person in.
func (in *instance) mustCreateUser(tb testing.TB, handle string) (user, *client) {
	tb.Helper()
	var u user
	in.owner.do(tb, http.MethodPost, api("users"), map[string]any{
		"handle": handle, "display_name": "Person " + handle, "password": handle + "-password-1",
	}).want(tb, http.StatusCreated).decode(tb, &u)
	return u, mustLogin(tb, in.srv, handle, handle+"-password-1")
}

var nameSeq atomic.Int64

func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1)) }

func (c *client) mustCreateSpace(tb testing.TB, name string) space {
	tb.Helper()
	var s space
	c.do(tb, http.MethodPost, api("spaces"), map[string]any{"name": name}).want(tb, http.StatusCreated).decode(tb, &s)
	return s
}

func (c *client) mustCreateChannel(tb testing.TB, spaceID, name string) channel {
	tb.Helper()
	var ch channel
	c.do(tb, http.MethodPost, api("spaces", spaceID, "channels"), map[string]any{"name": name}).
		want(tb, http.StatusCreated).decode(tb, &ch)
	return ch
}

func (c *client) mustCreateThread(tb testing.TB, channelID, title, content string) threadWithMessage {
	tb.Helper()
	var tm threadWithMessage
	c.do(tb, http.MethodPost, api("channels", channelID, "threads"), map[string]any{
		"title": title, "content": content, "client_msg_id": uniqueName("thread"),
	}).want(tb, http.StatusCreated).decode(tb, &tm)
	return tm
}

func (c *client) mustPost(tb testing.TB, threadID, content string) message {
	tb.Helper()
	var m message
	c.do(tb, http.MethodPost, api("threads", threadID, "messages"), map[string]any{
		"content": content, "client_msg_id": uniqueName("msg"),
	}).want(tb, http.StatusCreated).decode(tb, &m)
	return m
}

func (c *client) mustGrant(tb testing.TB, channelID, principalID, level string) {
	tb.Helper()
	st := c.do(tb, http.MethodPost, api("channels", channelID, "grants"), map[string]any{
		"principal_id": principalID, "level": level,
	}).status
	if st != http.StatusCreated && st != http.StatusOK {
		tb.Fatalf("grant %s on %s to %s: status %d", level, channelID, principalID, st)
	}
}

// mustEvents reads one page of events after the cursor.
func (c *client) mustEvents(tb testing.TB, after int64) eventPage {
	tb.Helper()
	var p eventPage
	c.do(tb, http.MethodGet, fmt.Sprintf("/api/v1/events?after=%d&limit=1000", after), nil).
		want(tb, http.StatusOK).decode(tb, &p)
	return p
}

// mustAllEvents reads every event after the cursor, page by page.
func (c *client) mustAllEvents(tb testing.TB, after int64) (events []event, head int64) {
	tb.Helper()
	for range 10000 {
		p := c.mustEvents(tb, after)
		events = append(events, p.Events...)
		head = p.HeadSeq
		if p.NextAfter >= p.HeadSeq || p.NextAfter <= after {
			return events, head
		}
		after = p.NextAfter
	}
	tb.Fatalf("the events after %d did not end within 10000 pages", after)
	return nil, 0
}

// mustHead is the newest seq of the log.
func (c *client) mustHead(tb testing.TB) int64 {
	tb.Helper()
	var p eventPage
	c.do(tb, http.MethodGet, "/api/v1/events?after=0&limit=1", nil).want(tb, http.StatusOK).decode(tb, &p)
	return p.HeadSeq
}

// types lists the types of events, without the notifier's (notifierEvent).
func types(events []event) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		if !notifierEvent(e.Type) {
			out = append(out, e.Type)
		}
	}
	return out
}

// notifierEvent reports whether typ is the notifier's notification.created: the notifier
// appends it on its own, a moment after the write that caused it, so the checks of what one
// request appended leave it out (tests/notify_test.go holds the notifications).
func notifierEvent(typ string) bool { return typ == "notification.created" }
