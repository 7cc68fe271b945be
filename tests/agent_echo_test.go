package tests

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// answerOf waits until a reader of thread sees, after seq start, an agent's answer linked to
// a run (message.created with run_id) and that run's run.state_changed to succeeded, and
// returns the answer's data.
func answerOf(tb testing.TB, reader *client, thread string, start int64) map[string]any {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		evs, _ := reader.mustAllEvents(tb, start)
		var answer map[string]any
		succeeded := map[string]bool{}
		for _, e := range evs {
			switch {
			case e.Type == "message.created" && e.ThreadID == thread && e.Data["run_id"] != nil:
				answer = e.Data
			case e.Type == "run.state_changed" && e.Data["status"] == "succeeded":
				succeeded[e.Data["id"].(string)] = true
			}
		}
		if answer != nil && succeeded[answer["run_id"].(string)] {
			return answer
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no answer with its run succeeded in thread %s within 15s; events %v", thread, types(evs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lockedBuffer is an io.Writer for a subprocess's stderr that the test may read meanwhile.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAgentAnswers is bothy's promise to a bot developer, end to end: an agent written with
// client.Agent, and the reference agent `bothy agent echo` run as its own process, each answer
// a mention; a person reading the thread sees the run succeed and the answer linked to it.
func TestAgentAnswers(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")

		t.Run("an agent written with client.Agent answers a mention", func(t *testing.T) {
			a, _, start := w.mustPostingAgent(t, "pinger")
			th := w.in.owner.mustCreateThread(t, w.shared.ID, "Ping", "for the pinger").Thread.ID

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			var (
				mu      sync.Mutex
				handled []string
			)
			go func() {
				agent := botclient.NewAgent(w.in.srv.public, a.Token)
				done <- agent.Run(ctx, pong(t, func(ctx context.Context, inv *botclient.Invocation) error {
					mu.Lock()
					handled = append(handled, inv.Message.Content)
					mu.Unlock()
					return inv.SetStatus(ctx, "thinking")
				}))
			}()
			t.Cleanup(func() {
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Errorf("Agent.Run = %v", err)
				}
			})

			mid, _ := postedMessage(t, w.alice, th, "@pinger ping")
			if r := w.mustPong(t, th, start, mid); r.Document.Version != 2 {
				t.Fatalf("run %+v, want version 2", r)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(handled) != 1 || handled[0] != "@pinger ping" {
				t.Fatalf("the handler was handed %q", handled)
			}
		})

		t.Run("bothy agent echo answers a mention with its text and stops on SIGINT", func(t *testing.T) {
			a, _, start := w.mustPostingAgent(t, "echo")
			th := w.in.owner.mustCreateThread(t, w.shared.ID, "Echo", "for the echo agent").Thread.ID
			tokenFile := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(tokenFile, []byte(a.Token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}

			// Mentioned before it runs: it gets the invocation when it connects.
			postedMessage(t, w.alice, th, "@echo hello, world")
			var stderr lockedBuffer
			cmd := exec.Command(binPath, "agent", "echo", "--url", w.in.srv.public, "--token-file", tokenFile)
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			waited := false // the test received from exited
			t.Cleanup(func() {
				if !waited {
					_ = cmd.Process.Kill()
					<-exited
				}
			})

			answer := answerOf(t, w.alice, th, start)
			if answer["content"] != "hello, world" {
				t.Fatalf("answer %v; the agent logged:\n%s", answer, stderr.String())
			}
			r := runOf(t, w.alice, answer["run_id"].(string))
			if r.Status != "succeeded" || r.Document.Output != "hello, world" || r.Document.Version != 3 {
				t.Fatalf("run %+v", r)
			}

			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				waited = true
				if err != nil {
					t.Fatalf("bothy agent echo exited with %v after SIGINT; it logged:\n%s", err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("bothy agent echo did not stop within 10s of SIGINT; it logged:\n%s", stderr.String())
			}
			if !strings.Contains(stderr.String(), "echo: connected") {
				t.Errorf("the agent did not log its connection:\n%s", stderr.String())
			}
		})
	})
}
