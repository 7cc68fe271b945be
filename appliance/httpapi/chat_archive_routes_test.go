package httpapi_test

import (
	"net/http"
	"testing"
)

func TestChannelArchiveRoute(t *testing.T) {
	api := newChatAPI(t)
	api.play(t, []chatScenario{
		{name: "a space is created", as: "alice", method: "POST", path: "/api/v1/spaces", body: `{"name":"Home"}`,
			status: http.StatusCreated, save: "sp", events: []string{"space.created"}},
		{name: "a channel is created", as: "alice", method: "POST", path: "/api/v1/spaces/{sp.id}/channels",
			body: `{"name":"old"}`, status: http.StatusCreated, save: "ch", events: []string{"channel.created", "thread.created"}},
		{name: "a reader may not archive it", as: "carol", method: "POST", path: "/api/v1/channels/{ch.id}/archive",
			status: http.StatusForbidden, fields: map[string]any{"code": "forbidden"}},
		{name: "nobody archives anonymously", method: "POST", path: "/api/v1/channels/{ch.id}/archive",
			status: http.StatusUnauthorized, fields: map[string]any{"code": "unauthenticated"}},
		{name: "a malformed id is not found", as: "alice", method: "POST", path: "/api/v1/channels/nope/archive",
			status: http.StatusNotFound, fields: map[string]any{"code": "not_found"}},
		{name: "the channel is archived", as: "alice", method: "POST", path: "/api/v1/channels/{ch.id}/archive",
			status: http.StatusOK, events: []string{"channel.archived"},
			fields: map[string]any{"id": "{ch.id}", "name": "old", "archived_at": "2026-03-01T12:00:00Z"}},
		{name: "an archived channel is not found", as: "bob", method: "GET", path: "/api/v1/channels/{ch.id}",
			status: http.StatusNotFound, fields: map[string]any{"code": "not_found"}},
		{name: "nor can it be archived again", as: "alice", method: "POST", path: "/api/v1/channels/{ch.id}/archive",
			status: http.StatusNotFound},
		{name: "nor renamed", as: "alice", method: "PATCH", path: "/api/v1/channels/{ch.id}", body: `{"name":"new"}`,
			status: http.StatusNotFound},
		{name: "and the space lists no channel", as: "bob", method: "GET", path: "/api/v1/spaces/{sp.id}/channels",
			status: http.StatusOK, fields: map[string]any{"items": []any{}}},
	})
}
