package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fakeRunServer is a gateway that delivers scripted events to an agent and records its acks,
// plus the REST calls of one run ("r1" in thread "t1", invoked by message "m1").
type fakeRunServer struct {
	t      *testing.T
	srv    *httptest.Server
	events []map[string]any // sent after ready, in order
	// status answers each call when set (path → status code and code), once.
	refuse map[string][2]any

	mu         sync.Mutex
	grew       chan struct{} // closed, and replaced, when push adds an event
	polls      []string      // the cursor query of each long poll ("" without one)
	pollRefuse []int         // statuses the next polls answer, one each
	acks       []int64
	calls      []string // "METHOD path version?"
	tokens     []string // the Invocation-Token of each run call
	version    int
	clientID   string
	renewed    int
}

func newFakeRunServer(t *testing.T, events ...map[string]any) *fakeRunServer {
	t.Helper()
	fs := &fakeRunServer{t: t, events: events, refuse: map[string][2]any{}, grew: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/gateway", func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		fc := &fakeConn{t: t, ws: ws, ctx: ctx, autoAck: true}
		if !fc.hello(30000) {
			return
		}
		if _, ok := fc.expect(opIdentify); !ok {
			return
		}
		acked := int64(0)
		fc.send(opReady, map[string]any{"session_id": "s1", "principal": map[string]any{"id": "a1", "kind": "agent"}, "head_seq": 0, "acked_seq": acked})
		// The events, and those pushed later, as they come.
		go func() {
			for i := 0; ; i++ {
				fs.mu.Lock()
				for i >= len(fs.events) {
					grew := fs.grew
					fs.mu.Unlock()
					select {
					case <-grew:
					case <-ctx.Done():
						return
					}
					fs.mu.Lock()
				}
				ev := fs.events[i]
				fs.mu.Unlock()
				if !fc.send(opEvent, ev) {
					return
				}
			}
		}()
		for {
			f, ok := fc.read()
			if !ok {
				return
			}
			if f.Op == opAck {
				var d struct{ Seq int64 }
				_ = json.Unmarshal(f.D, &d)
				fs.mu.Lock()
				fs.acks = append(fs.acks, d.Seq)
				fs.mu.Unlock()
			}
		}
	})
	answer := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /api/v1/agents/me/events", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		fs.mu.Lock()
		fs.polls = append(fs.polls, q.Get("cursor"))
		if len(fs.pollRefuse) > 0 {
			status := fs.pollRefuse[0]
			fs.pollRefuse = fs.pollRefuse[1:]
			fs.mu.Unlock()
			code := "scripted"
			if status == http.StatusGone { // the answer to a cursor behind the server's retention
				code = "resync_required"
			}
			answer(w, status, map[string]any{"status": status, "code": code, "detail": "scripted"})
			return
		}
		fs.mu.Unlock()
		if q.Get("wait") == "" {
			t.Errorf("a poll without wait: %s", r.URL)
		}
		cursor, _ := strconv.ParseInt(q.Get("cursor"), 10, 64)
		// A short long poll: the test's clock, not the server's 25 s.
		deadline := time.After(100 * time.Millisecond)
		for {
			fs.mu.Lock()
			var page []map[string]any
			next := cursor
			for _, ev := range fs.events {
				if s := seqOf(ev); s > cursor {
					page = append(page, ev)
					next = max(next, s)
				}
			}
			grew := fs.grew
			fs.mu.Unlock()
			if len(page) > 0 {
				answer(w, 200, map[string]any{"events": page, "next_cursor": next, "head_seq": next})
				return
			}
			select {
			case <-grew:
			case <-deadline:
				answer(w, 200, map[string]any{"events": []any{}, "next_cursor": next, "head_seq": next})
				return
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("POST /api/v1/agents/me/ack", func(w http.ResponseWriter, r *http.Request) {
		var d struct{ Seq int64 }
		_ = json.NewDecoder(r.Body).Decode(&d)
		fs.mu.Lock()
		fs.acks = append(fs.acks, d.Seq)
		fs.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /api/v1/messages/m1", func(w http.ResponseWriter, r *http.Request) {
		answer(w, 200, Message{ID: "m1", ThreadID: "t1", Content: "@echo hello there"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		fs.mu.Lock()
		defer fs.mu.Unlock()
		call := r.Method + " " + r.URL.Path
		if v, ok := body["version"]; ok {
			call += " " + jsonString(v)
		}
		if o, ok := body["outcome"].(string); ok {
			call += " " + o
		}
		fs.calls = append(fs.calls, call)
		if ref, ok := fs.refuse[call]; ok {
			delete(fs.refuse, call)
			answer(w, ref[0].(int), map[string]any{"status": ref[0], "code": ref[1], "detail": "scripted"})
			return
		}
		if r.URL.Path == "/api/v1/runs/r1/token" {
			fs.renewed++
			answer(w, 200, map[string]any{"invocation_token": "renewed", "expires_at": time.Now().Add(time.Hour)})
			return
		}
		fs.tokens = append(fs.tokens, r.Header.Get("Invocation-Token"))
		switch {
		case r.URL.Path == "/api/v1/threads/t1/messages":
			fs.clientID, _ = body["client_msg_id"].(string)
			answer(w, 201, Message{ID: "m2", ThreadID: "t1", Content: body["content"].(string)})
		case r.Method == http.MethodPatch:
			fs.version++
			answer(w, 200, Run{ID: "r1", Status: "running", Document: RunDocument{Version: fs.version}})
		default:
			answer(w, 200, Run{ID: "r1", Status: "running"})
		}
	})
	fs.srv = httptest.NewServer(mux)
	t.Cleanup(fs.srv.Close)
	return fs
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

func seqOf(ev map[string]any) int64 {
	switch s := ev["seq"].(type) {
	case int:
		return int64(s)
	case int64:
		return s
	}
	panic("an event without a seq")
}

// push adds an event to the log: the gateway sends it, the next poll answers it.
func (fs *fakeRunServer) push(ev map[string]any) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.events = append(fs.events, ev)
	close(fs.grew)
	fs.grew = make(chan struct{})
}

// run runs a on transport ("gateway" or "poll").
func run(ctx context.Context, a *Agent, transport string, h func(context.Context, *Invocation) error) error {
	if transport == "poll" {
		return a.RunLongPoll(ctx, h)
	}
	return a.Run(ctx, h)
}

func (fs *fakeRunServer) agent(opts ...Option) *Agent {
	base := []Option{WithHTTPClient(fs.srv.Client()), WithBackoff(time.Millisecond, 5*time.Millisecond)}
	return NewAgent(fs.srv.URL, "agent-token", append(base, opts...)...)
}

func (fs *fakeRunServer) snapshot() (calls []string, acks []int64, tokens []string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Clone(fs.calls), slices.Clone(fs.acks), slices.Clone(fs.tokens)
}

// waitAck waits until the server was acknowledged seq.
func (fs *fakeRunServer) waitAck(t *testing.T, seq int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, acks, _ := fs.snapshot()
		if slices.Contains(acks, seq) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ack of %d within 5s; acks %v", seq, acks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func invocation(seq int64, expires time.Time) map[string]any {
	return map[string]any{"seq": seq, "type": "agent.invocation", "data": map[string]any{
		"run_id": "r1", "thread_id": "t1", "message_id": "m1", "invocation_token": "tok1", "expires_at": expires,
	}}
}

func TestAgent(t *testing.T) {
	t.Run("hands an invocation with its message, patches in version order, answers and acks", func(t *testing.T) {
		fs := newFakeRunServer(t, map[string]any{"seq": 1, "type": "message.created", "data": map[string]any{}},
			invocation(2, time.Now().Add(time.Hour)))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var got *Invocation
		done := make(chan error, 1)
		go func() {
			done <- fs.agent().Run(ctx, func(ctx context.Context, inv *Invocation) error {
				got = inv
				if _, err := inv.Start(ctx); err != nil {
					return err
				}
				st := "reading"
				if _, err := inv.Update(ctx, RunPatch{Status: &st}); err != nil {
					return err
				}
				if err := inv.AppendOutput(ctx, "hi"); err != nil {
					return err
				}
				if _, err := inv.Reply(ctx, "hello there"); err != nil {
					return err
				}
				return inv.Finish(ctx, Succeeded, nil)
			})
		}()
		fs.waitAck(t, 2)
		cancel()
		<-done
		if got.RunID != "r1" || got.ThreadID != "t1" || got.Message.Content != "@echo hello there" {
			t.Fatalf("invocation %+v", got)
		}
		calls, _, tokens := fs.snapshot()
		want := []string{"POST /api/v1/runs/r1/start", "PATCH /api/v1/runs/r1 1", "PATCH /api/v1/runs/r1 2",
			"POST /api/v1/threads/t1/messages", "POST /api/v1/runs/r1/finish succeeded"}
		if !slices.Equal(calls, want) {
			t.Fatalf("calls\n%q\nwant\n%q", calls, want)
		}
		for _, tok := range tokens {
			if tok != "tok1" {
				t.Fatalf("Invocation-Token %q, want the delivered tok1", tok)
			}
		}
		if fs.clientID != "run-r1" {
			t.Fatalf("client_msg_id %q, want run-r1", fs.clientID)
		}
	})

	t.Run("does not ack an invocation whose handler failed, and ends Run with its error", func(t *testing.T) {
		fs := newFakeRunServer(t, map[string]any{"seq": 1, "type": "message.created", "data": map[string]any{}},
			invocation(2, time.Now().Add(time.Hour)))
		boom := errors.New("boom")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := fs.agent().Run(ctx, func(ctx context.Context, inv *Invocation) error { return boom })
		if !errors.Is(err, boom) {
			t.Fatalf("Run = %v, want boom", err)
		}
		time.Sleep(100 * time.Millisecond)
		if _, acks, _ := fs.snapshot(); slices.Contains(acks, 2) {
			t.Fatalf("acks %v include the failed invocation", acks)
		}
	})

	t.Run("refuses a stale run version without retrying", func(t *testing.T) {
		fs := newFakeRunServer(t, invocation(1, time.Now().Add(time.Hour)))
		fs.refuse["PATCH /api/v1/runs/r1 1"] = [2]any{409, "run_version_conflict"}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := fs.agent().Run(ctx, func(ctx context.Context, inv *Invocation) error {
			if _, err := inv.Start(ctx); err != nil {
				return err
			}
			_, err := inv.Update(ctx, RunPatch{OutputAppend: "x"})
			if !IsCode(err, "run_version_conflict") || inv.Version() != 0 {
				t.Errorf("Update = %v, version %d", err, inv.Version())
			}
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v", err)
		}
		calls, _, _ := fs.snapshot()
		if n := len(slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return c != "PATCH /api/v1/runs/r1 1" })); n != 1 {
			t.Fatalf("the patch was sent again: %q", calls)
		}
	})

	t.Run("renews a token about to expire, and once more after the server says it expired", func(t *testing.T) {
		fs := newFakeRunServer(t, invocation(1, time.Now().Add(5*time.Second)))
		fs.refuse["POST /api/v1/runs/r1/finish succeeded"] = [2]any{401, "invocation_token_expired"}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- fs.agent().Run(ctx, func(ctx context.Context, inv *Invocation) error {
				if _, err := inv.Start(ctx); err != nil {
					return err
				}
				return inv.Finish(ctx, Succeeded, nil)
			})
		}()
		fs.waitAck(t, 1)
		cancel()
		<-done
		calls, _, tokens := fs.snapshot()
		if fs.renewed != 2 || calls[0] != "POST /api/v1/runs/r1/token" || tokens[0] != "renewed" {
			t.Fatalf("renewed %d times; calls %q, tokens %q", fs.renewed, calls, tokens)
		}
		if calls[len(calls)-1] != "POST /api/v1/runs/r1/finish succeeded" {
			t.Fatalf("the finish was not sent again after the renewal: %q", calls)
		}
	})

	t.Run("cancels the handler's context on run.cancel_requested and confirms the cancel", func(t *testing.T) {
		fs := newFakeRunServer(t, invocation(1, time.Now().Add(time.Hour)),
			map[string]any{"seq": 2, "type": "run.cancel_requested", "data": map[string]any{"run_id": "r1"}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		var cause error
		go func() {
			done <- fs.agent().Run(ctx, func(hctx context.Context, inv *Invocation) error {
				// The request may come before the handler starts: its ctx is then cancelled
				// from the outset.
				select {
				case <-hctx.Done():
					cause = context.Cause(hctx)
					return hctx.Err()
				case <-time.After(5 * time.Second):
					return errors.New("the handler's context was not cancelled")
				}
			})
		}()
		fs.waitAck(t, 2)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v", err)
		}
		if !errors.Is(cause, ErrCancelRequested) {
			t.Fatalf("cause %v", cause)
		}
		if calls, _, _ := fs.snapshot(); calls[len(calls)-1] != "POST /api/v1/runs/r1/finish cancelled" {
			t.Fatalf("calls %q, want the cancel confirmed", calls)
		}
	})
}
