package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// OpenAI speaks the chat completions API (POST {base}/chat/completions with stream: true), which
// OpenAI, Ollama, vLLM, llama.cpp's server and many gateways answer.
type OpenAI struct {
	BaseURL string // such as https://api.openai.com/v1 or http://ollama.lan:11434/v1
	APIKey  string // sent as a bearer token when set
	Model   string
	api     httpAPI
}

// NewOpenAI returns the provider; hc nil is http.DefaultClient.
func NewOpenAI(baseURL, apiKey, model string, hc *http.Client, retry Retry) *OpenAI {
	if baseURL == "" {
		baseURL = "https://api.openai.com/v1"
	}
	return &OpenAI{BaseURL: strings.TrimSuffix(baseURL, "/"), APIKey: apiKey, Model: model, api: httpAPI{hc: hc, retry: retry}}
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaChunk struct {
	Choices []struct {
		Delta struct {
			Content   string       `json:"content"`
			ToolCalls []oaToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
	Error *oaError `json:"error"`
}

type oaError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

func strp(s string) *string { return &s }

func (p *OpenAI) body(req Request) map[string]any {
	msgs := []oaMessage{}
	if req.System != "" {
		msgs = append(msgs, oaMessage{Role: "system", Content: strp(req.System)})
	}
	for _, m := range req.Messages {
		for _, r := range m.ToolResults {
			msgs = append(msgs, oaMessage{Role: "tool", ToolCallID: r.CallID, Content: strp(r.Content)})
		}
		if m.Text == "" && len(m.ToolCalls) == 0 {
			continue
		}
		om := oaMessage{Role: m.Role, Content: strp(m.Text)}
		if m.Text == "" {
			om.Content = nil
		}
		for _, c := range m.ToolCalls {
			tc := oaToolCall{ID: c.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = c.Name, string(c.Args)
			om.ToolCalls = append(om.ToolCalls, tc)
		}
		msgs = append(msgs, om)
	}
	body := map[string]any{
		"model": p.Model, "messages": msgs, "stream": true,
		"stream_options": map[string]any{"include_usage": true},
	}
	if req.MaxTokens > 0 {
		body["max_tokens"] = req.MaxTokens
	}
	if req.Temperature != nil {
		body["temperature"] = *req.Temperature
	}
	if len(req.Tools) > 0 {
		var tools []map[string]any
		for _, t := range req.Tools {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
				"name": t.Name, "description": t.Description, "parameters": t.Schema,
			}})
		}
		body["tools"] = tools
	}
	return body
}

func classifyOpenAI(status int, raw []byte) *ProviderError {
	var b struct {
		Error json.RawMessage `json:"error"`
	}
	var e oaError
	if json.Unmarshal(raw, &b) == nil && len(b.Error) > 0 {
		if json.Unmarshal(b.Error, &e) != nil {
			_ = json.Unmarshal(b.Error, &e.Message) // Ollama's older {"error": "text"}
		}
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(raw))
	}
	code, _ := e.Code.(string)
	return classifyError(status, e.Message, e.Type+" "+code)
}

// Stream calls the model once and streams its answer's text.
func (p *OpenAI) Stream(ctx context.Context, req Request, onText func(string)) (Turn, error) {
	hdr := http.Header{}
	if p.APIKey != "" {
		hdr.Set("Authorization", "Bearer "+p.APIKey)
	}
	resp, err := p.api.post(ctx, p.BaseURL+"/chat/completions", hdr, p.body(req), classifyOpenAI)
	if err != nil {
		return Turn{}, err
	}
	defer resp.Body.Close()
	var (
		turn  Turn
		text  strings.Builder
		calls toolCalls
	)
	err = readSSE(ctx, resp.Body, func(ev sseEvent) error {
		if ev.Data == "[DONE]" {
			return errStreamDone
		}
		var c oaChunk
		if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
			return &ProviderError{Code: "provider_error", Message: "the stream sent what is not JSON: " + ev.Data}
		}
		if c.Error != nil {
			code, _ := c.Error.Code.(string)
			return classifyError(0, c.Error.Message, c.Error.Type+" "+code)
		}
		if c.Usage != nil {
			turn.Usage = Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				text.WriteString(ch.Delta.Content)
				onText(ch.Delta.Content)
			}
			for i, tc := range ch.Delta.ToolCalls {
				idx := i
				if tc.Index != nil {
					idx = *tc.Index
				}
				call := calls.at(idx)
				if tc.ID != "" {
					call.ID = tc.ID
				}
				call.Name += tc.Function.Name
				calls.addArgs(idx, tc.Function.Arguments)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStreamDone) {
		return Turn{}, err
	}
	turn.Text = text.String()
	turn.ToolCalls = calls.done()
	return turn, nil
}
