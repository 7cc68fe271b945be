package client

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func interactionEvent(seq int64) map[string]any {
	return map[string]any{"seq": seq, "type": "interaction.created", "data": map[string]any{
		"interaction_id": "i1", "message_id": "m1", "thread_id": "t1", "channel_id": "c1", "component_id": "approve",
		"values": []string{"yes"}, "user_id": "u1", "invocation_token": "itok", "expires_at": time.Now().Add(time.Hour),
	}}
}

func TestOnInteraction(t *testing.T) {
	for _, transport := range []string{"gateway", "poll"} {
		t.Run(transport, func(t *testing.T) {
			t.Run("hands interaction.created to its handler, whose reply carries the delivered token, and acks it after", func(t *testing.T) {
				fs := newFakeRunServer(t, interactionEvent(1))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				a := fs.agent()
				got := make(chan *Interaction, 1)
				a.OnInteraction(func(ctx context.Context, in *Interaction) error {
					if _, err := in.Reply(ctx, "deploying"); err != nil {
						return err
					}
					got <- in
					return nil
				})
				done := make(chan error, 1)
				go func() { done <- run(ctx, a, transport, func(context.Context, *Invocation) error { return nil }) }()
				fs.waitAck(t, 1)
				cancel()
				<-done
				in := <-got
				if in.ID != "i1" || in.ComponentID != "approve" || !slices.Equal(in.Values, []string{"yes"}) || in.ThreadID != "t1" || in.Seq != 1 {
					t.Fatalf("interaction %+v", in)
				}
				calls, _, tokens := fs.snapshot()
				if !slices.Equal(calls, []string{"POST /api/v1/threads/t1/messages"}) || !slices.Equal(tokens, []string{"itok"}) {
					t.Fatalf("calls %q with tokens %q", calls, tokens)
				}
				if fs.clientID != "interaction-i1" {
					t.Fatalf("client_msg_id %q, want interaction-i1", fs.clientID)
				}
			})

			t.Run("does not ack an interaction whose handler failed, and ends Run with its error", func(t *testing.T) {
				fs := newFakeRunServer(t, interactionEvent(1))
				boom := errors.New("boom")
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				a := fs.agent()
				a.OnInteraction(func(context.Context, *Interaction) error { return boom })
				if err := run(ctx, a, transport, func(context.Context, *Invocation) error { return nil }); !errors.Is(err, boom) {
					t.Fatalf("Run = %v, want boom", err)
				}
				time.Sleep(100 * time.Millisecond)
				if _, acks, _ := fs.snapshot(); slices.Contains(acks, 1) {
					t.Fatalf("acks %v include the failed interaction", acks)
				}
			})

			t.Run("without a handler an interaction passes, acknowledged", func(t *testing.T) {
				fs := newFakeRunServer(t, interactionEvent(1))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					done <- run(ctx, fs.agent(), transport, func(context.Context, *Invocation) error { return nil })
				}()
				fs.waitAck(t, 1)
				cancel()
				<-done
				if calls, _, _ := fs.snapshot(); len(calls) != 0 {
					t.Fatalf("calls %q", calls)
				}
			})
		})
	}
}

func TestDisable(t *testing.T) {
	rows := []ActionRow{Row(Button("a", "A", Primary, ""), Button("b", "B", "", "")), Row(Select("s", "", 1, 1, SelectOption{"X", "x"}))}
	one := Disable(rows, "b")
	if one[0].Components[0].Disabled || !one[0].Components[1].Disabled || one[1].Components[0].Disabled || rows[0].Components[1].Disabled {
		t.Fatalf("Disable(b): %+v (rows %+v)", one, rows)
	}
	all := Disable(rows)
	if !all[0].Components[0].Disabled || !all[1].Components[0].Disabled {
		t.Fatalf("Disable(): %+v", all)
	}
}
