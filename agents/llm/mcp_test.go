package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain lets the test binary be an MCP server on stdio, for OpenTools's command servers.
func TestMain(m *testing.M) {
	if os.Getenv("LLM_TEST_MCP_STDIO") == "1" {
		if err := greeter().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// greeter is an MCP server of one tool, greet, that answers $GREETING.
func greeter() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: os.Getenv("GREETING")}}}, nil, nil
	})
	return s
}

func TestOpenTools(t *testing.T) {
	ctx := context.Background()
	greet := func(t *testing.T, tb *Toolbox, name, want string) {
		t.Helper()
		bt, ok := tb.lookup(name)
		if !ok || len(tb.Tools()) != 1 || tb.Tools()[0].Name != name || tb.Tools()[0].Description != "Greets" {
			t.Fatalf("tools %+v", tb.Tools())
		}
		got, isError, err := bt.call(ctx, []byte(`{}`))
		if err != nil || isError || got != want {
			t.Errorf("greet = %q, %v, %v; want %q", got, isError, err, want)
		}
	}

	t.Run("starts a command server with its env and calls its tool over stdio", func(t *testing.T) {
		tb, err := OpenTools(ctx, []MCPServer{{Name: "local", Command: os.Args[0], Args: []string{"-test.run=^$"},
			Env: map[string]string{"LLM_TEST_MCP_STDIO": "1", "GREETING": "hello from stdio"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tb.Close()
		greet(t, tb, "local__greet", "hello from stdio")
	})

	t.Run("reaches a url server over streamable HTTP", func(t *testing.T) {
		t.Setenv("GREETING", "hello over http")
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return greeter() }, nil))
		defer srv.Close()
		tb, err := OpenTools(ctx, []MCPServer{{Name: "remote", URL: srv.URL}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tb.Close()
		greet(t, tb, "remote__greet", "hello over http")
	})

	t.Run("refuses an ask of a tool the server does not list", func(t *testing.T) {
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return greeter() }, nil))
		defer srv.Close()
		_, err := OpenTools(ctx, []MCPServer{{Name: "remote", URL: srv.URL, Ask: []string{"greeet"}}}, nil)
		if err == nil || !strings.Contains(err.Error(), `"greeet"`) {
			t.Errorf("error %v", err)
		}
	})

	t.Run("says which server cannot be started", func(t *testing.T) {
		_, err := OpenTools(ctx, []MCPServer{{Name: "broken", Command: "/nonexistent/mcp-server"}}, nil)
		if err == nil || !strings.Contains(err.Error(), "mcp server broken") {
			t.Errorf("error %v", err)
		}
	})
}
