package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"bothy.dev/bothy/bench/internal/measure"
	notifybench "bothy.dev/bothy/bench/notify"
	"bothy.dev/bothy/storage/engine"
)

// The scenario of bench/notify: a message mentioning a person in a channel of many members at
// their default levels → the person's notification.created on the gateway.

func notifyMention(fs *flag.FlagSet) runFunc {
	members := fs.Int("members", 1000, "other members of the channel (view or post, default levels), seeded into the database")
	warmup := fs.Int("warmup", 50, "messages before measuring")
	samples := fs.Int("samples", 1000, "measured messages, one at a time")
	interval := fs.Duration("interval", 5*time.Millisecond, "pause after each notification before the next post")
	timeout := fs.Duration("timeout", 5*time.Second, "how long a notification may take before the scenario fails")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		if *r.engine != engine.SQLite {
			return errors.New("notify-mention seeds the members into serve's SQLite file: -engine sqlite only")
		}
		ns, err := r.startFirst(ctx, 1, nil, 4)
		if err != nil {
			return err
		}
		in, err := notifybench.Prepare(ctx, ns.client, ns.servers[0].Public, ns.servers[0].SetupCode)
		if err != nil {
			return fmt.Errorf("prepare: %w\n%s", err, ns.logs())
		}
		if err := ns.seedStopped(ctx, func(db *sql.DB) error { return notifybench.SeedMembers(ctx, db, in, *members) }); err != nil {
			return err
		}
		in.Base = ns.servers[0].Public
		res, err := notifybench.Measure(ctx, ns.client, in, *warmup, *samples, *interval, *timeout)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, ns.logs())
		}
		name := fmt.Sprintf("notify/mention-to-notification/%d-members", *members)
		latencies(out, name, res.Latency)
		measure.Result(out, name+"/create-p99", measure.Ms(res.Create.P99), "ms")
		return nil
	}
}
