package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
	scalebench "bothy.dev/bothy/bench/scale"
	"bothy.dev/bothy/storage/engine"
)

// The scenario of bench/scale: the figures of an empty instance again with millions of messages
// in its SQLite file, and the ratios of the two.

func scaleScenario(fs *flag.FlagSet) runFunc {
	messages := fs.Int("messages", 10000000, "messages seeded into the database (0: measure the empty instance alone)")
	span := fs.Duration("span", 90*24*time.Hour, "how far back the seeded messages go")
	rate := fs.Float64("rate", 1000, "messages offered per second in the open loop")
	clients := fs.Int("clients", 32, "clients of the closed loop")
	load := fs.Duration("load", 4*time.Second, "how long each loop runs after a second of warm-up")
	samples := fs.Int("samples", 300, "GETs of each read, one at a time")
	idle := fs.Duration("idle", time.Second, "how long the full instance idles before its RSS is read")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		if *r.engine != engine.SQLite {
			return errors.New("scale seeds serve's SQLite file: -engine sqlite only")
		}
		ns, err := r.startFirst(ctx, 1, nil, max(*clients, 64))
		if err != nil {
			return err
		}
		s := ns.servers[0]
		t, err := httpbench.Prepare(ctx, ns.client, s.Public, s.SetupCode, *r.server.people, *r.server.channels)
		if err != nil {
			return fmt.Errorf("prepare: %w\n%s", err, ns.logs())
		}
		type figures struct {
			closed, openP99 float64
			reads           scalebench.Reads
		}
		measureAll := func(t httpbench.Target) (figures, error) {
			var f figures
			res, err := httpbench.Closed(ctx, ns.client, t, *clients, time.Second, *load, httpbench.CPUReaders{})
			if err != nil {
				return f, err
			}
			f.closed = res.PerSecond()
			open, err := httpbench.Open(ctx, ns.client, t, *rate, 64, time.Second, *load, httpbench.CPUReaders{})
			if err != nil {
				return f, err
			}
			f.openP99 = measure.Ms(open.Latencies.P99)
			f.reads, err = scalebench.MeasureReads(ctx, ns.client, t, 20, *samples)
			return f, err
		}
		empty, err := measureAll(t)
		if err != nil {
			return fmt.Errorf("empty instance: %w\n%s", err, ns.logs())
		}
		if *messages == 0 { // the empty instance alone, e.g. to compare two builds
			measure.Result(out, "scale/empty/message-create/closed-loop", empty.closed, "messages/s")
			measure.Result(out, fmt.Sprintf("scale/empty/message-create/open-loop@%g/s/p99", *rate), empty.openP99, "ms")
			measure.Result(out, "scale/empty/thread-page/p99", measure.Ms(empty.reads.ThreadPage.P99), "ms")
			measure.Result(out, "scale/empty/catch-up-page/p99", measure.Ms(empty.reads.CatchUp.P99), "ms")
			measure.Result(out, "scale/empty/me-unread/p99", measure.Ms(empty.reads.Unread.P99), "ms")
			return nil
		}
		var rep scalebench.SeedReport
		err = ns.seedStopped(ctx, func(db *sql.DB) error {
			var err error
			rep, err = scalebench.Seed(ctx, db, t, scalebench.Layout{Messages: *messages, Span: *span})
			return err
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bothybench: seeded %d messages (%d events) in %s\n", rep.Messages, rep.Events, rep.Took.Round(time.Second))
		s = ns.servers[0]
		t.Base = s.Public
		startToReady := s.StartToReady
		time.Sleep(*idle)
		rss, err := s.RSS()
		if err != nil {
			return err
		}
		full, err := measureAll(t)
		if err != nil {
			return fmt.Errorf("full instance: %w\n%s", err, ns.logs())
		}
		at := fmt.Sprintf("scale/@%d-messages", *messages)
		measure.Result(out, at+"/start-to-ready", measure.Ms(startToReady), "ms")
		measure.Result(out, at+"/rss-after-idle", float64(rss)/(1<<20), "MiB")
		for _, x := range []struct {
			name        string
			empty, full float64
			unit        string
		}{
			{"message-create/closed-loop", empty.closed, full.closed, "messages/s"},
			{fmt.Sprintf("message-create/open-loop@%g/s/p99", *rate), empty.openP99, full.openP99, "ms"},
			{"thread-page/p99", measure.Ms(empty.reads.ThreadPage.P99), measure.Ms(full.reads.ThreadPage.P99), "ms"},
			{"catch-up-page/p99", measure.Ms(empty.reads.CatchUp.P99), measure.Ms(full.reads.CatchUp.P99), "ms"},
			{"me-unread/p99", measure.Ms(empty.reads.Unread.P99), measure.Ms(full.reads.Unread.P99), "ms"},
		} {
			measure.Result(out, "scale/empty/"+x.name, x.empty, x.unit)
			measure.Result(out, at+"/"+x.name, x.full, x.unit)
			ratio := x.full / x.empty
			if x.unit == "messages/s" {
				ratio = x.empty / x.full // how many times slower
			}
			measure.Result(out, at+"/"+x.name+"/slowdown", ratio, "×")
		}
		return nil
	}
}
