package llm

import (
	"encoding/json"
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
