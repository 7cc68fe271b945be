package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	botclient "bothy.dev/bothy/client"
)

// fakeChatModel is an OpenAI-compatible chat completions API. It answers by the question it
// is asked: "what is 2+3?" with a call of the calc__add tool, then (given the tool's result)
// with the answer in chunks; "think forever" with a chunk and then nothing until the client
// goes away (gone); "use a bad key" with a 401; "wipe the disk" with a call of calc__wipe,
// then with a sentence.
type fakeChatModel struct {
	srv    *httptest.Server
	gone   chan time.Time
	mu     sync.Mutex
	bodies []string
}

func newFakeChatModel(t *testing.T, answer []string) *fakeChatModel {
	f := &fakeChatModel{gone: make(chan time.Time, 1)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		body := string(b)
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		if strings.Contains(body, "use a bad key") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(delta map[string]any, finish any) {
			c, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk",
				"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		switch {
		case strings.Contains(body, "think forever"):
			send(map[string]any{"content": "Let me think"}, nil)
			<-r.Context().Done()
			f.gone <- time.Now()
			return
		case strings.Contains(body, "wipe the disk") && !strings.Contains(body, "tool_call_id"):
			send(map[string]any{"tool_calls": []map[string]any{{"index": 0, "id": "call_w", "type": "function",
				"function": map[string]any{"name": "calc__wipe", "arguments": `{}`}}}}, nil)
			send(map[string]any{}, "tool_calls")
		case strings.Contains(body, "wipe the disk"):
			send(map[string]any{"content": "I did not wipe it."}, nil)
			send(map[string]any{}, "stop")
		case !strings.Contains(body, "tool_call_id"):
			send(map[string]any{"tool_calls": []map[string]any{{"index": 0, "id": "call_1", "type": "function",
				"function": map[string]any{"name": "calc__add", "arguments": `{"a":2,`}}}}, nil)
			send(map[string]any{"tool_calls": []map[string]any{{"index": 0, "function": map[string]any{"arguments": `"b":3}`}}}}, nil)
			send(map[string]any{}, "tool_calls")
		default:
			for _, s := range answer {
				send(map[string]any{"content": s}, nil)
				time.Sleep(120 * time.Millisecond) // longer than the agent's coalescing: a patch each
			}
			send(map[string]any{}, "stop")
		}
		fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeChatModel) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bodies...)
}

// mustCalcMCP serves an MCP server of two tools over streamable HTTP: add, and wipe, which
// counts its calls in wiped.
func mustCalcMCP(t *testing.T, wiped *atomic.Int32) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	type args struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers"}, func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "wipe", Description: "Wipes the disk"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		wiped.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestLLMAgent runs `bothy agent llm` as its own process against the real server, a fake
// OpenAI-compatible model and an MCP server: a person mentions it, sees its answer stream into
// the run (run.updated while focused on the thread), the tool call as a step, and the answer
// posted as the run's reply; a person's cancel stops the model and the run ends cancelled; a
// key the model's API refuses fails the run with provider_unauthorized and a sentence.
func TestLLMAgent(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		a, _, start := w.mustPostingAgent(t, "llm")

		model := newFakeChatModel(t, []string{"2 + 3 ", "is ", "5", "."})
		var wiped atomic.Int32
		dir := t.TempDir()
		tokenFile, configFile := filepath.Join(dir, "token"), filepath.Join(dir, "agent.yaml")
		if err := os.WriteFile(tokenFile, []byte(a.Token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		yaml := fmt.Sprintf("provider: openai\nbase_url: %s/v1\nmodel: test-model\nhistory: 10\nsystem_prompt: Be brief.\n"+
			"mcp_servers:\n  - name: calc\n    url: %s\n    ask: [wipe]\n", model.srv.URL, mustCalcMCP(t, &wiped))
		if err := os.WriteFile(configFile, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		var stderr lockedBuffer
		cmd := exec.Command(binPath, "agent", "llm", "--url", w.in.srv.public, "--token-file", tokenFile, "--config", configFile)
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})

		t.Run("answers a mention with a tool's help, streamed into the run and posted as its reply", func(t *testing.T) {
			th := w.in.owner.mustCreateThread(t, w.shared.ID, "Sums", "We need a sum.").Thread.ID
			reader := mustStartBot(t, "alice", w.in.srv.public, w.alice.token, botclient.WithCursor(start))
			if err := reader.cl.Focus(context.Background(), th); err != nil {
				t.Fatal(err)
			}
			postedMessage(t, w.alice, th, "@llm what is 2+3?")
			answer := answerOf(t, w.alice, th, start)
			if answer["content"] != "2 + 3 is 5." {
				t.Fatalf("answer %v; the agent logged:\n%s", answer, stderr.String())
			}
			runID := answer["run_id"].(string)
			var r struct {
				Status string `json:"status"`
				Usage  *struct {
					InputTokens  int64 `json:"input_tokens"`
					OutputTokens int64 `json:"output_tokens"`
				} `json:"usage"`
				Document struct {
					Output string `json:"output"`
					Steps  []struct {
						Kind, Title, Status, Detail string
					} `json:"steps"`
				} `json:"document"`
			}
			w.alice.do(t, http.MethodGet, api("runs", runID), nil).want(t, http.StatusOK).decode(t, &r)
			if r.Status != "succeeded" || r.Document.Output != "2 + 3 is 5." {
				t.Fatalf("run %+v", r)
			}
			// Two calls of the model, 12 tokens in and 7 out each: the run holds their sum.
			if r.Usage == nil || r.Usage.InputTokens != 24 || r.Usage.OutputTokens != 14 {
				t.Errorf("usage %+v, want 24 in and 14 out", r.Usage)
			}
			if len(r.Document.Steps) != 1 || r.Document.Steps[0].Kind != "tool_call" || r.Document.Steps[0].Title != "calc.add" ||
				r.Document.Steps[0].Status != "done" || !strings.HasSuffix(r.Document.Steps[0].Detail, "5") {
				t.Errorf("steps %+v", r.Document.Steps)
			}

			// The output came in several patches, each seen by the person focused on the thread.
			reader.waitFor(t, "the run.updated frames of the answer", 10*time.Second, func() bool {
				out := ""
				for _, u := range runUpdatesLocked(reader) {
					if u.RunID == runID && u.Patch != nil {
						out += u.Patch.OutputAppend
					}
				}
				return out == "2 + 3 is 5."
			})
			streamed := 0
			for _, u := range runUpdates(reader) {
				if u.RunID == runID && u.Patch != nil && u.Patch.OutputAppend != "" {
					streamed++
				}
			}
			if streamed < 2 {
				t.Errorf("the answer came in %d run.updated frames, want it streamed in several", streamed)
			}

			var first, second string
			for _, b := range model.requests() {
				switch {
				case strings.Contains(b, "what is 2+3?") && strings.Contains(b, "tool_call_id"):
					second = b
				case strings.Contains(b, "what is 2+3?"):
					first = b
				}
			}
			for _, want := range []string{"Be brief.", "We need a sum.", `a person, wrote:]\n@llm what is 2+3?`, "calc__add"} {
				if !strings.Contains(first, want) {
					t.Errorf("the first request lacks %q:\n%s", want, first)
				}
			}
			if !strings.Contains(second, `"tool_call_id":"call_1"`) || !strings.Contains(second, `"content":"5"`) {
				t.Errorf("the second request lacks the tool's result:\n%s", second)
			}
			if !strings.Contains(stderr.String(), "llm: connected") {
				t.Errorf("the agent did not log its connection:\n%s", stderr.String())
			}
		})

		t.Run("an ask tool waits for the invoker's approval, and a denial is what the model reads", func(t *testing.T) {
			th := w.in.owner.mustCreateThread(t, w.shared.ID, "Disk", "The disk is full.").Thread.ID
			postedMessage(t, w.alice, th, "@llm wipe the disk please")
			var pending struct {
				ID, RunID, Title, State string
				ApproverIDs             []string `json:"approver_ids"`
			}
			for deadline := time.Now().Add(15 * time.Second); pending.ID == ""; {
				var runs struct {
					Items []runView `json:"items"`
				}
				w.alice.do(t, http.MethodGet, api("threads", th, "runs"), nil).want(t, http.StatusOK).decode(t, &runs)
				if len(runs.Items) == 1 {
					var aps struct {
						Items []struct {
							ID          string   `json:"id"`
							RunID       string   `json:"run_id"`
							Title       string   `json:"title"`
							State       string   `json:"state"`
							ApproverIDs []string `json:"approver_ids"`
						} `json:"items"`
					}
					w.alice.do(t, http.MethodGet, api("runs", runs.Items[0].ID, "approvals"), nil).want(t, http.StatusOK).decode(t, &aps)
					if len(aps.Items) == 1 {
						a := aps.Items[0]
						pending.ID, pending.RunID, pending.Title, pending.State, pending.ApproverIDs = a.ID, a.RunID, a.Title, a.State, a.ApproverIDs
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no approval asked within 15s; the agent logged:\n%s", stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if pending.State != "pending" || !strings.Contains(pending.Title, "calc.wipe") ||
				len(pending.ApproverIDs) != 1 || pending.ApproverIDs[0] != w.aliceU.ID {
				t.Fatalf("approval %+v", pending)
			}
			if r := runOf(t, w.alice, pending.RunID); r.Status != "waiting_input" {
				t.Errorf("the run is %s while it waits for the approval", r.Status)
			}
			w.alice.do(t, http.MethodPost, api("approvals", pending.ID, "decide"), map[string]any{"decision": "deny", "scope": "once"}).want(t, http.StatusOK)
			answer := answerOf(t, w.alice, th, start)
			if answer["content"] != "I did not wipe it." || answer["run_id"] != pending.RunID {
				t.Fatalf("answer %v", answer)
			}
			if n := wiped.Load(); n != 0 {
				t.Errorf("the denied tool ran %d times", n)
			}
			var denied bool
			for _, b := range model.requests() {
				denied = denied || (strings.Contains(b, `"tool_call_id":"call_w"`) && strings.Contains(b, "A person denied this call"))
			}
			if !denied {
				t.Errorf("the model was not told of the denial: %q", model.requests())
			}
		})

		t.Run("a person's cancel stops the model and the run ends cancelled", func(t *testing.T) {
			th := w.in.owner.mustCreateThread(t, w.shared.ID, "Forever", "A hard one.").Thread.ID
			postedMessage(t, w.alice, th, "@llm think forever")
			var runID string
			deadline := time.Now().Add(15 * time.Second)
			for runID == "" {
				var page struct {
					Items []runView `json:"items"`
				}
				w.alice.do(t, http.MethodGet, api("threads", th, "runs"), nil).want(t, http.StatusOK).decode(t, &page)
				if len(page.Items) == 1 && page.Items[0].Document.Output == "Let me think" {
					runID = page.Items[0].ID
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no run streaming within 15s: %+v; the agent logged:\n%s", page.Items, stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			cancelled := time.Now()
			w.alice.do(t, http.MethodPost, api("runs", runID, "cancel"), nil).want(t, http.StatusOK)
			select {
			case gone := <-model.gone:
				if d := gone.Sub(cancelled); d > 5*time.Second {
					t.Errorf("the model's stream ended %v after the cancel", d)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the model's stream did not end within 10s of the cancel")
			}
			for deadline := time.Now().Add(10 * time.Second); ; {
				r := runOf(t, w.alice, runID)
				if r.Status == "cancelled" {
					if r.Reason != nil && *r.Reason == "cancel_timeout" {
						t.Errorf("the server ended the run for the agent (%s): the agent did not confirm", *r.Reason)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("run %+v, not cancelled within 10s", r)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})

		t.Run("a key the model's API refuses fails the run with provider_unauthorized", func(t *testing.T) {
			th := w.in.owner.mustCreateThread(t, w.shared.ID, "Keys", "Keys rotate.").Thread.ID
			postedMessage(t, w.alice, th, "@llm use a bad key")
			for deadline := time.Now().Add(15 * time.Second); ; {
				var page struct {
					Items []struct {
						ID           string  `json:"id"`
						Status       string  `json:"status"`
						Reason       *string `json:"reason"`
						ErrorMessage *string `json:"error_message"`
					} `json:"items"`
				}
				w.alice.do(t, http.MethodGet, api("threads", th, "runs"), nil).want(t, http.StatusOK).decode(t, &page)
				if len(page.Items) == 1 && page.Items[0].Status == "failed" {
					r := page.Items[0]
					if r.Reason == nil || *r.Reason != "provider_unauthorized" || r.ErrorMessage == nil ||
						!strings.Contains(*r.ErrorMessage, "Incorrect API key provided") {
						t.Fatalf("run %+v", r)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no failed run within 15s: %+v; the agent logged:\n%s", page.Items, stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	})
}
