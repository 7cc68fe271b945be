package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
	t.Run("a cancel request for the budget ends the handler's context with ErrBudgetExhausted, a person's with ErrCancelRequested", func(t *testing.T) {
		for reason, want := range map[string]error{"budget_exhausted": ErrBudgetExhausted, "": ErrCancelRequested} {
			a := NewAgent("http://127.0.0.1:1", "secret")
			ctx, cancel := context.WithCancelCause(context.Background())
			a.running["r1"] = cancel
			d := map[string]any{"run_id": "r1", "reason": nil}
			if reason != "" {
				d["reason"] = reason
			}
			data, _ := json.Marshal(d)
			a.peek(Event{Seq: 1, Type: "run.cancel_requested", Data: data})
			if got := context.Cause(ctx); got != want || !errors.Is(got, ErrCancelRequested) {
				t.Fatalf("reason %q: cause %v, want %v", reason, got, want)
			}
			// One that arrives before its handler runs keeps its cause for it.
			a.peek(Event{Seq: 2, Type: "run.cancel_requested", Data: []byte(strings.Replace(string(data), "r1", "r2", 1))})
			if a.cancelled["r2"] != want {
				t.Fatalf("reason %q: kept %v", reason, a.cancelled["r2"])
			}
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
