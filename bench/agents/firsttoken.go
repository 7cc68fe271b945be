package agentsbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"bothy.dev/bothy/agents/llm"
	gatewaybench "bothy.dev/bothy/bench/gateway"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/client"
)

// FirstToken is the mention-to-first-token scenario: `bothy agent llm` (its package, in this
// process, on the public API like the real one) answers with a fake OpenAI-compatible model that
// streams at once, a person's client is focused on Thread, and the person mentions the agent
// there every Interval for Warmup + Duration. The mentions sent after the warm-up are measured.
type FirstToken struct {
	Thread           string
	Interval         time.Duration
	Warmup, Duration time.Duration
	// Tokens is how many tokens the fake model streams per answer (the first one is measured).
	Tokens int
	Drain  time.Duration
}

// FirstTokened is what the scenario measured.
type FirstTokened struct {
	// Latency is, per measured mention, the focused client's first run.updated with output of
	// the run the mention made − the moment the mention's POST was sent: the trigger, the
	// agent's invocation, its reads of the thread, the run's start, the model's answer and the
	// fan-out of the patch, all included.
	Latency measure.Latencies
	// Mentions are the measured mentions; Answered those whose run's answer was posted (all of
	// them, or the scenario fails).
	Mentions, Answered int
}

// fakeModel is an OpenAI-compatible chat-completions server that streams each answer at once:
// a role chunk, tokens words, a finish chunk with usage, [DONE].
func fakeModel(tokens int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl, _ := w.(http.Flusher)
		chunk := func(delta string, finish any, usage any) {
			b, _ := json.Marshal(map[string]any{"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "bench",
				"choices": []any{map[string]any{"index": 0, "delta": json.RawMessage(delta), "finish_reason": finish}}, "usage": usage})
			fmt.Fprintf(w, "data: %s\n\n", b)
			if fl != nil {
				fl.Flush()
			}
		}
		chunk(`{"role":"assistant","content":""}`, nil, nil)
		for i := range tokens {
			chunk(fmt.Sprintf(`{"content":"word%d "}`, i), nil, nil)
		}
		chunk(`{}`, "stop", map[string]int{"prompt_tokens": 20, "completion_tokens": tokens, "total_tokens": 20 + tokens})
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

// RunFirstToken runs the scenario as person token (who holds invoke on the thread's channel) with
// agent a, which must be able to post there.
func RunFirstToken(ctx context.Context, c *http.Client, in gatewaybench.Instance, person string, a Agent, cfg FirstToken) (FirstTokened, error) {
	if cfg.Interval <= 0 || cfg.Duration <= 0 || cfg.Tokens < 1 {
		return FirstTokened{}, errors.New("agentsbench: first token needs an interval, a duration and tokens")
	}
	model := fakeModel(cfg.Tokens)
	defer model.Close()

	// The agent, as `bothy agent llm` runs it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ag := client.NewAgent(in.Base, a.Token, client.WithLogger(slog.New(slog.DiscardHandler)))
	me, err := ag.Client().Me(ctx)
	if err != nil {
		return FirstTokened{}, fmt.Errorf("the agent's me: %w", err)
	}
	bot := llm.New(llm.Config{Provider: "openai", BaseURL: model.URL + "/v1", Model: "bench", History: 5, MaxTokens: 256},
		llm.NewOpenAI(model.URL+"/v1", "", "bench", nil, llm.DefaultRetry), nil, me, nil)
	agentDone := make(chan error, 1)
	go func() { agentDone <- ag.Run(ctx, bot.Handler(ag.Client())) }()

	// The person's client, focused on the thread.
	w, err := newFirstTokenWatcher(ctx, in.Base, person, cfg.Thread)
	if err != nil {
		return FirstTokened{}, err
	}
	defer w.conn.Close()

	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	end := measureFrom.Add(cfg.Duration)
	type mention struct {
		id     string
		sentAt time.Time
	}
	var sent []mention
	for due := start; due.Before(end); due = due.Add(cfg.Interval) {
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		at := time.Now()
		id, err := postMention(ctx, c, in.Base, person, cfg.Thread, "@"+a.Handle+" say something")
		if err != nil {
			return FirstTokened{}, err
		}
		if !at.Before(measureFrom) {
			sent = append(sent, mention{id: id, sentAt: at})
		}
	}
	var out FirstTokened
	err = waitFor(ctx, cfg.Drain, w.failed, func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, m := range sent {
			run, ok := w.runOf[m.id]
			if !ok {
				return false, fmt.Sprintf("no run seen for message %s", m.id)
			}
			if _, ok := w.firstOutput[run]; !ok {
				return false, fmt.Sprintf("no output seen of run %s", run)
			}
			if !w.answered[run] {
				return false, fmt.Sprintf("no answer seen of run %s", run)
			}
		}
		return true, ""
	})
	if err != nil {
		return FirstTokened{}, err
	}
	w.mu.Lock()
	lat := make([]time.Duration, 0, len(sent))
	for _, m := range sent {
		lat = append(lat, w.firstOutput[w.runOf[m.id]].Sub(m.sentAt))
	}
	out.Answered = len(sent)
	w.mu.Unlock()
	cancel()
	if err := <-agentDone; err != nil && !errors.Is(err, context.Canceled) {
		return FirstTokened{}, fmt.Errorf("the agent: %w", err)
	}
	if len(lat) == 0 {
		return FirstTokened{}, errors.New("agentsbench: no mention was measured")
	}
	out.Mentions = len(lat)
	out.Latency = measure.Summarise(lat)
	return out, nil
}

// postMention posts content into thread as token and returns the message's id.
func postMention(ctx context.Context, c *http.Client, base, token, thread, content string) (string, error) {
	body, _ := json.Marshal(map[string]string{"content": content})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/threads/"+thread+"/messages", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	var m struct {
		ID           string `json:"id"`
		TriggerState string `json:"trigger_state"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &m) != nil || m.TriggerState != "triggered" {
		return "", fmt.Errorf("mention: %d %s", resp.StatusCode, httpbench.Snippet(b))
	}
	return m.ID, nil
}

// firstTokenWatcher is the person's client: it maps each run to the message that made it (from
// run.state_changed) and keeps when it first saw output of each run (run.updated) and whether
// the run's answer was posted (message.created with its run_id).
type firstTokenWatcher struct {
	conn *gatewaybench.Conn
	r    *gatewaybench.Reader

	mu          sync.Mutex
	runOf       map[string]string // trigger message id → run id
	firstOutput map[string]time.Time
	answered    map[string]bool
}

func newFirstTokenWatcher(ctx context.Context, base, token, thread string) (*firstTokenWatcher, error) {
	conn, err := gatewaybench.Dial(ctx, base)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Identify(token, -1); err != nil {
		conn.Abort()
		return nil, err
	}
	w := &firstTokenWatcher{conn: conn, r: gatewaybench.NewReader(), runOf: map[string]string{},
		firstOutput: map[string]time.Time{}, answered: map[string]bool{}}
	w.r.Start(w.follow)
	if err := w.r.WaitComplete(ctx); err != nil {
		conn.Abort()
		return nil, err
	}
	focus, _ := json.Marshal(map[string]any{"op": "focus", "d": map[string]string{"thread_id": thread}})
	if err := conn.Send(focus); err != nil {
		conn.Abort()
		return nil, fmt.Errorf("focus: %w", err)
	}
	return w, nil
}

func (w *firstTokenWatcher) failed() error { return w.r.Failed() }

// follow reads the frames; a mention is a handful of them, so each is decoded whole.
func (w *firstTokenWatcher) follow() error {
	for {
		f, at, err := w.conn.Read()
		if err != nil {
			if w.conn.Closing() {
				return nil
			}
			return err
		}
		var fr struct {
			Op string `json:"op"`
			D  struct {
				Type string `json:"type"`
				Data struct {
					ID               string  `json:"id"`
					RunID            *string `json:"run_id"`
					TriggerMessageID *string `json:"trigger_message_id"`
					Patch            *struct {
						Output       *string `json:"output"`
						OutputAppend string  `json:"output_append"`
					} `json:"patch"`
					Document *struct {
						Output string `json:"output"`
					} `json:"document"`
				} `json:"data"`
			} `json:"d"`
		}
		if err := json.Unmarshal(f, &fr); err != nil {
			return fmt.Errorf("frame %.200s: %w", f, err)
		}
		switch fr.Op {
		case "catchup.complete":
			w.r.Completed()
			continue
		case "event":
		default:
			continue
		}
		d := fr.D.Data
		w.mu.Lock()
		switch fr.D.Type {
		case "run.state_changed":
			if d.TriggerMessageID != nil {
				w.runOf[*d.TriggerMessageID] = d.ID
			}
		case "run.updated":
			output := d.Patch != nil && (d.Patch.OutputAppend != "" || (d.Patch.Output != nil && *d.Patch.Output != "")) ||
				d.Document != nil && d.Document.Output != ""
			if output && d.RunID != nil {
				if _, seen := w.firstOutput[*d.RunID]; !seen {
					w.firstOutput[*d.RunID] = at
				}
			}
		case "message.created":
			if d.RunID != nil {
				w.answered[*d.RunID] = true
			}
		}
		w.mu.Unlock()
	}
}
