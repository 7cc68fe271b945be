// Package mcpserver is the MCP endpoint (Model Context Protocol, streamable HTTP) for outside
// agents: Claude Code, Cursor or any MCP client lists the channels it may read, reads and posts
// messages, searches them, reads what is unread and follows a run, with an API token or an agent
// token.
//
// Each tool calls the use case that the REST route of the same read or write calls, as the
// principal of the token, so the authorizer decides exactly as it does for REST: what the
// principal may not see is a not_found tool error, what it may see but not do forbidden. A
// tool's failure is a tool error whose text starts with the problem code, never a protocol
// error. The router authenticates the request and guards its body (httpapi.HandleJSONRPC); this
// package only translates between JSON-RPC and the use cases.
//
// The endpoint is stateless: the server keeps no MCP session between requests (no
// Mcp-Session-Id, no standing SSE stream, GET and DELETE answer 405), so nothing outlives a
// request, and a shutdown waits only for the requests under way, each bounded by its deadline.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/app/search"
)

// Path is where the router serves the endpoint.
const Path = "/api/v1/mcp"

// Chat is what the tools call of chat; *chat.Service implements it.
type Chat interface {
	ListSpaces(ctx context.Context, actor kernel.Actor) ([]chat.Space, error)
	ListChannels(ctx context.Context, actor kernel.Actor, spaceID kernel.ID) ([]chat.Channel, error)
	GetThread(ctx context.Context, actor kernel.Actor, id kernel.ID) (chat.Thread, error)
}

// Messages is what the tools call of messaging; *messaging.Service implements it.
type Messages interface {
	ListMessages(ctx context.Context, actor kernel.Actor, threadID kernel.ID, p chat.Page) ([]messaging.Message, bool, error)
	CreateMessage(ctx context.Context, actor kernel.Actor, threadID kernel.ID, in messaging.NewMessage) (messaging.Message, bool, error)
	CreateThread(ctx context.Context, actor kernel.Actor, channelID kernel.ID, in messaging.NewThread) (chat.Thread, messaging.Message, bool, error)
}

// Inbox is what the tools call of inbox; *inbox.Service implements it.
type Inbox interface {
	Unread(ctx context.Context, actor kernel.Actor) (inbox.Unread, error)
}

// Runs is what the tools call of runs; *runs.Service implements it.
type Runs interface {
	Get(ctx context.Context, actor kernel.Actor, id kernel.ID) (runs.Run, error)
}

// Search is what the search tool calls; *search.Service implements it.
type Search interface {
	Search(ctx context.Context, actor kernel.Actor, r search.Request) (search.Page, error)
}

// Authors names the authors of messages the caller has been allowed to read: identity's store
// implements it. It is read only for messages a use case has already handed out.
type Authors interface {
	Principal(ctx context.Context, id kernel.ID) (identity.User, error)
}

var (
	_ Chat     = (*chat.Service)(nil)
	_ Messages = (*messaging.Service)(nil)
	_ Inbox    = (*inbox.Service)(nil)
	_ Runs     = (*runs.Service)(nil)
	_ Search   = (*search.Service)(nil)
)

// Deps are the use cases the tools call; none may be nil but Logger.
type Deps struct {
	Chat     Chat
	Messages Messages
	Inbox    Inbox
	Runs     Runs
	Search   Search
	Authors  Authors
	Logger   *slog.Logger
}

// Options bound the endpoint.
type Options struct {
	// Version is the server's version, announced at initialize.
	Version string
	// MaxBodyBytes caps a request's body in the SDK too (the router has read it already within
	// the same bound); 0 keeps the SDK's default.
	MaxBodyBytes int64
	// CallTimeout bounds one tool call (default 30 s), whether or not its client still waits.
	CallTimeout time.Duration
}

// New returns the endpoint's handler. It expects the actor in the request's context
// (kernel.WithActor), where the router's authentication put it.
func New(d Deps, o Options) http.Handler {
	if d.Chat == nil || d.Messages == nil || d.Inbox == nil || d.Runs == nil || d.Search == nil || d.Authors == nil {
		panic("mcpserver: New needs Chat, Messages, Inbox, Runs, Search and Authors")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	t := &tools{d: d, timeout: o.CallTimeout}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bothy", Title: "bothy", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "bothy is a chat hub for people and AI agents: spaces hold channels, channels hold threads, " +
			"threads hold messages. Start with list_channels; a channel's main_thread_id is its main conversation. " +
			"Every tool acts as the owner of the token, with exactly its rights.",
		Logger: d.Logger,
	})
	t.register(srv)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		Logger:       d.Logger,
		// The protection is against a page that reaches a server on this machine through a
		// rebound DNS name and calls it with the browser's ambient credentials; here every call
		// needs a bearer token that no page has, and behind a reverse proxy on the loopback the
		// Host header is the public name, which the check would refuse.
		DisableLocalhostProtection:   true,
		MaxRequestBodyBytes:          o.MaxBodyBytes,
		PropagateRequestCancellation: true,
	})
	// The SDK hands a tool the token's information of its request (CallToolRequest.Extra); the
	// router has resolved the token to the actor, which goes along in it.
	return auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		a := kernel.ActorFrom(ctx)
		if !a.Authenticated() {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: string(a.ID), Extra: map[string]any{actorKey: a}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(acceptingJSON(h))
}

// acceptingJSON lets a request that takes JSON in any way (application/json, */*, or no Accept at
// all, as curl and most HTTP libraries send) reach the SDK, which answers 400 unless Accept names
// both application/json and text/event-stream, as MCP's clients do. The endpoint answers plain
// JSON only (no stream), so what such a request gets is what it asked for; one that takes no
// JSON keeps its Accept and gets the SDK's refusal.
func acceptingJSON(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Accept"); a == "" || strings.Contains(a, "application/json") || strings.Contains(a, "*/*") {
			r.Header.Set("Accept", "application/json, text/event-stream")
		}
		h.ServeHTTP(w, r)
	})
}

const actorKey = "bothy.actor"

// actorOf is the principal a tool call acts as.
func actorOf(req *mcp.CallToolRequest) (kernel.Actor, error) {
	if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil {
		if a, ok := req.Extra.TokenInfo.Extra[actorKey].(kernel.Actor); ok && a.Authenticated() {
			return a, nil
		}
	}
	return kernel.Actor{}, kernel.Errorf(kernel.CodeUnauthenticated, "send a token as Authorization: Bearer")
}

// toolError is the result of a failed call: the problem code, a colon and the message, as a
// REST client reads code and detail of a problem. An internal failure says no more than that.
func (t *tools) toolError(name string, err error) *mcp.CallToolResult {
	var text string
	var ke *kernel.Error
	switch {
	case errors.As(err, &ke):
		text = ke.Code.String() + ": " + ke.Message
		if ke.Field != "" {
			text += " (field " + ke.Field + ")"
		}
	case errors.Is(err, context.DeadlineExceeded):
		text = kernel.CodeUnavailable.String() + ": the call took longer than " + t.timeout.String()
	default:
		t.d.Logger.Error("mcp tool failed", "tool", name, "err", err)
		text = kernel.CodeInternal.String() + ": the server failed; try again later"
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// result is the answer of a call: v as JSON text and as structured content.
func result(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// parseID reads an id argument; a malformed one is validation_failed naming the field.
func parseID(field, v string) (kernel.ID, error) {
	id, err := kernel.ParseID(v)
	if err != nil {
		return kernel.NilID, kernel.Invalid(field, "%s must be an id", field)
	}
	return id, nil
}
