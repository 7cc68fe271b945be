package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestRunUsageAndCommand(t *testing.T) {
	t.Run("an update with usage sends the cumulative usage in the patch", func(t *testing.T) {
		var body map[string]any
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"r1","status":"running","document":{"version":1}}`)
		}))
		defer srv.Close()
		a := NewAgent(srv.URL, "secret", WithHTTPClient(srv.Client()))
		inv := &Invocation{a: a, RunID: "r1", ThreadID: "t1", token: "tok", expiresAt: time.Now().Add(time.Hour)}
		if _, err := inv.Update(context.Background(), RunPatch{Usage: &RunUsage{InputTokens: 12, OutputTokens: 3, CostUSD: 0.5}}); err != nil {
			t.Fatal(err)
		}
		u, _ := body["usage"].(map[string]any)
		if u["input_tokens"] != 12.0 || u["output_tokens"] != 3.0 || u["cost_usd"] != 0.5 {
			t.Fatalf("patch body %v, want the usage", body)
		}
	})
	t.Run("an invocation of a slash command hands the command to the handler", func(t *testing.T) {
		a := NewAgent("http://127.0.0.1:1", "secret")
		data, _ := json.Marshal(map[string]any{"run_id": "r1", "thread_id": "t1", "message_id": "m1",
			"content": "/deploy prod", "command": map[string]any{"name": "deploy", "args": "prod"}})
		var got *InvocationCommand
		err := a.invoke(context.Background(), Event{Seq: 1, Type: "agent.invocation", Data: data},
			func(_ context.Context, inv *Invocation) error { got = inv.Command; return nil })
		if err != nil || got == nil || got.Name != "deploy" || got.Args != "prod" {
			t.Fatalf("command %+v (%v), want deploy prod", got, err)
		}
	})
	t.Run("a mention hands no command", func(t *testing.T) {
		a := NewAgent("http://127.0.0.1:1", "secret")
		data, _ := json.Marshal(map[string]any{"run_id": "r1", "thread_id": "t1", "message_id": "m1", "content": "@bot hi"})
		got := &InvocationCommand{}
		_ = a.invoke(context.Background(), Event{Seq: 1, Type: "agent.invocation", Data: data},
			func(_ context.Context, inv *Invocation) error { got = inv.Command; return nil })
		if got != nil {
			t.Fatalf("command %+v, want nil", got)
		}
	})
}
