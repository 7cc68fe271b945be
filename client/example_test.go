package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"os"
	"os/signal"
	"syscall"

	"bothy.dev/bothy/client"
)

// A bot that answers "ping" with "pong" in every thread it may read (the package's example).
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bot := client.New("https://chat.example.com", os.Getenv("BOTHY_TOKEN"))
	me, err := bot.Me(ctx)
	if err != nil {
		log.Fatal(err)
	}
	err = bot.Run(ctx, func(ev client.Event) error {
		if ev.Type != "message.created" {
			return nil
		}
		var m client.Message
		if err := json.Unmarshal(ev.Data, &m); err != nil || m.AuthorID == me.ID || m.Content != "ping" {
			return err
		}
		// The message id as client_msg_id: a retry after a crash answers the same reply.
		_, err = bot.PostMessage(ctx, m.ThreadID, "pong", "pong-"+m.ID)
		return err
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// An agent behind a proxy that cuts WebSockets: it long-polls instead, and answers up to four
// mentions at once.
func ExampleAgent_RunLongPoll() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	agent := client.NewAgent("https://chat.example.com", os.Getenv("AGENT_TOKEN"))
	agent.MaxConcurrent = 4
	err := agent.RunLongPoll(ctx, func(ctx context.Context, inv *client.Invocation) error {
		// After a crash the invocation comes again, and Start answers already_started.
		if _, err := inv.Start(ctx); err != nil && !client.IsCode(err, "already_started") {
			return err
		}
		if _, err := inv.Reply(ctx, "seen: "+inv.Message.Content); err != nil {
			return err
		}
		return inv.Finish(ctx, client.Succeeded, nil)
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}
