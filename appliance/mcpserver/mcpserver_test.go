package mcpserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/app/search"
)

// fakes answer what the test sets; the end-to-end tests (tests/mcp_test.go) drive the real use
// cases.
type fakes struct {
	spacesErr error
	block     chan struct{}
	searched  []search.Request
}

func (f *fakes) ListSpaces(ctx context.Context, actor kernel.Actor) ([]chat.Space, error) {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return []chat.Space{{ID: "01900000-0000-7000-8000-0000000000a1", Name: "home"}}, f.spacesErr
}
func (f *fakes) ListChannels(context.Context, kernel.Actor, kernel.ID) ([]chat.Channel, error) {
	return []chat.Channel{{ID: "01900000-0000-7000-8000-0000000000c1", Name: "general"}}, nil
}
func (f *fakes) GetThread(context.Context, kernel.Actor, kernel.ID) (chat.Thread, error) {
	return chat.Thread{}, kernel.ErrNotFound
}
func (f *fakes) ListMessages(context.Context, kernel.Actor, kernel.ID, chat.Page) ([]messaging.Message, bool, error) {
	return nil, false, nil
}
func (f *fakes) CreateMessage(context.Context, kernel.Actor, kernel.ID, messaging.NewMessage) (messaging.Message, bool, error) {
	return messaging.Message{}, false, kernel.Errorf(kernel.CodeForbidden, "you may not post here")
}
func (f *fakes) CreateThread(context.Context, kernel.Actor, kernel.ID, messaging.NewThread) (chat.Thread, messaging.Message, bool, error) {
	return chat.Thread{}, messaging.Message{}, false, kernel.ErrNotFound
}
func (f *fakes) Unread(context.Context, kernel.Actor) (inbox.Unread, error) {
	return inbox.Unread{}, nil
}
func (f *fakes) Get(context.Context, kernel.Actor, kernel.ID) (runs.Run, error) {
	return runs.Run{}, kernel.ErrNotFound
}
func (f *fakes) Principal(context.Context, kernel.ID) (identity.User, error) {
	return identity.User{}, kernel.ErrNotFound
}

var alice = kernel.Actor{ID: "01900000-0000-7000-8000-000000000001", Kind: kernel.KindPerson, Handle: "alice"}

// serve runs the endpoint behind a stand-in for the router, which puts alice in the context
// of a request that carries a bearer token.
func serve(t *testing.T, f *fakes, timeout time.Duration) *httptest.Server {
	h := New(Deps{Chat: f, Messages: f, Inbox: f, Runs: f, Search: f, Authors: f}, Options{CallTimeout: timeout})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			r = r.WithContext(kernel.WithActor(r.Context(), alice))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type withToken struct{}

func (withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer x")
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, url string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}}, nil)
}

func call(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestTools(t *testing.T) {
	f := &fakes{}
	srv := serve(t, f, 200*time.Millisecond)
	s, err := connect(t, srv.URL, withToken{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	t.Run("a use case's error is a tool error with its problem code", func(t *testing.T) {
		if text, isErr := call(t, s, "post_message", map[string]any{"thread_id": "01900000-0000-7000-8000-0000000000e1", "content": "hi"}); !isErr || text != "forbidden: you may not post here" {
			t.Fatalf("got %v %q", isErr, text)
		}
		if text, isErr := call(t, s, "get_run", map[string]any{"run_id": "01900000-0000-7000-8000-0000000000e1"}); !isErr || !strings.HasPrefix(text, "not_found: ") {
			t.Fatalf("got %v %q", isErr, text)
		}
	})
	t.Run("an internal failure is a tool error that tells nothing of it", func(t *testing.T) {
		f.spacesErr = errors.New("disk on fire at /var/lib/secret")
		defer func() { f.spacesErr = nil }()
		text, isErr := call(t, s, "list_channels", nil)
		if !isErr || strings.Contains(text, "disk") || !strings.HasPrefix(text, "internal_error: ") {
			t.Fatalf("got %v %q", isErr, text)
		}
	})
	t.Run("a call that outlasts its bound ends as unavailable", func(t *testing.T) {
		f.block = make(chan struct{})
		defer func() { f.block = nil }()
		text, isErr := call(t, s, "list_channels", nil)
		if !isErr || !strings.HasPrefix(text, "unavailable: ") {
			t.Fatalf("got %v %q", isErr, text)
		}
	})
	t.Run("a request without an actor is refused", func(t *testing.T) {
		if _, err := connect(t, srv.URL, http.DefaultTransport); err == nil {
			t.Fatal("connected without a token")
		}
	})
}

func TestNothingOutlivesTheRequests(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		srv := serve(t, &fakes{}, time.Second)
		for range 5 {
			s, err := connect(t, srv.URL, withToken{})
			if err != nil {
				t.Fatal(err)
			}
			if text, isErr := call(t, s, "list_channels", nil); isErr {
				t.Fatal(text)
			}
			_ = s.Close()
		}
		http.DefaultClient.CloseIdleConnections()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		srv.Close()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestAccept(t *testing.T) {
	srv := serve(t, &fakes{}, time.Second)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	post := func(accept string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(list))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer x")
		req.Header.Set("Content-Type", "application/json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	t.Run("a request that takes JSON in any way gets the JSON answer, as an MCP client does", func(t *testing.T) {
		for _, accept := range []string{"", "*/*", "application/json", "application/json, text/event-stream"} {
			resp := post(accept)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("Accept %q: %d %s", accept, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		}
	})

	t.Run("a tool is called with one request, without a session, as the README's curl does", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_channels","arguments":{}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer x")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"result"`) || strings.Contains(string(b), `"isError":true`) {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})

	t.Run("a request that takes no JSON is refused", func(t *testing.T) {
		if resp := post("text/html"); resp.StatusCode < 400 {
			t.Fatalf("Accept text/html: %d", resp.StatusCode)
		}
	})
}
