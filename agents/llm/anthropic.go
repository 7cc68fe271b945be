package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// Anthropic speaks the Messages API (POST {base}/v1/messages with stream: true).
type Anthropic struct {
	BaseURL string // https://api.anthropic.com by default
	APIKey  string
	Model   string
	api     httpAPI
}

// NewAnthropic returns the provider; hc nil is http.DefaultClient.
func NewAnthropic(baseURL, apiKey, model string, hc *http.Client, retry Retry) *Anthropic {
	if baseURL == "" {
		baseURL = "https://api.anthropic.com"
	}
	return &Anthropic{BaseURL: strings.TrimSuffix(baseURL, "/"), APIKey: apiKey, Model: model, api: httpAPI{hc: hc, retry: retry}}
}

type anMessage struct {
	Role    string           `json:"role"`
	Content []map[string]any `json:"content"`
}

func (p *Anthropic) body(req Request) map[string]any {
	var msgs []anMessage
	add := func(role string, blocks ...map[string]any) {
		if len(blocks) == 0 {
			return
		}
		// The API wants the roles to alternate: a turn of the same role joins the last.
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
			return
		}
		msgs = append(msgs, anMessage{Role: role, Content: blocks})
	}
	for _, m := range req.Messages {
		var results, blocks []map[string]any
		for _, r := range m.ToolResults {
			results = append(results, map[string]any{
				"type": "tool_result", "tool_use_id": r.CallID, "is_error": r.IsError,
				"content": []map[string]any{{"type": "text", "text": r.Content}},
			})
		}
		add("user", results...)
		if m.Text != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": m.Text})
		}
		for _, c := range m.ToolCalls {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Args})
		}
		add(m.Role, blocks...)
	}
	if len(msgs) > 0 && msgs[0].Role == "assistant" {
		// The conversation must open with a user turn; a thread the agent spoke first in
		// (its history cut after an answer of its own) gets one that says so.
		msgs = append([]anMessage{{Role: "user", Content: []map[string]any{{"type": "text", "text": "(earlier in the thread)"}}}}, msgs...)
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	body := map[string]any{"model": p.Model, "max_tokens": maxTokens, "messages": msgs, "stream": true}
	if req.System != "" {
		body["system"] = req.System
	}
	if req.Temperature != nil {
		body["temperature"] = min(*req.Temperature, 1)
	}
	if len(req.Tools) > 0 {
		var tools []map[string]any
		for _, t := range req.Tools {
			tools = append(tools, map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.Schema})
		}
		body["tools"] = tools
	}
	return body
}

type anError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func classifyAnthropic(status int, raw []byte) *ProviderError {
	var b struct {
		Error anError `json:"error"`
	}
	if json.Unmarshal(raw, &b) != nil || b.Error.Message == "" {
		b.Error.Message = strings.TrimSpace(string(raw))
	}
	pe := classifyError(status, b.Error.Message, b.Error.Type)
	if status == http.StatusNotFound && b.Error.Type == "not_found_error" && !strings.Contains(strings.ToLower(b.Error.Message), "model") {
		pe.Code = "provider_error" // a wrong base_url, not a model
	}
	return pe
}

type anEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		Usage struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
	Usage *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	Error anError `json:"error"`
}

// Stream calls the model once and streams its answer's text.
func (p *Anthropic) Stream(ctx context.Context, req Request, onText func(string)) (Turn, error) {
	hdr := http.Header{"Anthropic-Version": {"2023-06-01"}}
	if p.APIKey != "" {
		hdr.Set("X-Api-Key", p.APIKey)
	}
	resp, err := p.api.post(ctx, p.BaseURL+"/v1/messages", hdr, p.body(req), classifyAnthropic)
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
		if ev.Data == "" {
			return nil
		}
		var e anEvent
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			return &ProviderError{Code: "provider_error", Message: "the stream sent what is not JSON: " + ev.Data}
		}
		switch e.Type {
		case "message_start":
			turn.Usage.InputTokens += e.Message.Usage.InputTokens
			turn.Usage.OutputTokens = e.Message.Usage.OutputTokens
		case "content_block_start":
			switch e.ContentBlock.Type {
			case "tool_use":
				c := calls.at(e.Index)
				c.ID, c.Name = e.ContentBlock.ID, e.ContentBlock.Name
			case "text":
				if e.ContentBlock.Text != "" {
					text.WriteString(e.ContentBlock.Text)
					onText(e.ContentBlock.Text)
				}
			}
		case "content_block_delta":
			switch e.Delta.Type {
			case "text_delta":
				text.WriteString(e.Delta.Text)
				onText(e.Delta.Text)
			case "input_json_delta":
				calls.addArgs(e.Index, e.Delta.PartialJSON)
			}
		case "message_delta":
			if e.Usage != nil {
				turn.Usage.OutputTokens = e.Usage.OutputTokens
				if e.Usage.InputTokens > 0 {
					turn.Usage.InputTokens = e.Usage.InputTokens
				}
			}
		case "message_stop":
			return errStreamDone
		case "error":
			pe := classifyError(0, e.Error.Message, e.Error.Type)
			return pe
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
