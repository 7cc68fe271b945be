package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"

	inboxbench "bothy.dev/bothy/bench/inbox"
	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/storage/engine"
)

// The scenario of bench/inbox: GET /api/v1/me/unread for a person in many channels and DMs,
// with a large number of messages in the database.

// inboxServe is its instance: the person sees -channels channels and has a DM with each of
// -people other people.
var inboxServe = &serving{people: 50, channels: 200,
	peopleUsage: "other people, each in a direct message with the person (and authoring messages)"}

func inboxUnread(fs *flag.FlagSet) runFunc {
	messages := fs.Int("messages", 1000000, "messages in the database, round-robin over the channels' and DMs' main threads")
	mentionEvery := fs.Int("mention-every", 100, "every N-th message mentions the person")
	readThreads := fs.Int("read-threads", 200, "threads in which the person has a read position")
	readFraction := fs.Float64("read-fraction", 0.9, "how far into each of those threads the person has read")
	warmup := fs.Int("warmup", 50, "GETs before measuring")
	samples := fs.Int("samples", 1000, "measured GETs, one at a time")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		if *r.engine != engine.SQLite {
			return errors.New("inbox-unread seeds the messages into serve's SQLite file: -engine sqlite only")
		}
		channels, dms := *r.server.channels, *r.server.people
		l := inboxbench.Layout{Channels: channels, DMs: dms, Messages: *messages, MentionEvery: *mentionEvery,
			ReadThreads: *readThreads, ReadFraction: *readFraction}
		ns, err := r.startFirst(ctx, 1, nil, 4)
		if err != nil {
			return err
		}
		in, err := inboxbench.Prepare(ctx, ns.client, ns.servers[0].Public, ns.servers[0].SetupCode, l)
		if err != nil {
			return fmt.Errorf("prepare: %w\n%s", err, ns.logs())
		}
		if err := ns.seedStopped(ctx, func(db *sql.DB) error { return inboxbench.Seed(ctx, db, in, l) }); err != nil {
			return err
		}
		in.Base = ns.servers[0].Public
		lat, last, err := inboxbench.Measure(ctx, ns.client, in, *warmup, *samples)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, ns.logs())
		}
		if len(last.Items) == 0 || last.MentionCount == 0 {
			return fmt.Errorf("the unread answer lists %d entries and %d mentions: the seed did not count", len(last.Items), last.MentionCount)
		}
		name := fmt.Sprintf("inbox/unread/%d-channels-%d-dms@%d-messages", channels, dms, *messages)
		latencies(out, name, lat)
		measure.Result(out, name+"/entries", float64(len(last.Items)), "entries")
		return nil
	}
}
