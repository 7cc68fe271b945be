package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	authzbench "bothy.dev/bothy/bench/authz"
	consolebench "bothy.dev/bothy/bench/console"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
)

// The scenarios of bench/console and bench/authz.

// consolePages fills a real bothy serve with -messages messages over the REST API, signs the
// owner in through the console's form and measures the console: each page's render time
// (sequential GETs timed at the client, p50/p99 per page and the worst p99), then what the chat
// view's first load transfers to a browser that accepts gzip (HTML, stylesheets, scripts).
func consolePages(fs *flag.FlagSet) runFunc {
	messages := fs.Int("messages", 10000, "messages in the instance, spread over the channels' main threads")
	agents := fs.Int("agents", 3, "agents, each with post on every channel")
	warmup := fs.Int("warmup", 20, "GETs of each page before measuring")
	samples := fs.Int("samples", 400, "measured GETs of each page")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		s, err := r.startServer(ctx, 8)
		if err != nil {
			return err
		}
		in, err := consolebench.Prepare(ctx, s.client, s.target, *messages, *agents)
		var renders []consolebench.Render
		var load consolebench.Load
		if err == nil {
			v := consolebench.NewVisitor(s.Public)
			if err = v.SignIn(ctx, consolebench.OwnerHandle, httpbench.Password); err == nil {
				if renders, err = v.MeasureRender(ctx, consolebench.Pages(in), *warmup, *samples); err == nil {
					// The visitor keeps no cache: every file is fetched as on a first visit.
					load, err = v.MeasureFirstLoad(ctx, consolebench.ChatPath(in))
				}
			}
		}
		if err != nil {
			return fmt.Errorf("%w\n%s", err, s.Logs())
		}
		name := fmt.Sprintf("console/%srender@%d-messages", r.prefix(), *messages)
		for _, x := range renders {
			measure.Result(out, name+"/"+x.Page.Name+"/p50", measure.Ms(x.Latencies.P50), "ms")
			measure.Result(out, name+"/"+x.Page.Name+"/p99", measure.Ms(x.Latencies.P99), "ms")
		}
		w := consolebench.Worst(renders)
		fmt.Fprintf(os.Stderr, "console: the worst p99 is %s's (%s, %d bytes)\n", w.Page.Name, w.Page.Path, w.Bytes)
		measure.Result(out, name+"/worst-page/p99", measure.Ms(w.Latencies.P99), "ms")
		name = fmt.Sprintf("console/%sfirst-load@%d-messages/chat-view", r.prefix(), *messages)
		kib := func(b int64) float64 { return float64(b) / 1024 }
		measure.Result(out, name, kib(load.Total()), "KiB")
		measure.Result(out, name+"/html", kib(load.HTML), "KiB")
		measure.Result(out, name+"/css", kib(load.CSS), "KiB")
		measure.Result(out, name+"/js", kib(load.JS), "KiB")
		measure.Result(out, name+"/decoded", kib(load.Decoded), "KiB")
		return nil
	}
}

// authzWarm runs bench/authz's measurement in this fresh process.
func authzWarm(fs *flag.FlagSet) runFunc {
	n := fs.Int("n", 1_000_000, "decisions sampled, alone and again while a tail observes grant changes")
	return func(ctx context.Context, _ *runner, out io.Writer) error {
		return authzbench.Run(ctx, out, *n)
	}
}
