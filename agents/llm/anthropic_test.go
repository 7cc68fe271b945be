package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAnthropicBody(t *testing.T) {
	p := NewAnthropic("", "", "m", nil, Retry{})
	roles := func(req Request) []string {
		b, _ := json.Marshal(p.body(req)["messages"])
		var ms []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		}
		if err := json.Unmarshal(b, &ms); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Role+":"+string(rune('0'+len(m.Content))))
		}
		return out
	}
	t.Run("joins turns of one role, as the API wants them to alternate", func(t *testing.T) {
		got := roles(Request{Messages: []Message{{Role: "user", Text: "a"}, {Role: "user", Text: "b"}, {Role: "assistant", Text: "c"}}})
		if len(got) != 2 || got[0] != "user:2" || got[1] != "assistant:1" {
			t.Errorf("roles %q", got)
		}
	})
	t.Run("opens with a user turn when the history starts with the agent's own answer", func(t *testing.T) {
		got := roles(Request{Messages: []Message{{Role: "assistant", Text: "earlier"}, {Role: "user", Text: "now"}}})
		if len(got) != 3 || got[0] != "user:1" || got[1] != "assistant:1" {
			t.Errorf("roles %q", got)
		}
	})
	t.Run("gives tool results in the user turn after the call", func(t *testing.T) {
		got := roles(Request{Messages: []Message{
			{Role: "user", Text: "q"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "t1", Name: "x", Args: json.RawMessage(`{}`)}}},
			{Role: "user", ToolResults: []ToolResult{{CallID: "t1", Content: "r"}}},
		}})
		if len(got) != 3 || got[2] != "user:1" {
			t.Errorf("roles %q", got)
		}
	})
}

func TestAnthropicStreamError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hal\"}}\n\n")
		fmt.Fprint(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
	}))
	defer srv.Close()
	var text string
	_, err := NewAnthropic(srv.URL, "k", "m", srv.Client(), Retry{Attempts: 1}).Stream(context.Background(), Request{}, func(s string) { text += s })
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Code != "provider_error" || pe.Message != "Overloaded" || text != "Hal" {
		t.Errorf("an error inside the stream: %v (text %q)", err, text)
	}
}
