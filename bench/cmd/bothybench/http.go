package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
	servebench "bothy.dev/bothy/bench/serve"
	"bothy.dev/bothy/storage/engine"
)

// The scenarios of bench/http and bench/serve: message create over HTTP to a real bothy serve,
// and the start of one.

func httpClosed(fs *flag.FlagSet) runFunc {
	clients := fs.Int("clients", 32, "concurrent clients, each posting back to back on its own keep-alive connection")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		s, err := r.startServer(ctx, *clients)
		if err != nil {
			return err
		}
		res, err := httpbench.Closed(ctx, s.client, s.target, *clients, *r.warmup, *r.duration, s.cpu)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("http/%smessage-create/closed-loop/%d-clients", r.prefix(), *clients)
		measure.Result(out, name, res.PerSecond(), "messages/s")
		measure.Result(out, name+"/p50", measure.Ms(res.Latencies.P50), "ms")
		measure.Result(out, name+"/p99", measure.Ms(res.Latencies.P99), "ms")
		measure.Result(out, name+"/server-cpu", res.ServerCPUPerOp(), "µs/message")
		if s.cpu.DB != nil {
			measure.Result(out, name+"/postgres-cpu", res.DBCPUPerOp(), "µs/message")
		}
		measure.Result(out, name+"/loadgen-cpu", res.LoadCPUPerOp(), "µs/message")
		return nil
	}
}

func httpOpen(fs *flag.FlagSet) runFunc {
	rate := fs.Float64("rate", 1000, "messages offered per second, each at its scheduled time")
	workers := fs.Int("workers", 64, "clients that send the due requests (a due request waits while all are busy)")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		s, err := r.startServer(ctx, *workers)
		if err != nil {
			return err
		}
		res, err := httpbench.Open(ctx, s.client, s.target, *rate, *workers, *r.warmup, *r.duration, s.cpu)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("http/%smessage-create/open-loop@%g/s", r.prefix(), *rate)
		latencies(out, name, res.Latencies)
		measure.Result(out, name+"/server-cpu", res.ServerCPUPerOp(), "µs/message")
		if s.cpu.DB != nil {
			measure.Result(out, name+"/postgres-cpu", res.DBCPUPerOp(), "µs/message")
		}
		return nil
	}
}

// serveStart prints one line per start (bench/run's median and range then cover every start
// of every repetition): starts on fresh data directories, then on one that holds an owner,
// people, channels and messages, then the memory of one idle process of each kind.
func serveStart(fs *flag.FlagSet) runFunc {
	starts := fs.Int("starts", 10, "starts of each kind")
	idle := fs.Duration("idle", time.Second, "how long the idle process waits before its second RSS reading")
	messages := fs.Int("messages", 2000, "messages in the existing data directory")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		if *r.engine != engine.SQLite {
			return errors.New("serve-start measures serve on its own SQLite data dir: -engine sqlite only")
		}
		dir, err := r.tempDir()
		if err != nil {
			return err
		}
		o := servebench.Options{Bin: *r.server.bin, Args: strings.Fields(*r.server.args)}

		fresh := func(i int) string { return filepath.Join(dir, fmt.Sprintf("empty-%d", i)) }
		empty, err := servebench.Starts(ctx, o, *starts, fresh)
		if err != nil {
			return err
		}
		o.DataDir = fresh(*starts)
		emptyAt, emptyIdle, err := servebench.IdleRSS(ctx, o, *idle)
		if err != nil {
			return err
		}

		// The existing data directory: what http-closed leaves, smaller.
		s, err := r.startServer(ctx, 8)
		if err != nil {
			return err
		}
		if err := errors.Join(httpbench.Seed(ctx, s.client, s.target, *messages), s.stop()); err != nil {
			return err
		}
		existing := s.dataDir
		full, err := servebench.Starts(ctx, o, *starts, func(int) string { return existing })
		if err != nil {
			return err
		}
		o.DataDir = existing
		fullAt, fullIdle, err := servebench.IdleRSS(ctx, o, *idle)
		if err != nil {
			return err
		}

		for _, k := range []struct {
			kind    string
			samples []servebench.Sample
			at      int64
			idle    int64
		}{{"empty-data-dir", empty, emptyAt, emptyIdle}, {"existing-data-dir", full, fullAt, fullIdle}} {
			for _, x := range k.samples {
				measure.Result(out, "serve/start-to-ready/"+k.kind, measure.Ms(x.ToReady), "ms")
			}
			for _, x := range k.samples {
				measure.Result(out, "serve/rss-at-ready/"+k.kind, measure.MiB(x.RSS), "MiB")
			}
			measure.Result(out, "serve/rss-at-ready/"+k.kind, measure.MiB(k.at), "MiB")
			measure.Result(out, fmt.Sprintf("serve/rss-after-%v-idle/%s", *idle, k.kind), measure.MiB(k.idle), "MiB")
		}
		return nil
	}
}
