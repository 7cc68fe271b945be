package tests

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// TestAgentConsumer runs an agent with the Go client against the real server: what its handler
// finished is acknowledged and does not come again; an event its handler failed on (a crash)
// comes again to the next connection; a newer connection takes the consumer over (4015).
func TestAgentConsumer(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		a, _ := w.in.mustCreateAgent(t, "worker")
		w.in.owner.mustGrant(t, w.shared.ID, a.ID, "view")
		start := w.in.owner.mustHead(t)
		content := func(ev botclient.Event) string {
			var m botclient.Message
			_ = json.Unmarshal(ev.Data, &m)
			return m.Content
		}

		// The first run handles "one", then crashes on "crash" (its handler fails).
		handled := make(chan string, 16)
		first := botclient.New(w.in.srv.public, a.Token, append(botOptions, botclient.WithCursor(start))...)
		done := make(chan error, 1)
		go func() {
			done <- first.Run(context.Background(), func(ev botclient.Event) error {
				if ev.Type != "message.created" {
					return nil
				}
				if c := content(ev); c == "crash" {
					return errors.New("the agent crashed")
				} else {
					handled <- c
				}
				return nil
			})
		}()
		waitReady := time.Now().Add(10 * time.Second)
		for first.Cursor() < start && time.Now().Before(waitReady) {
			time.Sleep(10 * time.Millisecond)
		}
		w.alice.mustPost(t, w.sharedTh.Thread.ID, "one")
		select {
		case got := <-handled:
			if got != "one" {
				t.Fatalf("handled %q, want one", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the agent was not handed its first message")
		}
		time.Sleep(1500 * time.Millisecond) // more than the client's ack interval
		w.alice.mustPost(t, w.sharedTh.Thread.ID, "crash")
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "the agent crashed") {
				t.Fatalf("the first run ended with %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the first run did not end on its handler's error")
		}

		// The next run starts after what was acknowledged: "crash" comes again, "one" does not.
		second := mustStartBot(t, "second", w.in.srv.public, a.Token)
		second.waitFor(t, "the message it crashed on", 10*time.Second, func() bool {
			for _, e := range second.events {
				if e.Type == "message.created" && content(e) == "crash" {
					return true
				}
			}
			return false
		})
		for _, e := range second.handed() {
			if e.Type == "message.created" && content(e) == "one" {
				t.Fatalf("an acknowledged message came again at seq %d", e.Seq)
			}
		}

		// A newer connection of the agent takes its consumer over.
		mustStartBot(t, "third", w.in.srv.public, a.Token)
		select {
		case <-second.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the older consumer still runs 10 s after a newer one connected")
		}
		if err := second.stop(t); !errors.Is(err, botclient.ErrReplaced) {
			t.Fatalf("the older consumer ended with %v, want ErrReplaced", err)
		}
	})
}
