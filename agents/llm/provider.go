package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Message is one turn of the conversation the model is given.
type Message struct {
	Role        string // user or assistant
	Text        string
	ToolCalls   []ToolCall   // the assistant's
	ToolResults []ToolResult // answers to the previous assistant turn's calls
}

// ToolCall is the model's call of a tool; Args is a JSON object.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// ToolResult is what a tool answered, or why it did not run.
type ToolResult struct {
	CallID  string
	Content string
	IsError bool
}

// Tool is a function the model may call; Schema is its arguments' JSON Schema.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// Request is one call of the model.
type Request struct {
	System      string
	Messages    []Message
	Tools       []Tool
	MaxTokens   int
	Temperature *float64
}

// Usage counts the tokens of one or more calls, and what they cost when the prices are known.
type Usage struct {
	InputTokens, OutputTokens int64
	CostUSD                   float64
}

// Turn is the model's answer to one Request.
type Turn struct {
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
}

// Provider streams the model's answers: text as it comes to onText, the whole turn at the end.
type Provider interface {
	Stream(ctx context.Context, req Request, onText func(string)) (Turn, error)
}

// ProviderError is a refusal or failure of the model's API, with the code the run fails with:
// provider_unauthorized, model_not_found or provider_error.
type ProviderError struct {
	Code    string
	Status  int // 0 when the failure came inside the stream
	Message string
}

func (e *ProviderError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: %d: %s", e.Code, e.Status, e.Message)
	}
	return e.Code + ": " + e.Message
}

// Retry bounds the retries of a call that answered 429 or 5xx (or did not connect).
type Retry struct {
	Attempts int           // all attempts, the first included
	Base     time.Duration // the first backoff, doubled each time
	Cap      time.Duration // the longest wait, Retry-After included
}

// DefaultRetry is the retry of the providers: five attempts, 1 s doubling to at most 30 s.
var DefaultRetry = Retry{Attempts: 5, Base: time.Second, Cap: 30 * time.Second}

// httpAPI is what both providers share: the POST with retries and the error classification.
type httpAPI struct {
	hc    *http.Client
	retry Retry
	// sleep waits d or until ctx ends; tests leave it as is.
	sleep func(ctx context.Context, d time.Duration) error
}

func (h *httpAPI) client() *http.Client {
	if h.hc != nil {
		return h.hc
	}
	return http.DefaultClient
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// post sends body to url and returns the answer of status 200, retrying 429, 5xx and
// connection failures with backoff (Retry-After honoured, up to retry.Cap); classify turns
// another answer's status and body into a *ProviderError.
func (h *httpAPI) post(ctx context.Context, url string, hdr http.Header, body any,
	classify func(status int, body []byte) *ProviderError) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("llm: encode the request: %w", err)
	}
	r := h.retry
	if r.Attempts <= 0 {
		r = DefaultRetry
	}
	sleep := h.sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("llm: %w", err)
		}
		req.Header = hdr.Clone()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := h.client().Do(req)
		var wait time.Duration
		var last error
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			last = &ProviderError{Code: "provider_error", Message: "cannot reach the model's API: " + err.Error()}
		case resp.StatusCode == http.StatusOK:
			return resp, nil
		default:
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			pe := classify(resp.StatusCode, raw)
			if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
				return nil, pe
			}
			last = pe
			wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		if attempt >= r.Attempts {
			return nil, last
		}
		if wait <= 0 {
			// Full jitter over the doubling backoff.
			ceiling := min(r.Cap, r.Base<<(attempt-1))
			wait = ceiling/2 + rand.N(ceiling/2+1)
		}
		if err := sleep(ctx, min(wait, r.Cap)); err != nil {
			return nil, err
		}
	}
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; 0 when absent or past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// classifyError is the classification both APIs share: the status first, then the error
// body's type, code and message, which name a missing model.
func classifyError(status int, msg, kind string) *ProviderError {
	lower := strings.ToLower(msg + " " + kind)
	pe := &ProviderError{Code: "provider_error", Status: status, Message: msg}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		strings.Contains(lower, "authentication_error") || strings.Contains(lower, "permission_error"):
		pe.Code = "provider_unauthorized"
	case status == http.StatusNotFound || strings.Contains(lower, "model_not_found") ||
		(strings.Contains(lower, "model") && (strings.Contains(lower, "not found") || strings.Contains(lower, "does not exist"))):
		pe.Code = "model_not_found"
	}
	if pe.Message == "" {
		pe.Message = http.StatusText(status)
	}
	return pe
}

// toolCalls assembles the tool calls a stream sends in pieces (an id and a name, then the
// arguments' JSON in fragments), each under its index in the answer.
type toolCalls struct {
	calls map[int]*ToolCall
	args  map[int]*strings.Builder
}

// at is the call of index i, begun when it is new.
func (tc *toolCalls) at(i int) *ToolCall {
	if tc.calls == nil {
		tc.calls, tc.args = map[int]*ToolCall{}, map[int]*strings.Builder{}
	}
	if tc.calls[i] == nil {
		tc.calls[i], tc.args[i] = &ToolCall{}, &strings.Builder{}
	}
	return tc.calls[i]
}

// addArgs appends a fragment of the arguments of the call of index i, if it began.
func (tc *toolCalls) addArgs(i int, fragment string) {
	if b := tc.args[i]; b != nil {
		b.WriteString(fragment)
	}
}

// done returns the calls in index order, empty arguments as {}.
func (tc *toolCalls) done() []ToolCall {
	idxs := make([]int, 0, len(tc.calls))
	for i := range tc.calls {
		idxs = append(idxs, i)
	}
	slices.Sort(idxs)
	var out []ToolCall
	for _, i := range idxs {
		c := *tc.calls[i]
		c.Args = json.RawMessage(tc.args[i].String())
		if strings.TrimSpace(string(c.Args)) == "" {
			c.Args = json.RawMessage("{}")
		}
		out = append(out, c)
	}
	return out
}

// sseEvent is one server-sent event.
type sseEvent struct {
	Event string
	Data  string
}

// readSSE calls fn for each event of an SSE stream until the stream ends, fn fails or ctx
// ends; a cancelled ctx closes the body, which unblocks the read at once.
func readSSE(ctx context.Context, body io.ReadCloser, fn func(sseEvent) error) error {
	stop := context.AfterFunc(ctx, func() { body.Close() })
	defer stop()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var ev sseEvent
	var data []string
	dispatch := func() error {
		if len(data) == 0 && ev.Event == "" {
			return nil
		}
		ev.Data = strings.Join(data, "\n")
		err := fn(ev)
		ev, data = sseEvent{}, nil
		return err
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if err := dispatch(); err != nil {
				return err
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Event = value
		case "data":
			data = append(data, value)
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err := sc.Err(); err != nil {
		return &ProviderError{Code: "provider_error", Message: "the stream broke: " + err.Error()}
	}
	return dispatch()
}

var errStreamDone = errors.New("llm: stream done")
