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

	"bothy.dev/bothy/agents/llm"
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

const agentLLMHelp = `bothy agent llm --url URL --token-file FILE --config agent.yaml [--rest]

Runs "llm", a teammate that answers with a language model: it connects to the instance at
URL as the agent whose API token is in FILE and answers every invocation (an @mention by
someone allowed to invoke it) with the model agent.yaml names. The server never calls the
model: this process does, with its own key. For each invocation it reads the thread (the
invoking message and up to "history" earlier ones, each labelled with its author and whether
a person, an agent or an integration wrote it), streams the model's answer into the run's
output, reports the tokens used, and posts the answer as the run's reply. The tools of the
MCP servers in agent.yaml are offered to the model; each call is a step of the run, and a
tool listed under "ask" is first put to the person who invoked the run for approval. A
person's cancel stops the model at once. A 429 or 5xx of the model's API is retried with
backoff; a refused key or a missing model fails the run with provider_unauthorized or
model_not_found and a sentence in the thread.

agent.yaml:
  provider: openai | anthropic    # openai: chat completions (also Ollama, vLLM, llama.cpp)
  base_url: http://ollama.lan:11434/v1   # default https://api.openai.com/v1 or https://api.anthropic.com
  model: llama3.1
  api_key_ref: env:NAME | file:PATH      # optional for a server on the LAN
  system_prompt: You help the team.      # optional
  history: 20                            # earlier messages of the thread (0 to 200)
  max_tokens: 4096
  temperature: 0.3                       # optional
  pricing: {input_usd_per_mtok: 3, output_usd_per_mtok: 15}   # optional: the run's cost
  mcp_servers:                           # optional
    - {name: files, command: mcp-files, args: [--root, /srv], env: {K: V}, ask: [write_file]}
    - {name: web, url: http://tools.lan/mcp}

Unknown keys are refused with their name. It reconnects by itself, logs to stderr and stops
on SIGINT or SIGTERM; --rest long-polls the REST consumer instead of holding a WebSocket.

Exit codes: 0 when stopped by a signal; 1 when the server refuses the token, another
connection of the agent takes over, or an MCP server cannot be started; 2 for a wrong
invocation or agent.yaml (no URL, unreadable token file, an unknown key, no API key).`

func (c *cli) agent(ctx context.Context, args []string) int {
	if len(args) == 0 || (args[0] != "echo" && args[0] != "llm" && !strings.HasPrefix(args[0], "-")) {
		if len(args) > 0 {
			fmt.Fprintf(c.stderr, "bothy agent: unknown agent %q\n", args[0])
		}
		fmt.Fprintf(c.stderr, "Usage: %s\n       %s\n", strings.SplitN(agentHelp, "\n", 2)[0], strings.SplitN(agentLLMHelp, "\n", 2)[0])
		return ExitUsage
	}
	if args[0] == "llm" {
		return c.agentLLM(ctx, args[1:])
	}
	if args[0] == "echo" {
		args = args[1:]
	}
	f := c.newFlags("agent echo", agentHelp)
	conn := registerAgentFlags(f)
	if code, done := f.parse(args); done {
		return code
	}
	token, code, ok := conn.token(f)
	if !ok {
		return code
	}
	ctx, stop := c.untilSignal(ctx)
	defer stop()
	log := slog.New(slog.NewTextHandler(c.stderr, nil))
	return runEcho(ctx, log, client.NewAgent(conn.url, token, client.WithLogger(log)), conn.rest)
}

func (c *cli) agentLLM(ctx context.Context, args []string) int {
	f := c.newFlags("agent llm", agentLLMHelp)
	conn := registerAgentFlags(f)
	configFile := f.String("config", "", "the agent's `agent.yaml`: the model, its key and its tools (required)")
	if code, done := f.parse(args); done {
		return code
	}
	token, code, ok := conn.token(f)
	if !ok {
		return code
	}
	if *configFile == "" {
		return f.usageError("--config is required")
	}
	cfg, err := llm.LoadConfig(*configFile)
	if err != nil {
		return f.usageError("--config %s: %v", *configFile, err)
	}
	provider, err := llm.NewProvider(cfg)
	if err != nil {
		return f.usageError("--config %s: %v", *configFile, err)
	}
	ctx, stop := c.untilSignal(ctx)
	defer stop()
	log := slog.New(slog.NewTextHandler(c.stderr, nil))
	a := client.NewAgent(conn.url, token, client.WithLogger(log))
	me, code, ok := whoAmI(ctx, log, a, "llm")
	if !ok {
		return code
	}
	tools, err := llm.OpenTools(ctx, cfg.MCPServers, nil)
	if err != nil {
		if ctx.Err() != nil {
			return ExitOK
		}
		log.Error("llm: cannot open the MCP servers", "err", err)
		return ExitFailure
	}
	defer tools.Close()
	log.Info("llm: connected", "agent", me.Handle, "id", me.ID, "rest", conn.rest,
		"provider", cfg.Provider, "model", cfg.Model, "tools", len(tools.Tools()))
	return serveAgent(ctx, log, a, conn.rest, "llm", llm.New(cfg, provider, tools, me, log).Handler(a.Client()))
}

// agentFlags are the flags every agent takes: where the instance is and the agent's token.
type agentFlags struct {
	url       string
	tokenFile string
	rest      bool
}

func registerAgentFlags(f *flags) *agentFlags {
	af := &agentFlags{}
	f.StringVar(&af.url, "url", "", "base `URL` of the instance, such as https://chat.example.com (required)")
	f.StringVar(&af.tokenFile, "token-file", "", "`file` holding the agent's API token (required)")
	f.BoolVar(&af.rest, "rest", false, "long-poll the REST consumer instead of holding a WebSocket")
	return af
}

// token checks the flags and reads the token; !ok ends the command with code.
func (af *agentFlags) token(f *flags) (token string, code int, ok bool) {
	if af.url == "" {
		return "", f.usageError("--url is required"), false
	}
	if !strings.HasPrefix(af.url, "http://") && !strings.HasPrefix(af.url, "https://") {
		return "", f.usageError("--url must be an http:// or https:// URL"), false
	}
	if af.tokenFile == "" {
		return "", f.usageError("--token-file is required"), false
	}
	raw, err := os.ReadFile(af.tokenFile)
	if err != nil {
		return "", f.usageError("--token-file: %v", err), false
	}
	token = strings.TrimSpace(string(raw))
	if token == "" {
		return "", f.usageError("--token-file: %s is empty", af.tokenFile), false
	}
	return token, 0, true
}

// untilSignal is ctx, cancelled at SIGINT or SIGTERM.
func (c *cli) untilSignal(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	sigs, unsubscribe := c.signals()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(); unsubscribe() }
}

// whoAmI reads the agent's principal, retried until the server answers; !ok ends the command
// with code (ExitOK when ctx ended, ExitFailure when the server refused the token).
func whoAmI(ctx context.Context, log *slog.Logger, a *client.Agent, name string) (client.User, int, bool) {
	for delay := 250 * time.Millisecond; ; delay = min(2*delay, 10*time.Second) {
		me, err := a.Client().Me(ctx)
		if err == nil {
			return me, 0, true
		}
		if ctx.Err() != nil {
			return me, ExitOK, false
		}
		var ae *client.APIError
		if errors.As(err, &ae) && (ae.Status == 401 || ae.Status == 403) {
			log.Error(name+": the server refused the token", "err", err)
			return me, ExitFailure, false
		}
		log.Warn(name+": cannot reach the server yet", "err", err, "retry_in", delay)
		if !sleepCtx(ctx, delay) {
			return me, ExitOK, false
		}
	}
}

// runEcho runs the echo agent, over the REST long poll when rest, until ctx ends (ExitOK) or
// the server refuses it for good.
func runEcho(ctx context.Context, log *slog.Logger, a *client.Agent, rest bool) int {
	// Who the agent is, to take its mention out of the text.
	me, code, ok := whoAmI(ctx, log, a, "echo")
	if !ok {
		return code
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

	return serveAgent(ctx, log, a, rest, "echo", handle)
}

// serveAgent runs handle for the agent's invocations, over the REST long poll when rest, until
// ctx ends (ExitOK) or the server refuses the agent for good (ExitFailure).
func serveAgent(ctx context.Context, log *slog.Logger, a *client.Agent, rest bool, name string,
	handle func(context.Context, *client.Invocation) error) int {
	// A refusal of the server (4xx) would come again with the invocation: fail the run and go
	// on. Anything else (the network, a restart) leaves the invocation unacked for the next Run.
	tolerant := func(ctx context.Context, inv *client.Invocation) error {
		err := handle(ctx, inv)
		var ae *client.APIError
		if err == nil || !errors.As(err, &ae) || ae.Status >= 500 || ae.Status == 429 {
			return err
		}
		log.Warn(name+": the server refused a call of the run", "run", inv.RunID, "err", err)
		if ferr := inv.Finish(ctx, client.Failed, err); ferr != nil {
			log.Warn(name+": cannot fail the run", "run", inv.RunID, "err", ferr)
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
			log.Info(name + ": stopped")
			return ExitOK
		case errors.Is(err, client.ErrAuthenticationFailed), errors.Is(err, client.ErrReplaced):
			log.Error(name+": stopping", "err", err)
			return ExitFailure
		case errors.Is(err, client.ErrResyncRequired):
			// The agent's cursor is the server's; from the head is all it can do.
			a.Client().ResetCursor()
		}
		// A handler that failed (the server went away mid-run) leaves its invocation unacked:
		// the next Run gets it again.
		log.Warn(name+": restarting", "err", err)
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
