package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"bothy.dev/bothy/bench/internal/measure"
	searchbench "bothy.dev/bothy/bench/search"
	"bothy.dev/bothy/storage/engine"
)

// The scenarios of bench/search: the search of messages in the use case, on both engines.

func searchQuery(fs *flag.FlagSet) runFunc {
	messages := fs.Int("messages", 1000000, "messages in the database, over the channels' main threads")
	channels := fs.Int("channels", 1000, "channels in the instance")
	readable := fs.Int("readable", 100, "channels the person may read (the first ones)")
	words := fs.Int("words", 12, "words per message")
	vocabulary := fs.Int("vocabulary", 20000, "distinct words, drawn with a Zipf-like distribution")
	warmup := fs.Int("warmup", 3, "rounds of every query before measuring")
	samples := fs.Int("samples", 900, "measured searches, one at a time, the queries in turn")
	backfill := fs.Bool("backfill", false, "also time migration 0025's backfill of the seeded messages")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		var s *searchbench.Store
		var err error
		if *r.engine == engine.Postgres {
			c, cerr := r.postgres(ctx)
			if cerr != nil {
				return cerr
			}
			r.atEnd(func() error { c.Close(); return nil })
			s, err = searchbench.OpenPostgres(ctx, c)
		} else {
			dir, derr := r.tempDir()
			if derr != nil {
				return derr
			}
			s, err = searchbench.Open(ctx, dir)
		}
		if err != nil {
			return err
		}
		r.atEnd(func() error {
			if err := s.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "bothybench: %v\n", err)
			}
			return nil
		})
		l := searchbench.Layout{Channels: *channels, Readable: *readable, Messages: *messages, Authors: 20, Words: *words, Vocabulary: *vocabulary}
		seeded, err := s.Seed(ctx, l)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bothybench: seeded %d messages in %s\n", *messages, seeded)
		var backfilled float64
		if *backfill {
			d, err := s.Backfill(ctx)
			if err != nil {
				return err
			}
			backfilled = d.Seconds()
		}
		if err := s.Start(ctx); err != nil {
			return err
		}
		all, byKind, hits, err := s.Measure(ctx, l, *warmup, *samples)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%ssearch/query/%d-of-%d-channels@%d-messages", r.prefix(), *readable, *channels, *messages)
		latencies(out, name, all)
		measure.Result(out, name+"/cpu", us(s.CPUPerQuery), "µs/op")
		for _, q := range s.Queries(l) {
			measure.Result(out, name+"/"+q.Kind+"/p99", measure.Ms(byKind[q.Kind].P99), "ms")
			measure.Result(out, name+"/"+q.Kind+"/hits", float64(hits[q.Kind]), "hits")
		}
		if *backfill {
			measure.Result(out, fmt.Sprintf("%ssearch/backfill@%d-messages", r.prefix(), *messages), backfilled, "s")
		}
		return nil
	}
}
