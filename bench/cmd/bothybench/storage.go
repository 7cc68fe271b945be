package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"bothy.dev/bothy/bench/internal/measure"
	storagebench "bothy.dev/bothy/bench/storage"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
)

// The scenarios of bench/storage: the write path, storage.DB.Do with group commit.

// storeFlags are the flags of the storage scenarios besides -engine and -postgres.
type storeFlags struct {
	maxBatch    *int
	commitDelay *time.Duration
	eventsOnly  *bool
}

func addStoreFlags(fs *flag.FlagSet) storeFlags {
	return storeFlags{
		maxBatch:    fs.Int("max-batch", 0, "storage.Options.MaxBatch (0: the store's default; 1 turns group commit off)"),
		commitDelay: fs.Duration("commit-delay", 0, "storage.Options.BenchCommitDelay: a SIMULATED slow-disk commit cost slept before each COMMIT"),
		eventsOnly:  fs.Bool("events-only", false, "only append the event: no thread read, message row or thread count"),
	}
}

// openStore opens the store of a storage scenario, closed at the end with whatever it needed.
func (r *runner) openStore(ctx context.Context) (*storagebench.Store, error) {
	f := r.store
	o := storage.Options{MaxBatch: *f.maxBatch, BenchCommitDelay: *f.commitDelay}
	if *r.engine == engine.Postgres {
		c, err := r.postgres(ctx)
		if err != nil {
			return nil, err
		}
		s, err := storagebench.OpenPostgres(ctx, c, o, *f.eventsOnly)
		if err != nil {
			c.Close()
			return nil, err
		}
		r.atEnd(func() error {
			if err := s.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "bothybench: %v\n", err)
			}
			c.Close()
			return nil
		})
		return s, nil
	}
	dir, err := r.tempDir()
	if err != nil {
		return nil, err
	}
	s, err := storagebench.Open(ctx, dir, o, *f.eventsOnly)
	if err != nil {
		return nil, err
	}
	r.atEnd(func() error { s.Close(); return nil })
	return s, nil
}

// storeLabel names a storage run by what differs from the default: group commit on, no delay,
// message rows written. On PostgreSQL the Unit of Work names it: commit-phase (the event alone)
// or message-create.
func (r *runner) storeLabel() string {
	f := r.store
	var parts []string
	if *r.engine == engine.Postgres {
		parts = append(parts, string(engine.Postgres))
		if *f.eventsOnly {
			parts = append(parts, "commit-phase")
		} else {
			parts = append(parts, "message-create")
		}
	} else {
		parts = append(parts, "do")
	}
	if *f.commitDelay > 0 {
		parts = append(parts, fmt.Sprintf("simulated-%v-commit", *f.commitDelay))
	}
	if *f.maxBatch == 1 {
		parts = append(parts, "max-batch=1")
	} else if *r.engine != engine.Postgres || *f.maxBatch > 1 {
		parts = append(parts, "group-commit")
		if *f.maxBatch > 1 {
			parts[len(parts)-1] += fmt.Sprintf("(max-batch=%d)", *f.maxBatch)
		}
	}
	if *f.eventsOnly && *r.engine != engine.Postgres {
		parts = append(parts, "events-only")
	}
	return strings.Join(parts, "/")
}

func storageRate(fs *flag.FlagSet) runFunc {
	writers := fs.Int("writers", 256, "concurrent goroutines calling Do back to back")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		s, err := r.openStore(ctx)
		if err != nil {
			return err
		}
		run, err := s.Rate(ctx, *writers, *r.warmup, *r.duration)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("storage/%s/%d-writers", r.storeLabel(), *writers)
		measure.Result(out, name, run.PerSecond(), "events/s")
		measure.Result(out, name+"/cpu", run.CPUPerOp(), "µs/event")
		if run.DBRead {
			measure.Result(out, name+"/postgres-cpu", run.DBCPUPerOp(), "µs/event")
		}
		return nil
	}
}

func storageLatency(fs *flag.FlagSet) runFunc {
	rate := fs.Float64("rate", 1000, "Units of Work offered per second (open loop)")
	return func(ctx context.Context, r *runner, out io.Writer) error {
		s, err := r.openStore(ctx)
		if err != nil {
			return err
		}
		if _, err := s.Latency(ctx, *rate, *r.warmup); err != nil {
			return err
		}
		l, err := s.Latency(ctx, *rate, *r.duration)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("storage/%s/latency@%g/s", r.storeLabel(), *rate)
		measure.Result(out, name+"/p50", measure.Ms(l.P50), "ms")
		measure.Result(out, name+"/p99", measure.Ms(l.P99), "ms")
		return nil
	}
}
