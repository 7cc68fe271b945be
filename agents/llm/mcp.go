package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Toolbox holds the sessions of the configured MCP servers and the tools they list, named for
// the model server__tool.
type Toolbox struct {
	sessions []*mcp.ClientSession
	tools    []Tool
	byName   map[string]boxTool
}

type boxTool struct {
	server, tool string
	ask          bool
	session      *mcp.ClientSession
}

// Dial is how OpenTools reaches a server; DialServer is the real one.
type Dial func(ctx context.Context, s MCPServer) (mcp.Transport, error)

// DialServer starts the server's command (its env added to this process's) or names its URL.
func DialServer(_ context.Context, s MCPServer) (mcp.Transport, error) {
	if s.URL != "" {
		return &mcp.StreamableClientTransport{Endpoint: s.URL}, nil
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = os.Environ()
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	return &mcp.CommandTransport{Command: cmd}, nil
}

var notToolName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// OpenTools connects to each server and lists its tools. A server that cannot be reached or
// lists nothing is an error: the agent would answer without tools it was told it has.
func OpenTools(ctx context.Context, servers []MCPServer, dial Dial) (*Toolbox, error) {
	if dial == nil {
		dial = DialServer
	}
	tb := &Toolbox{byName: map[string]boxTool{}}
	for _, s := range servers {
		t, err := dial(ctx, s)
		if err != nil {
			tb.Close()
			return nil, fmt.Errorf("mcp server %s: %w", s.Name, err)
		}
		cl := mcp.NewClient(&mcp.Implementation{Name: "bothy-agent-llm", Version: "1"}, nil)
		cs, err := cl.Connect(ctx, t, nil)
		if err != nil {
			tb.Close()
			return nil, fmt.Errorf("mcp server %s: connect: %w", s.Name, err)
		}
		tb.sessions = append(tb.sessions, cs)
		listed := map[string]bool{}
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				tb.Close()
				return nil, fmt.Errorf("mcp server %s: list its tools: %w", s.Name, err)
			}
			name := notToolName.ReplaceAllString(s.Name+"__"+tool.Name, "_")
			if len(name) > 64 {
				name = name[:64]
			}
			schema, err := json.Marshal(tool.InputSchema)
			if err != nil || string(schema) == "null" {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			desc := tool.Description
			if desc == "" {
				desc = tool.Title
			}
			tb.tools = append(tb.tools, Tool{Name: name, Description: desc, Schema: schema})
			tb.byName[name] = boxTool{server: s.Name, tool: tool.Name, ask: slices.Contains(s.Ask, tool.Name), session: cs}
			listed[tool.Name] = true
		}
		for _, a := range s.Ask {
			if !listed[a] {
				tb.Close()
				return nil, fmt.Errorf("mcp server %s: ask names %q, which the server does not list", s.Name, a)
			}
		}
	}
	return tb, nil
}

// Tools are the functions the model is offered.
func (tb *Toolbox) Tools() []Tool {
	if tb == nil {
		return nil
	}
	return tb.tools
}

// lookup answers the server and tool behind a model's name.
func (tb *Toolbox) lookup(name string) (boxTool, bool) {
	if tb == nil {
		return boxTool{}, false
	}
	t, ok := tb.byName[name]
	return t, ok
}

// call runs the tool and returns its result as text; isError when the tool said it failed.
func (t boxTool) call(ctx context.Context, args json.RawMessage) (string, bool, error) {
	var a map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return "the arguments are not a JSON object: " + err.Error(), true, nil
		}
	}
	res, err := t.session.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: a})
	if err != nil {
		return "", true, err
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
			continue
		}
		b, _ := json.Marshal(c)
		parts = append(parts, string(b))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n"), res.IsError, nil
}

// Close ends the sessions (and stops the servers' commands).
func (tb *Toolbox) Close() error {
	if tb == nil {
		return nil
	}
	var errs []error
	for _, s := range tb.sessions {
		errs = append(errs, s.Close())
	}
	tb.sessions = nil
	return errors.Join(errs...)
}
