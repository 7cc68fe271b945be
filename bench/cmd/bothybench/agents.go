package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	agentsbench "bothy.dev/bothy/bench/agents"
	"bothy.dev/bothy/bench/internal/measure"
)

// The scenarios of bench/agents: an agent following the gateway as its consumer, people's
// clients and posters in this process.

// startAgent starts the server, prepares the instance with every person granted invoke on
// every channel (their mentions of the agent make runs) and creates the agent with post on
// every channel.
func (r *runner) startAgent(ctx context.Context) (*nodes, agentsbench.Agent, error) {
	layout := r.layout()
	layout.Grant = func(int, int) string { return "invoke" }
	ns, err := r.startGateway(ctx, 1, layout)
	if err != nil {
		return nil, agentsbench.Agent{}, err
	}
	a, err := agentsbench.CreateAgent(ctx, ns.client, ns.inst.Base, ns.inst.Owner, ns.inst.ChannelIDs, "post")
	if err != nil {
		return nil, a, fmt.Errorf("create the agent: %w", err)
	}
	return ns, a, nil
}

// agentsInvoke: the agent follows the gateway as its consumer; people post open loop, one
// message in -every mentioning the agent; receipt of each agent.invocation − its message's due.
func agentsInvoke(fs *flag.FlagSet) runFunc {
	rate := fs.Float64("rate", 200, "messages offered per second, each at its scheduled time (open loop)")
	every := fs.Int("every", 5, "one message in this many mentions the agent")
	workers := fs.Int("workers", 32, "the poster's HTTP clients")
	drain := fs.Duration("drain", 10*time.Second, "how long the agent may take after the last create to receive every invocation")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		ns, a, err := r.startAgent(ctx)
		if err != nil {
			return err
		}
		res, err := agentsbench.RunInvoke(ctx, ns.client, ns.inst, a, agentsbench.Invoke{
			Rate: *rate, Every: *every, Warmup: *r.warmup, Duration: *r.duration, Workers: *workers, Drain: *drain, ServerCPU: ns.servers[0].CPU})
		if err != nil {
			return fmt.Errorf("%w\n%s", err, ns.logs())
		}
		name := fmt.Sprintf("agents/%smessage-to-invocation@%g/s-1-in-%d", r.prefix(), *rate, *every)
		latencies(out, name, res.Latency)
		measure.Result(out, name+"/logged-to-agent/p99", measure.Ms(res.FromLog.P99), "ms")
		measure.Result(out, name+"/create-p99", measure.Ms(res.Create.P99), "ms")
		measure.Result(out, name+"/invocations", float64(res.Triggers), "invocations")
		measure.Result(out, name+"/server-cpu", us(res.ServerCPU), "µs/message")
		measure.Result(out, name+"/loadgen-cpu", us(res.LoadCPU), "µs/message")
		return nil
	}
}

// agentsRuns: clients focused on one thread, the agent patching several runs there at once;
// PATCH of version v → the first run.updated with a version ≥ v at each client.
func agentsRuns(fs *flag.FlagSet) runFunc {
	clients := fs.Int("clients", 100, "clients focused on the runs' thread (person k mod people)")
	runs := fs.Int("runs", 8, "runs patched at once, all in one thread")
	patchMin := fs.Duration("patch-min", 20*time.Millisecond, "least time between two patches of a run")
	patchMax := fs.Duration("patch-max", 50*time.Millisecond, "most time between two patches of a run")
	appendBytes := fs.Int("append", 24, "bytes of output_append per patch")
	background := fs.Float64("background", 0, "ordinary messages per second into the thread meanwhile (0: none)")
	drain := fs.Duration("drain", 10*time.Second, "how long the clients may take after the last patch to have every version")
	tokenRate := fs.Float64("token-rate", 0, "stream tokens of -append bytes at this many a second per run instead of patching every -patch-min to -patch-max (0: patches)")
	coalesce := fs.Duration("coalesce", 50*time.Millisecond, "with -token-rate: each patch after the first waits this long after the first token it holds")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		ns, a, err := r.startAgent(ctx)
		if err != nil {
			return err
		}
		res, err := agentsbench.RunFanout(ctx, ns.client, ns.inst, a, agentsbench.Fanout{
			Thread: ns.inst.Threads[0], Clients: *clients, ConnectParallel: 32, Runs: *runs,
			PatchMin: *patchMin, PatchMax: *patchMax, AppendBytes: *appendBytes,
			Warmup: *r.warmup, Duration: *r.duration, BackgroundRate: *background, BackgroundWorkers: 8, Drain: *drain,
			ServerCPU: ns.servers[0].CPU, TokenRate: *tokenRate, Coalesce: *coalesce})
		if err != nil {
			return fmt.Errorf("%w\n%s", err, ns.logs())
		}
		if *tokenRate > 0 {
			name := fmt.Sprintf("agents/%sstream/%d-runs-%gtok/s-%d-focused", r.prefix(), *runs, *tokenRate, *clients)
			latencies(out, name+"/token", res.TokenLatency)
			measure.Result(out, name+"/server-cpu-per-token", us(res.ServerCPUPerToken), "µs/token")
			measure.Result(out, name+"/tokens", float64(res.Tokens)/res.Elapsed.Seconds(), "tokens/s")
			measure.Result(out, name+"/tokens-per-patch", float64(res.Tokens)/float64(res.Patches), "tokens")
			measure.Result(out, name+"/patch-p99", measure.Ms(res.Patch.P99), "ms")
			measure.Result(out, name+"/server-cpu", us(res.ServerCPU), "µs/patch")
			return nil
		}
		name := fmt.Sprintf("agents/%srun-patch/%d-focused-%d-runs", r.prefix(), *clients, *runs)
		if *background > 0 {
			name += fmt.Sprintf("+%gmsg/s", *background)
		}
		latencies(out, name, res.Latency)
		measure.Result(out, name+"/patch-p99", measure.Ms(res.Patch.P99), "ms")
		measure.Result(out, name+"/patches", float64(res.Patches)/res.Elapsed.Seconds(), "patches/s")
		measure.Result(out, name+"/frames-per-patch", res.FramesPerPatch, "frames")
		measure.Result(out, name+"/server-cpu", us(res.ServerCPU), "µs/patch")
		measure.Result(out, name+"/loadgen-cpu", us(res.LoadCPU), "µs/patch")
		return nil
	}
}

// agentsFirstToken: a person focused on a thread mentions `bothy agent llm` (in this process, with
// a fake OpenAI-compatible model that streams at once) every -interval; the POST of the mention →
// the person's first run.updated with output of the run it made.
func agentsFirstToken(fs *flag.FlagSet) runFunc {
	interval := fs.Duration("interval", 100*time.Millisecond, "time between two mentions")
	tokens := fs.Int("tokens", 20, "tokens the fake model streams per answer")
	drain := fs.Duration("drain", 10*time.Second, "how long the last answers may take after the last mention")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		ns, a, err := r.startAgent(ctx)
		if err != nil {
			return err
		}
		res, err := agentsbench.RunFirstToken(ctx, ns.client, ns.inst, ns.inst.Tokens[0], a, agentsbench.FirstToken{
			Thread: ns.inst.Threads[0], Interval: *interval, Warmup: *r.warmup, Duration: *r.duration, Tokens: *tokens, Drain: *drain})
		if err != nil {
			return fmt.Errorf("%w\n%s", err, ns.logs())
		}
		name := fmt.Sprintf("agents/%smention-to-first-token/llm-fake-model-every-%s", r.prefix(), *interval)
		latencies(out, name, res.Latency)
		measure.Result(out, name+"/mentions", float64(res.Mentions), "mentions")
		measure.Result(out, name+"/answered", float64(res.Answered), "answers")
		return nil
	}
}

// agentsApproval: a person mentions the agent, the agent asks for approval, the person approves,
// one after the other; the decide's POST → the agent's approval.decided on its consumer.
func agentsApproval(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, r *runner, out io.Writer) error {
		ns, a, err := r.startAgent(ctx)
		if err != nil {
			return err
		}
		res, err := agentsbench.RunApproval(ctx, ns.client, ns.inst, a, agentsbench.Approval{Warmup: *r.warmup, Duration: *r.duration})
		if err != nil {
			return fmt.Errorf("%w\n%s", err, ns.logs())
		}
		name := fmt.Sprintf("agents/%sapproval-decide-to-agent", r.prefix())
		latencies(out, name, res.Latency)
		measure.Result(out, name+"/decide-p99", measure.Ms(res.Decide.P99), "ms")
		measure.Result(out, name+"/approvals", float64(res.Approvals), "approvals")
		return nil
	}
}
