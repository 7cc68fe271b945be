package client

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// invocationOf is an agent.invocation of run with its content, so that no message is read.
func invocationOf(seq int64, run string) map[string]any {
	return map[string]any{"seq": seq, "type": "agent.invocation", "data": map[string]any{
		"run_id": run, "thread_id": "t1", "message_id": "m-" + run, "content": "@echo " + run,
		"invocation_token": "tok-" + run, "expires_at": time.Now().Add(time.Hour),
	}}
}

func messageEvent(seq int64) map[string]any {
	return map[string]any{"seq": seq, "type": "message.created", "data": map[string]any{}}
}

func (fs *fakeRunServer) pollCursors() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Clone(fs.polls)
}

// within receives from ch or fails the test after 5 s.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not happen within 5s", what)
		panic("unreachable")
	}
}

// startAgent runs a on transport in the background; the cleanup stops it and checks that Run
// ended with ctx's error.
func startAgent(t *testing.T, a *Agent, transport string, h func(context.Context, *Invocation) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, a, transport, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Run did not stop within 5s of its context's end")
		}
	})
}

func TestAgentConcurrency(t *testing.T) {
	for _, transport := range []string{"gateway", "poll"} {
		t.Run("over the "+transport, func(t *testing.T) {
			t.Run("acks no further than a slow invocation while a later one is done", func(t *testing.T) {
				fs := newFakeRunServer(t, invocationOf(1, "r1"), invocationOf(2, "r2"), messageEvent(3))
				release, fastDone := make(chan struct{}), make(chan struct{})
				startAgent(t, fs.agent(), transport, func(ctx context.Context, inv *Invocation) error {
					if _, err := inv.Start(ctx); err != nil {
						return err
					}
					if inv.RunID == "r1" {
						select {
						case <-release:
						case <-ctx.Done():
							return ctx.Err()
						}
					}
					err := inv.Finish(ctx, Succeeded, nil)
					if inv.RunID == "r2" {
						close(fastDone)
					}
					return err
				})
				within(t, fastDone, "the second invocation's handler, while the first one's waits,")
				time.Sleep(ackInterval + 300*time.Millisecond)
				if _, acks, _ := fs.snapshot(); slices.ContainsFunc(acks, func(s int64) bool { return s >= 1 }) {
					t.Fatalf("acks %v pass the first invocation, whose handler has not returned", acks)
				}
				close(release)
				fs.waitAck(t, 3)
			})

			t.Run("runs handlers at once up to MaxConcurrent and not beyond", func(t *testing.T) {
				fs := newFakeRunServer(t, invocationOf(1, "r1"), invocationOf(2, "r2"), invocationOf(3, "r3"),
					invocationOf(4, "r4"), invocationOf(5, "r5"))
				a := fs.agent()
				a.MaxConcurrent = 2
				started, release := make(chan string, 5), make(chan struct{})
				var now, peak atomic.Int32
				startAgent(t, a, transport, func(ctx context.Context, inv *Invocation) error {
					n := now.Add(1)
					defer now.Add(-1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					started <- inv.RunID
					select {
					case <-release:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
				first := []string{within(t, started, "a first handler"), within(t, started, "a second handler")}
				slices.Sort(first)
				if !slices.Equal(first, []string{"r1", "r2"}) {
					t.Fatalf("started %q first, want r1 and r2", first)
				}
				select {
				case r := <-started:
					t.Fatalf("%s started while MaxConcurrent 2 handlers ran", r)
				case <-time.After(300 * time.Millisecond):
				}
				release <- struct{}{}
				if r := within(t, started, "a third handler once one returned"); r != "r3" {
					t.Fatalf("started %s next, want r3, the oldest waiting", r)
				}
				close(release)
				fs.waitAck(t, 5)
				if p := peak.Load(); p != 2 {
					t.Fatalf("at most %d handlers ran at once, want 2", p)
				}
			})

			t.Run("hands the invocations one at a time in seq order with MaxConcurrent 1", func(t *testing.T) {
				fs := newFakeRunServer(t, invocationOf(1, "r1"), messageEvent(2), invocationOf(3, "r3"), invocationOf(4, "r4"))
				a := fs.agent()
				a.MaxConcurrent = 1
				var (
					mu    sync.Mutex
					order []string
					now   atomic.Int32
				)
				startAgent(t, a, transport, func(ctx context.Context, inv *Invocation) error {
					if now.Add(1) > 1 {
						t.Errorf("%s ran while another handler did", inv.RunID)
					}
					defer now.Add(-1)
					time.Sleep(30 * time.Millisecond)
					mu.Lock()
					order = append(order, inv.RunID)
					mu.Unlock()
					return nil
				})
				fs.waitAck(t, 4)
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(order, []string{"r1", "r3", "r4"}) {
					t.Fatalf("handled %q, want r1, r3, r4", order)
				}
			})

			t.Run("cancels one running handler on run.cancel_requested and leaves the others", func(t *testing.T) {
				fs := newFakeRunServer(t, invocationOf(1, "r1"), invocationOf(2, "r2"))
				release := make(chan struct{})
				running, causes := make(chan string, 2), make(chan error, 2)
				startAgent(t, fs.agent(), transport, func(ctx context.Context, inv *Invocation) error {
					if _, err := inv.Start(ctx); err != nil {
						return err
					}
					running <- inv.RunID
					select {
					case <-release:
						return inv.Finish(ctx, Succeeded, nil)
					case <-ctx.Done():
						causes <- context.Cause(ctx)
						return ctx.Err()
					}
				})
				within(t, running, "a first handler")
				within(t, running, "a second handler")
				fs.push(map[string]any{"seq": 3, "type": "run.cancel_requested", "data": map[string]any{"run_id": "r2"}})
				if cause := within(t, causes, "the cancel of r2's handler"); !errors.Is(cause, ErrCancelRequested) {
					t.Fatalf("cause %v, want ErrCancelRequested", cause)
				}
				select {
				case c := <-causes:
					t.Fatalf("another handler was cancelled too: %v", c)
				case <-time.After(100 * time.Millisecond):
				}
				close(release)
				fs.waitAck(t, 3)
				calls, _, _ := fs.snapshot()
				if !slices.Contains(calls, "POST /api/v1/runs/r2/finish cancelled") || !slices.Contains(calls, "POST /api/v1/runs/r1/finish succeeded") {
					t.Fatalf("calls %q, want r2 cancelled and r1 succeeded", calls)
				}
			})

			t.Run("ends Run with a handler's error, cancels the others and acks neither", func(t *testing.T) {
				fs := newFakeRunServer(t, invocationOf(1, "r1"), invocationOf(2, "r2"))
				boom := errors.New("boom")
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				var slowCause atomic.Value
				err := run(ctx, fs.agent(), transport, func(ctx context.Context, inv *Invocation) error {
					if inv.RunID == "r2" {
						return boom
					}
					<-ctx.Done()
					slowCause.Store(context.Cause(ctx))
					return ctx.Err()
				})
				if !errors.Is(err, boom) {
					t.Fatalf("Run = %v, want boom", err)
				}
				if c, _ := slowCause.Load().(error); !errors.Is(c, boom) {
					t.Fatalf("the other handler's context ended with %v, want boom", c)
				}
				if _, acks, _ := fs.snapshot(); slices.ContainsFunc(acks, func(s int64) bool { return s >= 1 }) {
					t.Fatalf("acks %v pass unfinished invocations", acks)
				}
			})
		})
	}
}

func TestAgentLongPoll(t *testing.T) {
	t.Run("takes no further invocation while MaxConcurrent handlers run, yet a cancel reaches them", func(t *testing.T) {
		fs := newFakeRunServer(t, invocationOf(1, "r1"))
		a := fs.agent()
		a.MaxConcurrent = 1
		started, causes, release := make(chan string, 2), make(chan error, 1), make(chan struct{})
		startAgent(t, a, "poll", func(ctx context.Context, inv *Invocation) error {
			started <- inv.RunID
			if inv.RunID == "r2" {
				<-release
				return nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		})
		if r := within(t, started, "the first handler"); r != "r1" {
			t.Fatalf("started %s, want r1", r)
		}
		fs.push(invocationOf(2, "r2"))
		select {
		case r := <-started:
			t.Fatalf("%s started while the only handler slot was busy", r)
		case <-time.After(300 * time.Millisecond):
		}
		fs.push(map[string]any{"seq": 3, "type": "run.cancel_requested", "data": map[string]any{"run_id": "r1"}})
		if cause := within(t, causes, "the cancel of the busy handler"); !errors.Is(cause, ErrCancelRequested) {
			t.Fatalf("cause %v, want ErrCancelRequested", cause)
		}
		if r := within(t, started, "the second handler once the first returned"); r != "r2" {
			t.Fatalf("started %s, want r2", r)
		}
		time.Sleep(ackInterval + 200*time.Millisecond)
		if _, acks, _ := fs.snapshot(); slices.ContainsFunc(acks, func(s int64) bool { return s >= 2 }) {
			t.Fatalf("acks %v pass the second invocation, whose handler runs", acks)
		}
		close(release)
		fs.waitAck(t, 3)
	})

	t.Run("starts at WithCursor, polls again after a 503 and stops on a 401", func(t *testing.T) {
		fs := newFakeRunServer(t)
		fs.pollRefuse = []int{503, 401}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := fs.agent(WithCursor(7)).RunLongPoll(ctx, func(context.Context, *Invocation) error { return nil })
		if !errors.Is(err, ErrAuthenticationFailed) || !IsCode(err, "scripted") {
			t.Fatalf("RunLongPoll = %v, want ErrAuthenticationFailed and the server's answer", err)
		}
		if polls := fs.pollCursors(); !slices.Equal(polls, []string{"7", "7"}) {
			t.Fatalf("polls with cursors %q, want 7 twice", polls)
		}
	})

	t.Run("stops on a 410 resync_required with ErrResyncRequired", func(t *testing.T) {
		fs := newFakeRunServer(t)
		fs.pollRefuse = []int{410}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := fs.agent(WithCursor(7)).RunLongPoll(ctx, func(context.Context, *Invocation) error { return nil })
		if !errors.Is(err, ErrResyncRequired) || !IsCode(err, "resync_required") {
			t.Fatalf("RunLongPoll = %v, want ErrResyncRequired and the server's answer", err)
		}
	})

	t.Run("continues after what it acknowledged on its next run", func(t *testing.T) {
		fs := newFakeRunServer(t, invocationOf(1, "r1"), messageEvent(2))
		a := fs.agent()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.RunLongPoll(ctx, func(context.Context, *Invocation) error { return nil }) }()
		fs.waitAck(t, 2)
		cancel()
		if err := within(t, done, "the end of RunLongPoll"); !errors.Is(err, context.Canceled) {
			t.Fatalf("RunLongPoll = %v", err)
		}
		fs.mu.Lock()
		fs.polls = nil
		fs.mu.Unlock()
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		go func() { done <- a.RunLongPoll(ctx, func(context.Context, *Invocation) error { return nil }) }()
		time.Sleep(50 * time.Millisecond)
		cancel()
		within(t, done, "the end of the second RunLongPoll")
		if polls := fs.pollCursors(); len(polls) == 0 || polls[0] != "2" {
			t.Fatalf("the second run polled with cursors %q, want 2 first", polls)
		}
	})
}
