package tests

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// runAgent runs a on the REST long poll until the test ends, and checks that it stopped with
// its context's error.
func runAgent(t *testing.T, a *botclient.Agent, handle func(context.Context, *botclient.Invocation) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.RunLongPoll(ctx, handle) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Agent.RunLongPoll = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Agent.RunLongPoll did not stop within 10s of its context's end")
		}
	})
}

// mustPostingAgent creates the agent handle with post on the shared channel and moves its
// consumer's cursor to the head of the log, which it returns: what comes after waits for the
// agent, whenever it connects.
func (w *world) mustPostingAgent(tb testing.TB, handle string) (agent, *client, int64) {
	tb.Helper()
	a, ac := w.in.mustCreateAgent(tb, handle)
	w.in.owner.mustGrant(tb, w.shared.ID, a.ID, "post")
	start := w.in.owner.mustHead(tb)
	ac.do(tb, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": start}).want(tb, http.StatusNoContent)
	return a, ac, start
}

// pong is an agent's handler that starts the run, does during (when not nil), appends "pong"
// to the run's output, replies "pong" in its thread (an answer that must carry the run's id)
// and finishes the run as succeeded.
func pong(t *testing.T, during func(context.Context, *botclient.Invocation) error) func(context.Context, *botclient.Invocation) error {
	return func(ctx context.Context, inv *botclient.Invocation) error {
		if _, err := inv.Start(ctx); err != nil {
			return err
		}
		if during != nil {
			if err := during(ctx, inv); err != nil {
				return err
			}
		}
		if err := inv.AppendOutput(ctx, "pong"); err != nil {
			return err
		}
		m, err := inv.Reply(ctx, "pong")
		if err != nil {
			return err
		}
		if m.RunID != inv.RunID {
			t.Errorf("the answer's run_id %q, want %q", m.RunID, inv.RunID)
		}
		return inv.Finish(ctx, botclient.Succeeded, nil)
	}
}

// mustPong waits for the answer to the message mid in thread th, posted after start, and checks
// that it is pong's and that its run succeeded with the output "pong"; it returns the run.
func (w *world) mustPong(t *testing.T, th string, start int64, mid string) runView {
	t.Helper()
	answer := answerOf(t, w.alice, th, start)
	if answer["content"] != "pong" {
		t.Fatalf("answer %v", answer)
	}
	r := runOf(t, w.alice, answer["run_id"].(string))
	if r.Status != "succeeded" || r.TriggerMessageID == nil || *r.TriggerMessageID != mid || r.Document.Output != "pong" {
		t.Fatalf("run %+v", r)
	}
	return r
}

// ackedSeq connects to the gateway as the agent of token and answers the acked_seq of its
// ready: the seq the agent's consumer acknowledged last.
func ackedSeq(t *testing.T, baseURL, token string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var acked *int64
	c := botclient.New(baseURL, token, botclient.WithReadyHandler(func(r botclient.Ready) {
		acked = r.AckedSeq
		cancel()
	}))
	if err := c.Run(ctx, func(botclient.Event) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("the agent's gateway connection: %v", err)
	}
	if acked == nil {
		t.Fatalf("the agent's ready has no acked_seq")
	}
	return *acked
}

// TestAgentClientLongPoll is client.Agent for an agent that cannot hold a WebSocket: over the
// REST consumer (long poll and ack) it answers a mention, and runs two invocations at once, the
// first held until the second is done, and acknowledges both.
func TestAgentClientLongPoll(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")

		t.Run("an agent on the long poll answers a mention", func(t *testing.T) {
			a, _, start := w.mustPostingAgent(t, "poller")
			th := w.in.owner.mustCreateThread(t, w.shared.ID, "Poll", "for the poller").Thread.ID

			runAgent(t, botclient.NewAgent(w.in.srv.public, a.Token), pong(t, nil))

			mid, _ := postedMessage(t, w.alice, th, "@poller ping")
			w.mustPong(t, th, start, mid)
		})

		t.Run("runs two invocations at once, the first held until the second is done", func(t *testing.T) {
			a, _, start := w.mustPostingAgent(t, "twin")
			thFirst := w.in.owner.mustCreateThread(t, w.shared.ID, "First", "for the twin").Thread.ID
			thSecond := w.in.owner.mustCreateThread(t, w.shared.ID, "Second", "for the twin").Thread.ID

			secondDone := make(chan struct{})
			var lastSeq atomic.Int64 // the seq of the later invocation
			agent := botclient.NewAgent(w.in.srv.public, a.Token)
			agent.MaxConcurrent = 2
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- agent.RunLongPoll(ctx, func(ctx context.Context, inv *botclient.Invocation) error {
					if _, err := inv.Start(ctx); err != nil {
						return err
					}
					first := strings.Contains(inv.Message.Content, "first")
					if first {
						select {
						case <-secondDone:
						case <-time.After(15 * time.Second):
							return errors.New("the second invocation was not handled while the first one waited")
						case <-ctx.Done():
							return ctx.Err()
						}
					}
					if _, err := inv.Reply(ctx, "done: "+inv.Message.Content); err != nil {
						return err
					}
					if err := inv.Finish(ctx, botclient.Succeeded, nil); err != nil {
						return err
					}
					if !first {
						close(secondDone)
					}
					for s := lastSeq.Load(); inv.Seq > s && !lastSeq.CompareAndSwap(s, inv.Seq); s = lastSeq.Load() {
					}
					return nil
				})
			}()
			stopped := false
			stop := func() error {
				if stopped {
					return nil
				}
				stopped = true
				cancel()
				select {
				case err := <-done:
					return err
				case <-time.After(10 * time.Second):
					return errors.New("Agent.RunLongPoll did not stop within 10s")
				}
			}
			t.Cleanup(func() { _ = stop() })

			postedMessage(t, w.alice, thFirst, "@twin first")
			postedMessage(t, w.alice, thSecond, "@twin second")
			for _, th := range []string{thFirst, thSecond} {
				answer := answerOf(t, w.alice, th, start)
				if r := runOf(t, w.alice, answer["run_id"].(string)); r.Status != "succeeded" {
					t.Fatalf("run %+v", r)
				}
			}
			if err := stop(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Agent.RunLongPoll = %v", err)
			}
			// Both were acknowledged: the agent's durable cursor, which its next gateway
			// connection is told, is past both invocations.
			if got := ackedSeq(t, w.in.srv.public, a.Token); got < lastSeq.Load() {
				t.Fatalf("the agent's cursor is %d, before its invocation at %d", got, lastSeq.Load())
			}
		})
	})
}
