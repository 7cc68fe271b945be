package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// mustChannelAPI creates a space and a channel as alice and saves them as sp and ch.
func mustChannelAPI(t *testing.T) *chatAPI {
	t.Helper()
	api := newChatAPI(t)
	api.play(t, []chatScenario{
		{name: "a space is created", as: "alice", method: "POST", path: "/api/v1/spaces", body: `{"name":"Talk"}`,
			status: http.StatusCreated, save: "sp", events: []string{"space.created"}},
		{name: "a channel is created", as: "alice", method: "POST", path: "/api/v1/spaces/{sp.id}/channels", body: `{"name":"general"}`,
			status: http.StatusCreated, save: "ch", events: []string{"channel.created", "thread.created"}},
	})
	return api
}

func TestMessageRoutes(t *testing.T) {
	api := mustChannelAPI(t)
	secret := "words that must vanish"
	api.play(t, []chatScenario{
		{name: "a thread starts with its first message", as: "alice", method: "POST", path: "/api/v1/channels/{ch.id}/threads",
			body: `{"title":"Plan","content":"first","client_msg_id":"t-1"}`, status: http.StatusCreated, save: "started",
			events: []string{"thread.created", "message.created"},
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var tm struct {
					Thread  map[string]any
					Message map[string]any
				}
				_ = json.Unmarshal(body, &tm)
				if tm.Thread["title"] != "Plan" || tm.Thread["is_main"] != false || tm.Thread["message_count"] != 1.0 ||
					tm.Message["thread_id"] != tm.Thread["id"] || tm.Message["content"] != "first" {
					t.Errorf("thread %v message %v", tm.Thread, tm.Message)
				}
				api.vars["th"] = tm.Thread
			}},
		{name: "the same client_msg_id starts no second thread", as: "alice", method: "POST", path: "/api/v1/channels/{ch.id}/threads",
			body: `{"title":"Plan","content":"first","client_msg_id":"t-1"}`, status: http.StatusOK,
			check: func(t *testing.T, api *chatAPI, body []byte) {
				if !strings.Contains(string(body), api.vars["th"]["id"].(string)) {
					t.Errorf("another thread: %s", body)
				}
			}},
		{name: "a thread without a title starts too", as: "bob", method: "POST", path: "/api/v1/channels/{ch.id}/threads",
			body: `{"content":"untitled"}`, status: http.StatusCreated, events: []string{"thread.created", "message.created"}},
		{name: "a reader may not start a thread", as: "carol", method: "POST", path: "/api/v1/channels/{ch.id}/threads",
			body: `{"title":"x","content":"y"}`, status: http.StatusForbidden},
		{name: "a message is posted", as: "alice", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"hello @Bob and @nobody","client_msg_id":"c-1"}`, status: http.StatusCreated, save: "m1",
			events: []string{"message.created"},
			fields: map[string]any{"content": "hello @Bob and @nobody", "client_msg_id": "c-1", "version": 1.0, "deleted": false,
				"edited_at": nil, "author_id": "{alice.id}", "thread_id": "{th.id}", "channel_id": "{ch.id}", "space_id": "{sp.id}",
				"mentions": []any{"{bob.id}"}}},
		{name: "the same client_msg_id answers the same message with 200 and appends nothing", as: "alice", method: "POST",
			path: "/api/v1/threads/{th.id}/messages", body: `{"content":"hello @Bob and @nobody","client_msg_id":"c-1"}`,
			status: http.StatusOK, fields: map[string]any{"id": "{m1.id}", "version": 1.0}},
		{name: "a message without a client_msg_id answers null for it", as: "bob", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"plain"}`, status: http.StatusCreated, save: "m2", events: []string{"message.created"},
			fields: map[string]any{"client_msg_id": nil, "mentions": []any{}}},
		{name: "an empty client_msg_id is refused", as: "bob", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"x","client_msg_id":""}`, status: http.StatusBadRequest, fields: map[string]any{"field": "client_msg_id"}},
		{name: "an empty message is refused", as: "bob", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":""}`, status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed", "field": "content"}},
		{name: "a message over 40000 bytes is refused", as: "bob", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"` + strings.Repeat("a", 40_001) + `"}`, status: http.StatusBadRequest, fields: map[string]any{"field": "content"}},
		{name: "a reader may not post", as: "carol", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"may I?"}`, status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"}},
		{name: "a thread nobody has is not found", as: "bob", method: "POST", path: "/api/v1/threads/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/messages",
			body: `{"content":"lost"}`, status: http.StatusNotFound},
		{name: "a message reads back", as: "carol", method: "GET", path: "/api/v1/messages/{m1.id}", status: http.StatusOK,
			fields: map[string]any{"id": "{m1.id}", "mentions": []any{"{bob.id}"}}},
		{name: "the author edits a message", as: "alice", method: "PATCH", path: "/api/v1/messages/{m1.id}", body: `{"content":"edited"}`,
			status: http.StatusOK, events: []string{"message.updated"},
			fields: map[string]any{"content": "edited", "version": 2.0, "edited_at": "2026-03-01T12:00:00Z", "mentions": []any{}}},
		{name: "the earlier content is kept as a revision", as: "carol", method: "GET", path: "/api/v1/messages/{m1.id}/revisions",
			status: http.StatusOK,
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var l struct{ Items []map[string]any }
				_ = json.Unmarshal(body, &l)
				if len(l.Items) != 1 || l.Items[0]["content"] != "hello @Bob and @nobody" || l.Items[0]["version"] != 1.0 ||
					l.Items[0]["message_id"] != api.vars["m1"]["id"] || l.Items[0]["created_at"] == nil {
					t.Errorf("revisions %s", body)
				}
			}},
		{name: "someone else may not edit it", as: "bob", method: "PATCH", path: "/api/v1/messages/{m1.id}", body: `{"content":"mine"}`,
			status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"}},
		{name: "a reaction is added", as: "bob", method: "PUT", path: "/api/v1/messages/{m1.id}/reactions/%F0%9F%91%8D",
			status: http.StatusNoContent, events: []string{"reaction.added"},
			check: func(t *testing.T, api *chatAPI, body []byte) {
				if len(body) != 0 {
					t.Errorf("204 with a body: %s", body)
				}
			}},
		{name: "the same reaction again changes nothing", as: "bob", method: "PUT", path: "/api/v1/messages/{m1.id}/reactions/%F0%9F%91%8D",
			status: http.StatusNoContent},
		{name: "a reaction with a space is refused", as: "bob", method: "PUT", path: "/api/v1/messages/{m1.id}/reactions/a%20b",
			status: http.StatusBadRequest, fields: map[string]any{"field": "emoji"}},
		{name: "a reaction is taken back", as: "bob", method: "DELETE", path: "/api/v1/messages/{m1.id}/reactions/%F0%9F%91%8D",
			status: http.StatusNoContent, events: []string{"reaction.removed"}},
		{name: "taking it back again changes nothing", as: "bob", method: "DELETE", path: "/api/v1/messages/{m1.id}/reactions/%F0%9F%91%8D",
			status: http.StatusNoContent},
		{name: "a message to forget is posted", as: "bob", method: "POST", path: "/api/v1/threads/{th.id}/messages",
			body: `{"content":"` + secret + `"}`, status: http.StatusCreated, save: "doomed", events: []string{"message.created"}},
		{name: "it is edited so its words are in a revision too", as: "bob", method: "PATCH", path: "/api/v1/messages/{doomed.id}",
			body: `{"content":"` + secret + ` twice"}`, status: http.StatusOK, events: []string{"message.updated"}},
		{name: "the author deletes it", as: "bob", method: "DELETE", path: "/api/v1/messages/{doomed.id}",
			status: http.StatusNoContent, events: []string{"message.deleted"}},
		{name: "a tombstone stays", as: "alice", method: "GET", path: "/api/v1/messages/{doomed.id}", status: http.StatusOK,
			fields: map[string]any{"deleted": true, "content": "", "version": 3.0}},
		{name: "the revisions of a deleted message keep nothing of it", as: "bob", method: "GET", path: "/api/v1/messages/{doomed.id}/revisions",
			status: http.StatusOK, fields: map[string]any{"items": []any{}}},
		{name: "a deleted message cannot be edited", as: "bob", method: "PATCH", path: "/api/v1/messages/{doomed.id}",
			body: `{"content":"back"}`, status: http.StatusGone, fields: map[string]any{"code": "message_deleted"}},
		{name: "a deleted message cannot be deleted again", as: "bob", method: "DELETE", path: "/api/v1/messages/{doomed.id}",
			status: http.StatusGone, fields: map[string]any{"code": "message_deleted"}},
		{name: "a deleted message takes no reaction", as: "alice", method: "PUT", path: "/api/v1/messages/{doomed.id}/reactions/ok",
			status: http.StatusGone, fields: map[string]any{"code": "message_deleted"}},
		{name: "the log no longer holds the deleted words", as: "alice", method: "GET", path: "/api/v1/events?after=0&limit=1000",
			status: http.StatusOK,
			check: func(t *testing.T, api *chatAPI, body []byte) {
				if strings.Contains(string(body), secret) {
					t.Errorf("the log holds the deleted content: %s", body)
				}
			}},
		{name: "the thread pages oldest first", as: "carol", method: "GET", path: "/api/v1/threads/{th.id}/messages?limit=2",
			status: http.StatusOK, fields: map[string]any{"has_more": true},
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var l struct{ Items []map[string]any }
				_ = json.Unmarshal(body, &l)
				if len(l.Items) != 2 || l.Items[0]["id"] != api.vars["m2"]["id"] || l.Items[1]["id"] != api.vars["doomed"]["id"] ||
					l.Items[1]["deleted"] != true || strings.Contains(string(body), secret) {
					t.Errorf("items %v", l.Items)
				}
			}},
		{name: "the page after the first message holds the rest", as: "carol", method: "GET",
			path: "/api/v1/threads/{th.id}/messages?after={m1.id}", status: http.StatusOK, fields: map[string]any{"has_more": false},
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var l struct{ Items []map[string]any }
				_ = json.Unmarshal(body, &l)
				if len(l.Items) != 2 {
					t.Errorf("items %v", l.Items)
				}
			}},
		{name: "before and after together are refused", as: "carol", method: "GET",
			path: "/api/v1/threads/{th.id}/messages?before={m1.id}&after={m1.id}", status: http.StatusBadRequest},
		{name: "the thread counts its live messages", as: "carol", method: "GET", path: "/api/v1/channels/{ch.id}/threads",
			status: http.StatusOK,
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var l struct{ Items []map[string]any }
				_ = json.Unmarshal(body, &l)
				for _, th := range l.Items {
					if th["id"] == api.vars["th"]["id"] {
						if th["message_count"] != 3.0 || th["last_message_at"] == nil {
							t.Errorf("thread %v: want 3 live messages", th)
						}
						return
					}
				}
				t.Errorf("the thread is not listed: %s", body)
			}},
	})
}

// TestMessageETag: GET and PATCH of a message send its version as a strong ETag, and a PATCH
// with If-Match edits only that version: a stale one answers 412 and changes nothing.
func TestMessageETag(t *testing.T) {
	api := mustChannelAPI(t)
	api.play(t, []chatScenario{
		{name: "a message is posted", as: "alice", method: "POST", path: "/api/v1/threads/{ch.main_thread_id}/messages",
			body: `{"content":"one"}`, status: http.StatusCreated, save: "m", events: []string{"message.created"}},
	})
	path := api.expand(t, "/api/v1/messages/{m.id}")
	send := func(t *testing.T, method, body string, header map[string]string) *httptest.ResponseRecorder {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req := httptest.NewRequest(method, path, rd)
		req.Header.Set("Authorization", "Bearer alice")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		api.router.ServeHTTP(w, req)
		return w
	}
	version := func(t *testing.T) float64 {
		t.Helper()
		var m map[string]any
		_ = json.Unmarshal(send(t, "GET", "", nil).Body.Bytes(), &m)
		return m["version"].(float64)
	}

	t.Run("GET sends the version as a strong ETag", func(t *testing.T) {
		if w := send(t, "GET", "", nil); w.Code != http.StatusOK || w.Header().Get("ETag") != `"1"` {
			t.Fatalf("%d ETag %q", w.Code, w.Header().Get("ETag"))
		}
	})
	t.Run("PATCH with the current ETag edits and sends the next one", func(t *testing.T) {
		w := send(t, "PATCH", `{"content":"two"}`, map[string]string{"If-Match": `"1"`})
		if w.Code != http.StatusOK || w.Header().Get("ETag") != `"2"` {
			t.Fatalf("%d ETag %q: %s", w.Code, w.Header().Get("ETag"), w.Body)
		}
	})
	for _, sc := range []struct{ name, ifMatch string }{
		{"a stale ETag", `"1"`},
		{"a list without the current one", `"1", "3"`},
		{"a weak ETag, which never matches strongly", `W/"2"`},
		{"a tag that names no version", `"two"`},
	} {
		t.Run("PATCH with "+sc.name+" answers 412 precondition_failed and changes nothing", func(t *testing.T) {
			before := api.db.Head()
			w := send(t, "PATCH", `{"content":"lost"}`, map[string]string{"If-Match": sc.ifMatch})
			if w.Code != http.StatusPreconditionFailed || !strings.Contains(w.Body.String(), `"code":"precondition_failed"`) {
				t.Fatalf("%d: %s", w.Code, w.Body)
			}
			if w.Header().Get("ETag") != "" {
				t.Errorf("a refused edit sends an ETag")
			}
			if v := version(t); v != 2 || api.db.Head() != before {
				t.Errorf("version %v, %d events appended", v, api.db.Head()-before)
			}
		})
	}
	t.Run("PATCH with a list holding the current ETag, or with *, edits", func(t *testing.T) {
		if w := send(t, "PATCH", `{"content":"three"}`, map[string]string{"If-Match": `"1", "2"`}); w.Code != http.StatusOK || w.Header().Get("ETag") != `"3"` {
			t.Fatalf("list: %d ETag %q: %s", w.Code, w.Header().Get("ETag"), w.Body)
		}
		if w := send(t, "PATCH", `{"content":"four"}`, map[string]string{"If-Match": "*"}); w.Code != http.StatusOK || w.Header().Get("ETag") != `"4"` {
			t.Fatalf("*: %d ETag %q: %s", w.Code, w.Header().Get("ETag"), w.Body)
		}
	})
	t.Run("PATCH without If-Match edits whatever version is current", func(t *testing.T) {
		if w := send(t, "PATCH", `{"content":"five"}`, nil); w.Code != http.StatusOK || w.Header().Get("ETag") != `"5"` {
			t.Fatalf("%d ETag %q: %s", w.Code, w.Header().Get("ETag"), w.Body)
		}
	})
	t.Run("a malformed If-Match answers 400 and changes nothing", func(t *testing.T) {
		for _, h := range []string{`5`, `"5`, `*, "5"`, `"5" "6"`, `,`} {
			w := send(t, "PATCH", `{"content":"six"}`, map[string]string{"If-Match": h})
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"code":"malformed_request"`) {
				t.Errorf("If-Match %s: %d %s", h, w.Code, w.Body)
			}
		}
		if v := version(t); v != 5 {
			t.Errorf("version %v, want 5", v)
		}
	})
}
