package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"bothy.dev/bothy/app/kernel"
)

type chatEventPage struct {
	Events []struct {
		Seq       int64           `json:"seq"`
		Type      string          `json:"type"`
		Data      json.RawMessage `json:"data"`
		CreatedAt string          `json:"created_at"`
		SpaceID   *string         `json:"space_id"`
		ChannelID *string         `json:"channel_id"`
		ThreadID  *string         `json:"thread_id"`
	} `json:"events"`
	HeadSeq   int64 `json:"head_seq"`
	NextAfter int64 `json:"next_after"`
}

func TestEventRoutes(t *testing.T) {
	api := mustChannelAPI(t)
	api.play(t, []chatScenario{
		{name: "a message is posted in the main thread", as: "alice", method: "POST", path: "/api/v1/threads/{ch.main_thread_id}/messages",
			body: `{"content":"hello"}`, status: http.StatusCreated, save: "m1", events: []string{"message.created"}},
		{name: "a second channel is created", as: "alice", method: "POST", path: "/api/v1/spaces/{sp.id}/channels", body: `{"name":"hush"}`,
			status: http.StatusCreated, save: "hush", events: []string{"channel.created", "thread.created"}},
		{name: "a message is posted there", as: "alice", method: "POST", path: "/api/v1/threads/{hush.main_thread_id}/messages",
			body: `{"content":"quiet words"}`, status: http.StatusCreated, events: []string{"message.created"}},
		{name: "the log tells everything in order with its scopes", as: "bob", method: "GET", path: "/api/v1/events?after=0",
			status: http.StatusOK, fields: map[string]any{"head_seq": 7.0, "next_after": 7.0},
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var p chatEventPage
				_ = json.Unmarshal(body, &p)
				var types []string
				for i, e := range p.Events {
					if e.Seq != int64(i+1) || e.CreatedAt == "" {
						t.Errorf("event %d: %+v", i, e)
					}
					types = append(types, e.Type)
				}
				want := "space.created channel.created thread.created message.created channel.created thread.created message.created"
				if strings.Join(types, " ") != want {
					t.Fatalf("types %v", types)
				}
				m := p.Events[3]
				if m.ThreadID == nil || *m.ThreadID != api.vars["ch"]["main_thread_id"] || *m.ChannelID != api.vars["ch"]["id"] ||
					*m.SpaceID != api.vars["sp"]["id"] || !strings.Contains(string(m.Data), api.vars["m1"]["id"].(string)) {
					t.Errorf("message.created %+v %s", m, m.Data)
				}
				if p.Events[0].ChannelID != nil || p.Events[0].ThreadID != nil {
					t.Errorf("space.created names a channel or thread: %s", body)
				}
			}},
		{name: "a hidden channel's events are skipped and the cursor still moves on", as: "bob", method: "GET", path: "/api/v1/events?after=3&limit=2",
			setup:  func(api *chatAPI) { api.az.hidden[kernel.ID(api.vars["hush"]["id"].(string))] = true },
			status: http.StatusOK, fields: map[string]any{"head_seq": 7.0, "next_after": 7.0},
			check: func(t *testing.T, api *chatAPI, body []byte) {
				var p chatEventPage
				_ = json.Unmarshal(body, &p)
				if len(p.Events) != 1 || p.Events[0].Seq != 4 || strings.Contains(string(body), "quiet words") {
					t.Errorf("events %s", body)
				}
			}},
		{name: "the limit cuts the page and next_after points at its last event", as: "bob", method: "GET", path: "/api/v1/events?after=0&limit=2",
			status: http.StatusOK, fields: map[string]any{"next_after": 2.0, "head_seq": 7.0}},
		{name: "at the head the page is empty", as: "bob", method: "GET", path: "/api/v1/events?after=7",
			status: http.StatusOK, fields: map[string]any{"events": []any{}, "next_after": 7.0}},
		{name: "a negative cursor is refused", as: "bob", method: "GET", path: "/api/v1/events?after=-1",
			status: http.StatusBadRequest, fields: map[string]any{"code": "cursor_invalid", "field": "after"}},
		{name: "a cursor that is not a number is refused", as: "bob", method: "GET", path: "/api/v1/events?after=abc",
			status: http.StatusBadRequest, fields: map[string]any{"code": "cursor_invalid"}},
		{name: "a cursor beyond the head is refused", as: "bob", method: "GET", path: "/api/v1/events?after=99",
			status: http.StatusBadRequest, fields: map[string]any{"code": "cursor_invalid"}},
		{name: "a limit of 0 is refused", as: "bob", method: "GET", path: "/api/v1/events?limit=0",
			status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed", "field": "limit"}},
		{name: "a limit over 1000 is refused", as: "bob", method: "GET", path: "/api/v1/events?limit=1001",
			status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed", "field": "limit"}},
		{name: "the anonymous caller is unauthenticated", method: "GET", path: "/api/v1/events",
			status: http.StatusUnauthorized, fields: map[string]any{"code": "unauthenticated"}},
	})
}
