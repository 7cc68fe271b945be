package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

// TestAgentConsumerOverREST polls an agent's events without a WebSocket: a long poll that
// returns when a message comes, an ack that moves the durable cursor, and a poll without a
// cursor that starts after it.
func TestAgentConsumerOverREST(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		a, ac := w.in.mustCreateAgent(t, "poller")
		w.in.owner.mustGrant(t, w.shared.ID, a.ID, "view")
		type page struct {
			Events     []event `json:"events"`
			NextCursor int64   `json:"next_cursor"`
			HeadSeq    int64   `json:"head_seq"`
		}
		poll := func(t *testing.T, query string) page {
			t.Helper()
			var p page
			ac.do(t, http.MethodGet, api("agents", "me", "events")+query, nil).want(t, http.StatusOK).decode(t, &p)
			return p
		}
		// The cursor starts at the agent's creation: the first poll has its grant, given since.
		first := poll(t, "")
		if len(first.Events) != 1 || first.Events[0].Type != "grant.changed" || first.NextCursor != first.HeadSeq {
			t.Fatalf("a new consumer's first poll: %+v, want its grant, up to the head", first)
		}
		ac.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": first.NextCursor}).want(t, http.StatusNoContent)

		type result struct {
			p   page
			err error
			in  time.Duration
		}
		waiting := make(chan result, 1)
		go func() {
			start := time.Now()
			var p page
			r, err := ac.try(t, http.MethodGet, api("agents", "me", "events")+"?wait=20s", nil)
			if err == nil {
				if r.status != http.StatusOK {
					err = fmt.Errorf("the long poll answered %d: %s", r.status, r.raw)
				} else {
					err = json.Unmarshal(r.raw, &p)
				}
			}
			waiting <- result{p, err, time.Since(start)}
		}()
		time.Sleep(300 * time.Millisecond)
		m := w.alice.mustPost(t, w.sharedTh.Thread.ID, "for the poller")
		var got result
		select {
		case got = <-waiting:
		case <-time.After(15 * time.Second):
			t.Fatal("the long poll did not return when a message came")
		}
		if got.err != nil {
			t.Fatal(got.err)
		}
		if len(got.p.Events) != 1 || got.p.Events[0].Data["id"] != m.ID || got.in > 10*time.Second {
			t.Fatalf("the long poll answered %+v after %s, want the message at once", got.p, got.in)
		}

		again := poll(t, "")
		if len(again.Events) != 1 || again.Events[0].Seq != got.p.Events[0].Seq {
			t.Fatalf("before the ack a poll without cursor gave %+v, want the message again", again)
		}
		ac.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": got.p.NextCursor}).want(t, http.StatusNoContent)
		if after := poll(t, ""); len(after.Events) != 0 {
			t.Fatalf("after the ack a poll gave %+v, want nothing", after)
		}
		if code := ac.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": got.p.HeadSeq + 1000}).want(t, http.StatusBadRequest).code(); code != "validation_failed" {
			t.Fatalf("an ack beyond the head answered %s", code)
		}
		if code := w.alice.do(t, http.MethodGet, api("agents", "me", "events"), nil).want(t, http.StatusForbidden).code(); code != "forbidden" {
			t.Fatalf("a person's poll answered %s", code)
		}
		if code := ac.do(t, http.MethodGet, api("agents", "me", "events")+"?wait=2m", nil).want(t, http.StatusBadRequest).code(); code != "validation_failed" {
			t.Fatalf("a wait of 2 minutes answered %s", code)
		}
	})
}
