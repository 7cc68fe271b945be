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
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	botclient "bothy.dev/bothy/client"
)

// fakeChatModel is an OpenAI-compatible chat completions API that streams its script's answers,
// one per request: a call of the calc__add tool first, then the answer in chunks.
type fakeChatModel struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newFakeChatModel(t *testing.T, answer []string) *fakeChatModel {
	f := &fakeChatModel{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(b))
		n := len(f.bodies)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(delta map[string]any, finish any) {
			c, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk",
				"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		if n == 1 {
			send(map[string]any{"tool_calls": []map[string]any{{"index": 0, "id": "call_1", "type": "function",
				"function": map[string]any{"name": "calc__add", "arguments": `{"a":2,`}}}}, nil)
			send(map[string]any{"tool_calls": []map[string]any{{"index": 0, "function": map[string]any{"arguments": `"b":3}`}}}}, nil)
			send(map[string]any{}, "tool_calls")
		} else {
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

// mustCalcMCP serves an MCP server of one tool, add, over streamable HTTP.
func mustCalcMCP(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	type args struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers"}, func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestLLMAgent runs `bothy agent llm` as its own process against the real server, a fake
// OpenAI-compatible model and an MCP server: a person mentions it, sees its answer stream
// into the run (run.updated while focused on the thread), the tool call as a step, and the
// answer posted as the run's reply.
func TestLLMAgent(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		a, _, start := w.mustPostingAgent(t, "llm")
		th := w.in.owner.mustCreateThread(t, w.shared.ID, "Sums", "We need a sum.").Thread.ID

		model := newFakeChatModel(t, []string{"2 + 3 ", "is ", "5", "."})
		dir := t.TempDir()
		tokenFile, configFile := filepath.Join(dir, "token"), filepath.Join(dir, "agent.yaml")
		if err := os.WriteFile(tokenFile, []byte(a.Token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		yaml := fmt.Sprintf("provider: openai\nbase_url: %s/v1\nmodel: test-model\nhistory: 10\nsystem_prompt: Be brief.\n"+
			"mcp_servers:\n  - name: calc\n    url: %s\n", model.srv.URL, mustCalcMCP(t))
		if err := os.WriteFile(configFile, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}

		reader := mustStartBot(t, "alice", w.in.srv.public, w.alice.token, botclient.WithCursor(start))
		if err := reader.cl.Focus(context.Background(), th); err != nil {
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

		postedMessage(t, w.alice, th, "@llm what is 2+3?")
		answer := answerOf(t, w.alice, th, start)
		if answer["content"] != "2 + 3 is 5." {
			t.Fatalf("answer %v; the agent logged:\n%s", answer, stderr.String())
		}
		runID := answer["run_id"].(string)
		var r struct {
			Status   string `json:"status"`
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

		reqs := model.requests()
		if len(reqs) != 2 {
			t.Fatalf("the model was called %d times", len(reqs))
		}
		for _, want := range []string{"Be brief.", "a person, wrote:]", "We need a sum.", "@llm what is 2+3?", "calc__add"} {
			if !strings.Contains(reqs[0], want) {
				t.Errorf("the first request lacks %q:\n%s", want, reqs[0])
			}
		}
		if !strings.Contains(reqs[1], `"tool_call_id":"call_1"`) || !strings.Contains(reqs[1], `"content":"5"`) {
			t.Errorf("the second request lacks the tool's result:\n%s", reqs[1])
		}
		if !strings.Contains(stderr.String(), "llm: connected") {
			t.Errorf("the agent did not log its connection:\n%s", stderr.String())
		}
	})
}
