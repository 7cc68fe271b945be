package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestPinRoutes(t *testing.T) {
	api := mustChannelAPI(t)
	api.play(t, []chatScenario{
		{name: "a message is posted", as: "alice", method: "POST", path: "/api/v1/threads/{ch.main_thread_id}/messages",
			body: `{"content":"keep this"}`, status: http.StatusCreated, save: "m1", events: []string{"message.created"}},
		{name: "a pin answers the pin and appends message.pinned", as: "bob", method: "PUT", path: "/api/v1/messages/{m1.id}/pin",
			status: http.StatusOK, save: "pin", events: []string{"message.pinned"},
			fields: map[string]any{"message_id": "{m1.id}", "channel_id": "{ch.id}", "thread_id": "{ch.main_thread_id}",
				"pinned_by": "{bob.id}", "pinned_at": present}},
		{name: "the same pin again answers the pin as it is and appends nothing", as: "alice", method: "PUT", path: "/api/v1/messages/{m1.id}/pin",
			status: http.StatusOK, fields: map[string]any{"pinned_by": "{bob.id}", "pinned_at": "{pin.pinned_at}"}},
		{name: "the channel's pins carry the message", as: "carol", method: "GET", path: "/api/v1/channels/{ch.id}/pins",
			status: http.StatusOK, check: func(t *testing.T, api *chatAPI, body []byte) {
				var out struct {
					Items []struct {
						MessageID string `json:"message_id"`
						PinnedBy  string `json:"pinned_by"`
						Message   struct {
							Content string `json:"content"`
						} `json:"message"`
					} `json:"items"`
				}
				if err := json.Unmarshal(body, &out); err != nil || len(out.Items) != 1 || out.Items[0].MessageID != api.vars["m1"]["id"] ||
					out.Items[0].Message.Content != "keep this" || out.Items[0].PinnedBy != api.vars["bob"]["id"] {
					t.Errorf("pins %s", body)
				}
			}},
		{name: "one who may only read may not pin", as: "carol", method: "PUT", path: "/api/v1/messages/{m1.id}/pin",
			status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"}},
		{name: "one who may only read may not unpin", as: "carol", method: "DELETE", path: "/api/v1/messages/{m1.id}/pin",
			status: http.StatusForbidden},
		{name: "an unknown message is not found", as: "alice", method: "PUT", path: "/api/v1/messages/01900000-0000-7000-8000-000000000000/pin",
			status: http.StatusNotFound, fields: map[string]any{"code": "not_found"}},
		{name: "an unknown channel has no pins", as: "alice", method: "GET", path: "/api/v1/channels/01900000-0000-7000-8000-000000000000/pins",
			status: http.StatusNotFound},
		{name: "an unpin answers 204 and appends message.unpinned", as: "alice", method: "DELETE", path: "/api/v1/messages/{m1.id}/pin",
			status: http.StatusNoContent, events: []string{"message.unpinned"}},
		{name: "an unpin of an unpinned message answers 204 too and appends nothing", as: "alice", method: "DELETE", path: "/api/v1/messages/{m1.id}/pin",
			status: http.StatusNoContent},
		{name: "the channel has no pins left", as: "alice", method: "GET", path: "/api/v1/channels/{ch.id}/pins",
			status: http.StatusOK, fields: map[string]any{"items": []any{}}},
		{name: "the message is pinned again", as: "alice", method: "PUT", path: "/api/v1/messages/{m1.id}/pin",
			status: http.StatusOK, events: []string{"message.pinned"}},
		{name: "deleting a pinned message unpins it", as: "alice", method: "DELETE", path: "/api/v1/messages/{m1.id}",
			status: http.StatusNoContent, events: []string{"message.unpinned", "message.deleted"}},
		{name: "a deleted message cannot be pinned", as: "alice", method: "PUT", path: "/api/v1/messages/{m1.id}/pin",
			status: http.StatusGone, fields: map[string]any{"code": "message_deleted"}},
	})
}
