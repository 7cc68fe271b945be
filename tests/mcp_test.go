package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerTransport sends every request with the token, as an MCP client configured with an
// Authorization header does.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the SDK's client to the instance's MCP endpoint with token.
func mcpSession(t *testing.T, srv *server, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "bothy-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.public + "/api/v1/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token}, Timeout: 10 * time.Second}}, nil)
	if err != nil {
		t.Fatalf("connect to the MCP endpoint: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// callTool calls a tool and returns its text and whether it is a tool error; a protocol error
// fails the test.
func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), res.IsError
}

// mustTool calls a tool that must succeed and decodes its JSON answer into v.
func mustTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, v any) {
	t.Helper()
	text, isErr := callTool(t, s, name, args)
	if isErr {
		t.Fatalf("%s %v: tool error %q", name, args, text)
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("%s: decode %q: %v", name, text, err)
	}
}

// wantToolError calls a tool that must fail with the problem code.
func wantToolError(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, code string) {
	t.Helper()
	text, isErr := callTool(t, s, name, args)
	if !isErr || !strings.HasPrefix(text, code+": ") {
		t.Fatalf("%s %v: error %v, text %q; want a tool error %s", name, args, isErr, text, code)
	}
}

type mcpChannels struct {
	Spaces []struct {
		ID       string `json:"id"`
		Channels []struct {
			ID           string `json:"id"`
			Name         string `json:"name"`
			MainThreadID string `json:"main_thread_id"`
		} `json:"channels"`
	} `json:"spaces"`
}

func (c mcpChannels) names() []string {
	var out []string
	for _, s := range c.Spaces {
		for _, ch := range s.Channels {
			out = append(out, ch.Name)
		}
	}
	slices.Sort(out)
	return out
}

type mcpThread struct {
	Thread struct {
		ID string `json:"id"`
	} `json:"thread"`
	Messages []struct {
		ID           string `json:"id"`
		AuthorID     string `json:"author_id"`
		AuthorHandle string `json:"author_handle"`
		AuthorKind   string `json:"author_kind"`
		Content      string `json:"content"`
	} `json:"messages"`
	HasMore bool `json:"has_more"`
}

// TestMCP drives the MCP endpoint with the SDK's client, as an agent's token and as a person's
// API token: each tool answers what the REST API answers that principal.
func TestMCP(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng, "--set", "mcp.enabled=true")
		sp := in.owner.mustCreateSpace(t, uniqueName("mcp"))
		open := in.owner.mustCreateChannel(t, sp.ID, "open")
		readonly := in.owner.mustCreateChannel(t, sp.ID, "readonly")
		secret := in.owner.mustCreateChannel(t, sp.ID, "secret")
		openFirst := in.owner.mustPost(t, open.MainThreadID, "hello from the owner")
		in.owner.mustPost(t, readonly.MainThreadID, "read only here")
		hidden := in.owner.mustCreateThread(t, secret.ID, "plans", "the secret plans")

		bot, botREST := in.mustCreateAgent(t, "scout")
		in.owner.mustGrant(t, open.ID, bot.ID, "post")
		in.owner.mustGrant(t, readonly.ID, bot.ID, "view")

		t.Run("an agent lists only the channels it may read", func(t *testing.T) {
			s := mcpSession(t, in.srv, botREST.token)
			tools, err := s.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
				if tl.Description == "" || tl.InputSchema == nil {
					t.Errorf("tool %s has no description or input schema", tl.Name)
				}
			}
			slices.Sort(names)
			if want := []string{"get_run", "list_channels", "list_unread", "post_message", "read_thread", "search_messages"}; !slices.Equal(names, want) {
				t.Fatalf("tools %v, want %v", names, want)
			}
			var got mcpChannels
			mustTool(t, s, "list_channels", nil, &got)
			if n := got.names(); !slices.Equal(n, []string{"open", "readonly"}) {
				t.Fatalf("channels %v, want open and readonly", n)
			}
		})

		t.Run("an agent reads a thread it may read, with its authors' handles and kinds", func(t *testing.T) {
			s := mcpSession(t, in.srv, botREST.token)
			var th mcpThread
			mustTool(t, s, "read_thread", map[string]any{"thread_id": open.MainThreadID, "limit": 10}, &th)
			if th.Thread.ID != open.MainThreadID || len(th.Messages) != 1 {
				t.Fatalf("read %+v", th)
			}
			m := th.Messages[0]
			if m.ID != openFirst.ID || m.Content != "hello from the owner" || m.AuthorHandle != "owner" || m.AuthorKind != "person" {
				t.Fatalf("message %+v", m)
			}
		})

		t.Run("an agent cannot read a thread it may not see: not_found, as REST answers", func(t *testing.T) {
			s := mcpSession(t, in.srv, botREST.token)
			wantToolError(t, s, "read_thread", map[string]any{"thread_id": hidden.Thread.ID}, "not_found")
			wantToolError(t, s, "read_thread", map[string]any{"thread_id": secret.MainThreadID}, "not_found")
			wantToolError(t, s, "read_thread", map[string]any{"thread_id": "not-an-id"}, "validation_failed")
			botREST.do(t, http.MethodGet, api("threads", hidden.Thread.ID, "messages"), nil).want(t, http.StatusNotFound)
		})

		t.Run("an agent posts where it may and is refused where it may not", func(t *testing.T) {
			s := mcpSession(t, in.srv, botREST.token)
			var posted struct {
				ID       string `json:"id"`
				ThreadID string `json:"thread_id"`
			}
			mustTool(t, s, "post_message", map[string]any{"thread_id": open.MainThreadID, "content": "hello from scout"}, &posted)
			var m message
			in.owner.do(t, http.MethodGet, api("messages", posted.ID), nil).want(t, http.StatusOK).decode(t, &m)
			if m.AuthorID != bot.ID || m.Content != "hello from scout" || m.ThreadID != open.MainThreadID {
				t.Fatalf("the posted message is %+v", m)
			}
			mustTool(t, s, "post_message", map[string]any{"channel_id": open.ID, "title": "a new topic", "content": "first words"}, &posted)
			var th thread
			in.owner.do(t, http.MethodGet, api("threads", posted.ThreadID), nil).want(t, http.StatusOK).decode(t, &th)
			if th.Title != "a new topic" || th.ChannelID != open.ID || th.CreatedBy != bot.ID {
				t.Fatalf("the new thread is %+v", th)
			}
			wantToolError(t, s, "post_message", map[string]any{"thread_id": readonly.MainThreadID, "content": "may I?"}, "forbidden")
			wantToolError(t, s, "post_message", map[string]any{"thread_id": hidden.Thread.ID, "content": "let me in"}, "not_found")
			wantToolError(t, s, "post_message", map[string]any{"channel_id": secret.ID, "content": "let me in"}, "not_found")
			wantToolError(t, s, "post_message", map[string]any{"content": "where?"}, "validation_failed")
			wantToolError(t, s, "post_message", map[string]any{"thread_id": open.MainThreadID, "channel_id": open.ID, "content": "both"}, "validation_failed")
			wantToolError(t, s, "post_message", map[string]any{"thread_id": open.MainThreadID, "content": ""}, "validation_failed")
			var after mcpThread
			mustTool(t, s, "read_thread", map[string]any{"thread_id": readonly.MainThreadID}, &after)
			if len(after.Messages) != 1 {
				t.Fatalf("the refused post left %d messages in readonly", len(after.Messages))
			}
		})

		piaU, pia := in.mustCreateUser(t, "pia")
		in.owner.mustGrant(t, open.ID, piaU.ID, "invoke")
		var tok apiToken
		pia.do(t, http.MethodPost, api("tokens"), map[string]any{"name": "claude code"}).want(t, http.StatusCreated).decode(t, &tok)

		t.Run("a person's API token acts with the person's rights", func(t *testing.T) {
			s := mcpSession(t, in.srv, tok.Token)
			var got mcpChannels
			mustTool(t, s, "list_channels", nil, &got)
			if n := got.names(); !slices.Equal(n, []string{"open"}) {
				t.Fatalf("channels %v, want open", n)
			}
			var th mcpThread
			mustTool(t, s, "read_thread", map[string]any{"thread_id": open.MainThreadID}, &th)
			if len(th.Messages) != 2 || th.Messages[1].AuthorHandle != "scout" || th.Messages[1].AuthorKind != "agent" {
				t.Fatalf("read %+v", th)
			}
			var unread struct {
				Items []struct {
					ChannelID   string `json:"channel_id"`
					UnreadCount int64  `json:"unread_count"`
				} `json:"items"`
				UnreadCount int64 `json:"unread_count"`
			}
			mustTool(t, s, "list_unread", nil, &unread)
			found := false
			for _, it := range unread.Items {
				found = found || it.ChannelID == open.ID && it.UnreadCount >= 2
			}
			if !found {
				t.Fatalf("unread %+v has not the open channel's messages", unread)
			}
			wantToolError(t, s, "read_thread", map[string]any{"thread_id": readonly.MainThreadID}, "not_found")
			wantToolError(t, s, "post_message", map[string]any{"thread_id": readonly.MainThreadID, "content": "hi"}, "not_found")

			// A mention of the agent invokes it; the run is the person's to read.
			mention := pia.mustPost(t, open.MainThreadID, "@scout look around")
			var runs page[struct {
				ID string `json:"id"`
			}]
			pia.do(t, http.MethodGet, api("threads", open.MainThreadID, "runs"), nil).want(t, http.StatusOK).decode(t, &runs)
			if len(runs.Items) != 1 {
				t.Fatalf("the mention %s made %d runs", mention.ID, len(runs.Items))
			}
			var run struct {
				ID      string `json:"id"`
				AgentID string `json:"agent_id"`
				Status  string `json:"status"`
			}
			mustTool(t, s, "get_run", map[string]any{"run_id": runs.Items[0].ID}, &run)
			if run.ID != runs.Items[0].ID || run.AgentID != bot.ID || run.Status == "" {
				t.Fatalf("run %+v", run)
			}
			wantToolError(t, s, "get_run", map[string]any{"run_id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}, "not_found")
		})

		t.Run("a bad token is 401 and a request is plain JSON-RPC over POST", func(t *testing.T) {
			rpc := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{}}
			accept := header("Accept", "application/json, text/event-stream")
			as(in.srv, "bothy_not-a-token").do(t, http.MethodPost, api("mcp"), rpc, accept).want(t, http.StatusUnauthorized)
			as(in.srv, "").do(t, http.MethodPost, api("mcp"), rpc, accept, breaksDocument()).want(t, http.StatusUnauthorized)
			r := pia.do(t, http.MethodPost, api("mcp"), rpc, accept).want(t, http.StatusOK)
			if res, _ := r.obj()["result"].(map[string]any); res == nil || len(res["tools"].([]any)) != 6 {
				t.Fatalf("tools/list answered %s", r)
			}
			pia.do(t, http.MethodGet, api("mcp"), nil, breaksDocument()).want(t, http.StatusMethodNotAllowed)
		})
	})
}

// TestMCPOff: without mcp.enabled the endpoint does not exist.
func TestMCPOff(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		rpc := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{}}
		r := in.owner.do(t, http.MethodPost, api("mcp"), rpc, header("Accept", "application/json, text/event-stream"), breaksDocument())
		r.want(t, http.StatusNotFound)
		if r.obj()["code"] != "not_found" {
			t.Fatalf("answered %s", r)
		}
	})
}
