package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/bench/internal/pgcluster"
	"bothy.dev/bothy/storage/engine"
)

// scenario is one benchmark: its name and line in the usage, the flags it shares with others
// (which the runner declares), and its own flags and run.
type scenario struct {
	name, about string
	// timing, when set, gives the scenario -warmup (unless timing.warming is empty) and
	// -duration with these defaults.
	timing *timing
	// serve, when set, gives the scenario the flags of the bothy serve it runs: -bin,
	// -serve-args, -engine, -postgres, -people and -channels.
	serve *serving
	// store gives the scenario the flags of a store it opens itself: -engine, -postgres,
	// -max-batch, -commit-delay and -events-only.
	store bool
	// flags declares the scenario's own flags on fs and returns its run, which reads them once
	// they are parsed. The run writes its RESULT lines to out; the runner prints them when the
	// run and everything it started have ended without an error.
	flags func(fs *flag.FlagSet) runFunc
}

// runFunc runs a scenario once its flags are parsed.
type runFunc func(ctx context.Context, r *runner, out io.Writer) error

// timing are the defaults of a scenario's -warmup and -duration.
type timing struct {
	warmup time.Duration
	// warming is what the scenario does during the warm-up ("post", "offer at the rate"), for
	// the flag's usage; empty when it has no -warmup.
	warming  string
	duration time.Duration
	// durationNote ends the usage of -duration.
	durationNote string
}

// offering is the warm-up of an open-loop scenario.
const offering = "offer at the rate"

// runner is one run of a scenario: the shared flags and what the run started, to be ended
// when it returns.
type runner struct {
	// warmup and duration are the timing flags (nil when the scenario has none).
	warmup, duration *time.Duration
	// engine and pgURL are -engine and -postgres, of the server or the store.
	engine *engine.Name
	pgURL  *string
	server serverFlags
	store  storeFlags

	dir     string
	cleanup []func() error // in the order to run: the last thing started first
}

// main runs the scenario with args, its flags, and prints its RESULT lines to stdout.
func (sc *scenario) main(ctx context.Context, args []string, stdout io.Writer) error {
	r, run, err := sc.parse(args)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	err = run(ctx, r, &out)
	for _, c := range slices.Backward(r.cleanup) {
		err = errors.Join(err, c())
	}
	if err != nil {
		return err
	}
	_, err = stdout.Write(out.Bytes())
	return err
}

// parse declares the scenario's flags, shared and its own, and parses args.
func (sc *scenario) parse(args []string) (*runner, runFunc, error) {
	fs := flag.NewFlagSet(sc.name, flag.ContinueOnError)
	r := &runner{}
	if t := sc.timing; t != nil {
		if t.warming != "" {
			r.warmup = fs.Duration("warmup", t.warmup, t.warming+" this long before measuring")
		}
		r.duration = fs.Duration("duration", t.duration, "how long to measure"+t.durationNote)
	}
	switch {
	case sc.serve != nil:
		r.engine = engineFlag(fs, "sqlite (serve's own file in a temp data dir) or postgres (a fresh database on the -postgres cluster, migrated with bothy migrate up)")
		r.server = addServerFlags(fs, *sc.serve)
	case sc.store:
		r.engine = engineFlag(fs, "sqlite (a temp file) or postgres (a fresh database on the -postgres cluster)")
		r.store = addStoreFlags(fs)
	}
	if r.engine != nil {
		r.pgURL = fs.String("postgres", "", "PostgreSQL cluster URL of a user who may create databases (default: $"+pgcluster.EnvURL+", then $BOTHY_TEST_POSTGRES_URL)")
	}
	run := sc.flags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if r.engine != nil && *r.engine != engine.SQLite && *r.engine != engine.Postgres {
		return nil, nil, fmt.Errorf("-engine %q: sqlite or postgres", *r.engine)
	}
	return r, run, nil
}

func engineFlag(fs *flag.FlagSet, usage string) *engine.Name {
	return (*engine.Name)(fs.String("engine", string(engine.SQLite), usage))
}

// atEnd has the runner call f once the run has returned, before what was started earlier.
func (r *runner) atEnd(f func() error) { r.cleanup = append(r.cleanup, f) }

// tempDir is the run's directory for database files and data dirs, on the disk of TMPDIR,
// made on first use and removed at the end.
func (r *runner) tempDir() (string, error) {
	if r.dir == "" {
		dir, err := os.MkdirTemp("", "bothybench-")
		if err != nil {
			return "", err
		}
		r.dir = dir
		r.atEnd(func() error { os.RemoveAll(dir); return nil })
	}
	return r.dir, nil
}

// postgres connects to the cluster of -postgres or the environment.
func (r *runner) postgres(ctx context.Context) (*pgcluster.Cluster, error) {
	u, err := pgcluster.URL(*r.pgURL)
	if err != nil {
		return nil, err
	}
	return pgcluster.Connect(ctx, u)
}

// prefix is where the engine goes in a result's name: "" on SQLite (the names the table had
// before PostgreSQL), "postgres/" on PostgreSQL.
func (r *runner) prefix() string {
	if *r.engine == engine.SQLite {
		return ""
	}
	return string(*r.engine) + "/"
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bothybench SCENARIO [flags]   (bothybench SCENARIO -h lists its flags)")
	sorted := slices.Clone(scenarios)
	slices.SortFunc(sorted, func(a, b scenario) int { return strings.Compare(a.name, b.name) })
	for _, sc := range sorted {
		fmt.Fprintf(os.Stderr, "  %-20s %s\n", sc.name, sc.about)
	}
}

// latencies writes the p50, p99 and max rows of l under name, in milliseconds.
func latencies(out io.Writer, name string, l measure.Latencies) {
	measure.Result(out, name+"/p50", measure.Ms(l.P50), "ms")
	measure.Result(out, name+"/p99", measure.Ms(l.P99), "ms")
	measure.Result(out, name+"/max", measure.Ms(l.Max), "ms")
}

// us is d in microseconds.
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
