package appliance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"bothy.dev/bothy/client"
)

const agentHelp = `bothy agent echo --url URL --token-file FILE [--rest]

Runs the reference agent "echo": it connects to the instance at URL as the agent whose API
token is in FILE, and answers every invocation (an @mention by someone allowed to invoke it)
with the text it was sent, without the mention. Each run is started, shows three patches (a
status line, a step, the output in chunks) and finishes succeeded. It reconnects by itself,
logs to stderr and stops on SIGINT or SIGTERM. It follows the realtime gateway (a WebSocket);
with --rest it long-polls the REST consumer instead, for a network that does not let a
WebSocket through.

Exit codes: 0 when stopped by a signal; 1 when the server refuses the token or another
connection of the agent takes over (it waits for a server that cannot be reached yet);
2 for a wrong invocation (no URL, unreadable or empty token file).`

func (c *cli) agent(ctx context.Context, args []string) int {
	if len(args) == 0 || (args[0] != "echo" && !strings.HasPrefix(args[0], "-")) {
		if len(args) > 0 {
			fmt.Fprintf(c.stderr, "bothy agent: unknown agent %q\n", args[0])
		}
		fmt.Fprintf(c.stderr, "Usage: %s\n", strings.SplitN(agentHelp, "\n", 2)[0])
		return ExitUsage
	}
	if args[0] == "echo" {
		args = args[1:]
	}
	f := c.newFlags("agent echo", agentHelp)
	rawURL := f.String("url", "", "base `URL` of the instance, such as https://chat.example.com (required)")
	tokenFile := f.String("token-file", "", "`file` holding the agent's API token (required)")
	rest := f.Bool("rest", false, "long-poll the REST consumer instead of holding a WebSocket")
	if code, done := f.parse(args); done {
		return code
	}
	if *rawURL == "" {
		return f.usageError("--url is required")
	}
	if !strings.HasPrefix(*rawURL, "http://") && !strings.HasPrefix(*rawURL, "https://") {
		return f.usageError("--url must be an http:// or https:// URL")
	}
	if *tokenFile == "" {
		return f.usageError("--token-file is required")
	}
	raw, err := os.ReadFile(*tokenFile)
	if err != nil {
		return f.usageError("--token-file: %v", err)
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return f.usageError("--token-file: %s is empty", *tokenFile)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs, unsubscribe := c.signals()
	defer unsubscribe()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()

	log := slog.New(slog.NewTextHandler(c.stderr, nil))
	return runEcho(ctx, log, client.NewAgent(*rawURL, token, client.WithLogger(log)), *rest)
}

// runEcho runs the echo agent, over the REST long poll when rest, until ctx ends (ExitOK) or
// the server refuses it for good.
func runEcho(ctx context.Context, log *slog.Logger, a *client.Agent, rest bool) int {
	// Who the agent is, to take its mention out of the text; retried until the server answers.
	var me client.User
	for delay := 250 * time.Millisecond; ; delay = min(2*delay, 10*time.Second) {
		var err error
		if me, err = a.Client().Me(ctx); err == nil {
			break
		}
		if ctx.Err() != nil {
			return ExitOK
		}
		var ae *client.APIError
		if errors.As(err, &ae) && (ae.Status == 401 || ae.Status == 403) {
			log.Error("echo: the server refused the token", "err", err)
			return ExitFailure
		}
		log.Warn("echo: cannot reach the server yet", "err", err, "retry_in", delay)
		if !sleepCtx(ctx, delay) {
			return ExitOK
		}
	}
	mention := regexp.MustCompile(`(?i)(^|\s)@` + regexp.QuoteMeta(me.Handle) + `\b`)
	log.Info("echo: connected", "agent", me.Handle, "id", me.ID, "rest", rest)

	handle := func(ctx context.Context, inv *client.Invocation) error {
		text := strings.Join(strings.Fields(mention.ReplaceAllString(inv.Message.Content, " ")), " ")
		if text == "" {
			text = "(nothing to echo)"
		}
		log.Info("echo: invocation", "run", inv.RunID, "thread", inv.ThreadID, "text", text)
		if _, err := inv.Start(ctx); err != nil && !client.IsCode(err, "already_started") {
			return err
		}
		reading := "reading"
		steps := []client.RunStep{{ID: "echo", Kind: "task", Title: "Echo the message", Status: "running"}}
		if _, err := inv.Update(ctx, client.RunPatch{Status: &reading, Steps: steps}); err != nil {
			return err
		}
		half := len(text) / 2
		for half > 0 && half < len(text) && !utf8Start(text[half]) {
			half++
		}
		if err := inv.AppendOutput(ctx, text[:half]); err != nil {
			return err
		}
		done := "done"
		steps[0].Status = "done"
		if _, err := inv.Update(ctx, client.RunPatch{Status: &done, Steps: steps, OutputAppend: text[half:]}); err != nil {
			return err
		}
		if _, err := inv.Reply(ctx, text); err != nil {
			return err
		}
		return inv.Finish(ctx, client.Succeeded, nil)
	}

	// A refusal of the server (4xx) would come again with the invocation: fail the run and go
	// on. Anything else (the network, a restart) leaves the invocation unacked for the next Run.
	tolerant := func(ctx context.Context, inv *client.Invocation) error {
		err := handle(ctx, inv)
		var ae *client.APIError
		if err == nil || !errors.As(err, &ae) || ae.Status >= 500 || ae.Status == 429 {
			return err
		}
		log.Warn("echo: the server refused a call of the run", "run", inv.RunID, "err", err)
		if ferr := inv.Finish(ctx, client.Failed, err); ferr != nil {
			log.Warn("echo: cannot fail the run", "run", inv.RunID, "err", ferr)
		}
		return nil
	}
	for {
		run := a.Run
		if rest {
			run = a.RunLongPoll
		}
		err := run(ctx, tolerant)
		switch {
		case ctx.Err() != nil:
			log.Info("echo: stopped")
			return ExitOK
		case errors.Is(err, client.ErrAuthenticationFailed), errors.Is(err, client.ErrReplaced):
			log.Error("echo: stopping", "err", err)
			return ExitFailure
		case errors.Is(err, client.ErrResyncRequired):
			// The agent's cursor is the server's; from the head is all it can do.
			a.Client().ResetCursor()
		}
		// A handler that failed (the server went away mid-run) leaves its invocation unacked:
		// the next Run gets it again.
		log.Warn("echo: restarting", "err", err)
		if !sleepCtx(ctx, time.Second) {
			return ExitOK
		}
	}
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
