// Command bothybench runs one of bothy's benchmark scenarios once and prints its measurements as
// "RESULT<TAB>name<TAB>value<TAB>unit" lines, which bench/run collects over several repetitions
// (each in a fresh process) into the target-versus-measured table. Everything it measures runs
// on real SQLite files in a temp directory (TMPDIR, default /tmp).
//
//	bothybench driver-rate -driver modernc -per-commit 64 -duration 2s
//	bothybench driver-start -driver ncruces
//	bothybench driver-rss -driver ncruces -writes 20000
//	bothybench storage-rate -writers 256 -commit-delay 2ms -max-batch 1
//	bothybench storage-latency -rate 1000 -duration 5s
//
// It holds no figure of its own: a scenario that fails prints its error and exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"bothy.dev/bothy/bench/driver"
	"bothy.dev/bothy/bench/internal/measure"
	storagebench "bothy.dev/bothy/bench/storage"
	"bothy.dev/bothy/storage"
)

// scenario runs with its own flags and writes RESULT lines to out.
type scenario struct {
	about string
	run   func(ctx context.Context, args []string, out io.Writer) error
}

// scenarios are the benchmarks. The HTTP message-create load generator and the serve
// start-to-ready/RSS measurement join here once the appliance serves.
var scenarios = map[string]scenario{
	"driver-rate":        {"message-create writes/s through one SQLite driver (bench/driver)", driverRate},
	"driver-start":       {"open-to-first-query of a driver, cold, in a fresh child process", driverStart},
	"driver-start-child": {"(internal) the child of driver-start", driverStartChild},
	"driver-rss":         {"RSS growth of a process using a driver (1 writer, 4 readers)", driverRSS},
	"storage-rate":       {"durable events/s through storage.DB.Do from many writers (bench/storage)", storageRate},
	"storage-latency":    {"latency of storage.DB.Do at a fixed offered rate", storageLatency},
}

func main() {
	if len(os.Args) < 2 || scenarios[os.Args[1]].run == nil {
		usage()
		os.Exit(2)
	}
	if err := scenarios[os.Args[1]].run(context.Background(), os.Args[2:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bothybench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bothybench SCENARIO [flags]   (bothybench SCENARIO -h lists its flags)")
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-20s %s\n", n, scenarios[n].about)
	}
}

// tempDir is a fresh directory for one scenario's database files, on the disk of TMPDIR.
func tempDir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "bothybench-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

func driverFlag(fs *flag.FlagSet) *string {
	return fs.String("driver", "modernc", "SQLite driver: modernc or ncruces")
}

func driverRate(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("driver-rate", flag.ContinueOnError)
	name := driverFlag(fs)
	per := fs.Int("per-commit", 1, "message creates sharing one COMMIT (each in a SAVEPOINT when > 1)")
	dur := fs.Duration("duration", 2*time.Second, "how long to measure, after a warm-up of 256 writes")
	if err := parse(fs, args); err != nil {
		return err
	}
	d, err := driver.ByName(*name)
	if err != nil {
		return err
	}
	if *per < 1 {
		return errors.New("-per-commit must be at least 1")
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	run, err := driver.Rate(ctx, d, dir, *per, *dur)
	if err != nil {
		return err
	}
	metric := fmt.Sprintf("driver/%s/message-create/%d-per-commit", d.Name, *per)
	measure.Result(out, metric, run.PerSecond(), "writes/s")
	measure.Result(out, metric+"/cpu", run.CPUPerOp(), "µs/write")
	return nil
}

// driverStart creates a seeded database, then times the first open and query of a fresh child
// process, where the driver has done nothing yet.
func driverStart(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("driver-start", flag.ContinueOnError)
	name := driverFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	d, err := driver.ByName(*name)
	if err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	path := filepath.Join(dir, "start.db")
	db, _, err := driver.Create(ctx, d, path)
	if err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, self, "driver-start-child", "-driver", d.Name, "-db", path)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	return cmd.Run()
}

func driverStartChild(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("driver-start-child", flag.ContinueOnError)
	name := driverFlag(fs)
	path := fs.String("db", "", "seeded database to open")
	if err := parse(fs, args); err != nil {
		return err
	}
	d, err := driver.ByName(*name)
	if err != nil {
		return err
	}
	took, err := driver.OpenToFirstQuery(ctx, d, *path)
	if err != nil {
		return err
	}
	measure.Result(out, fmt.Sprintf("driver/%s/open-to-first-query", d.Name), measure.Ms(took), "ms")
	return nil
}

func driverRSS(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("driver-rss", flag.ContinueOnError)
	name := driverFlag(fs)
	writes := fs.Int("writes", 20000, "message creates to write (in commits of 64)")
	readers := fs.Int("readers", 4, "read connections to open and use, like storage/sqlite's pool")
	if err := parse(fs, args); err != nil {
		return err
	}
	d, err := driver.ByName(*name)
	if err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	grew, err := driver.RSSGrowth(ctx, d, dir, *writes, *readers)
	if err != nil {
		return err
	}
	measure.Result(out, fmt.Sprintf("driver/%s/rss-growth", d.Name), measure.MiB(grew), "MiB")
	return nil
}

// storeFlags are the flags of the storage scenarios.
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

func (f storeFlags) open(ctx context.Context, dir string) (*storagebench.Store, error) {
	return storagebench.Open(ctx, dir, storage.Options{MaxBatch: *f.maxBatch, BenchCommitDelay: *f.commitDelay}, *f.eventsOnly)
}

// label names a storage run by what differs from the default: group commit on, no delay,
// message rows written.
func (f storeFlags) label() string {
	var parts []string
	if *f.commitDelay > 0 {
		parts = append(parts, fmt.Sprintf("simulated-%v-commit", *f.commitDelay))
	}
	if *f.maxBatch == 1 {
		parts = append(parts, "max-batch=1")
	} else {
		parts = append(parts, "group-commit")
		if *f.maxBatch > 1 {
			parts[len(parts)-1] += fmt.Sprintf("(max-batch=%d)", *f.maxBatch)
		}
	}
	if *f.eventsOnly {
		parts = append(parts, "events-only")
	}
	return strings.Join(parts, "/")
}

func storageRate(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("storage-rate", flag.ContinueOnError)
	f := addStoreFlags(fs)
	writers := fs.Int("writers", 256, "concurrent goroutines calling Do back to back")
	warmup := fs.Duration("warmup", 500*time.Millisecond, "run this long before measuring")
	dur := fs.Duration("duration", 3*time.Second, "how long to measure")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	s, err := f.open(ctx, dir)
	if err != nil {
		return err
	}
	defer s.Close()
	run, err := s.Rate(ctx, *writers, *warmup, *dur)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("storage/do/%s/%d-writers", f.label(), *writers)
	measure.Result(out, name, run.PerSecond(), "events/s")
	measure.Result(out, name+"/cpu", run.CPUPerOp(), "µs/event")
	return nil
}

func storageLatency(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("storage-latency", flag.ContinueOnError)
	f := addStoreFlags(fs)
	rate := fs.Float64("rate", 1000, "Units of Work offered per second (open loop)")
	warmup := fs.Duration("warmup", 500*time.Millisecond, "offer at the rate this long before measuring")
	dur := fs.Duration("duration", 5*time.Second, "how long to measure")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	s, err := f.open(ctx, dir)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Latency(ctx, *rate, *warmup); err != nil {
		return err
	}
	l, err := s.Latency(ctx, *rate, *dur)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("storage/do/%s/latency@%g/s", f.label(), *rate)
	measure.Result(out, name+"/p50", measure.Ms(l.P50), "ms")
	measure.Result(out, name+"/p99", measure.Ms(l.P99), "ms")
	return nil
}
