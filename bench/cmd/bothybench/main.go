// Command bothybench runs one of bothy's benchmark scenarios once and prints its measurements as
// "RESULT<TAB>name<TAB>value<TAB>unit" lines, which bench/run collects over several repetitions
// (each in a fresh process) into the target-versus-measured table. Everything it measures runs
// on real SQLite files in a temp directory (TMPDIR, default /tmp), or on PostgreSQL (-engine).
//
//	bothybench driver-rate -driver modernc -per-commit 64 -duration 2s
//	bothybench driver-start -driver ncruces
//	bothybench driver-rss -driver ncruces -writes 20000
//	bothybench storage-rate -writers 256 -commit-delay 2ms -max-batch 1
//	bothybench storage-latency -rate 1000 -duration 5s
//	bothybench http-closed -bin bench/out/bothy -clients 32 -warmup 1s -duration 5s
//	bothybench http-open -bin bench/out/bothy -rate 1000 -warmup 1s -duration 10s
//	bothybench serve-start -bin bench/out/bothy -starts 10
//	bothybench storage-rate -engine postgres -events-only -writers 8 -duration 2s
//	bothybench http-closed -engine postgres -bin bench/out/bothy -clients 32
//	bothybench gateway-commit -bin bench/out/bothy -clients 200 -rate 500
//	bothybench gateway-fanout -bin bench/out/bothy -clients 1000 -rate 250
//	bothybench gateway-idle -bin bench/out/bothy -connections 10000
//	bothybench gateway-catchup -bin bench/out/bothy -messages 20000 -events 1000 -repeats 200
//	bothybench gateway-nodes -engine postgres -bin bench/out/bothy -clients 50 -rate 200
//	bothybench agents-invoke -bin bench/out/bothy -rate 200 -every 5
//	bothybench agents-runs -bin bench/out/bothy -clients 100 -runs 8
//	bothybench authz-warm -n 1000000
//	bothybench console -bin bench/out/bothy -messages 10000 -samples 400
//
// The http-…, serve-…, gateway-… and agents-… scenarios run a `bothy serve` binary (-bin, built by
// bench/run with `go build -o bench/out/bothy .`) as a child process on a temp data directory and
// loopback ports, and load it from this process (gateway-nodes runs two).
//
// With -engine postgres the storage-…, http-… and gateway-… scenarios run on a fresh database
// (CREATE DATABASE, dropped at the end) of the PostgreSQL cluster that -postgres or
// $BOTHY_BENCH_POSTGRES_URL (else $BOTHY_TEST_POSTGRES_URL) names, a superuser's URL; bench/run
// starts a throwaway cluster with .ci/pg when neither is set. The server is migrated with
// `bothy migrate up` and started with --set database.driver=postgres --set
// database.url_ref=env:DATABASE_URL. When the cluster's processes are in this machine's /proc,
// their CPU time per operation is reported too (…/postgres-cpu).
//
// It holds no figure of its own: a scenario that fails prints its error and exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	agentsbench "bothy.dev/bothy/bench/agents"
	authzbench "bothy.dev/bothy/bench/authz"
	consolebench "bothy.dev/bothy/bench/console"
	driverbench "bothy.dev/bothy/bench/driver"
	gatewaybench "bothy.dev/bothy/bench/gateway"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/bench/internal/pgcluster"
	servebench "bothy.dev/bothy/bench/serve"
	storagebench "bothy.dev/bothy/bench/storage"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
)

// scenario runs with its own flags and writes RESULT lines to out.
type scenario struct {
	about string
	run   func(ctx context.Context, args []string, out io.Writer) error
}

// scenarios are the benchmarks.
var scenarios = map[string]scenario{
	"driver-rate":        {"message-create writes/s through one SQLite driver (bench/driver)", driverRate},
	"driver-start":       {"open-to-first-query of a driver, cold, in a fresh child process", driverStart},
	"driver-start-child": {"(internal) the child of driver-start", driverStartChild},
	"driver-rss":         {"RSS growth of a process using a driver (1 writer, 4 readers)", driverRSS},
	"storage-rate":       {"durable events/s through storage.DB.Do from many writers (bench/storage)", storageRate},
	"storage-latency":    {"latency of storage.DB.Do at a fixed offered rate", storageLatency},
	"http-closed":        {"messages/s over HTTP from clients posting back to back to a real bothy serve", httpClosed},
	"http-open":          {"latency of message create over HTTP at a fixed offered rate (open loop)", httpOpen},
	"serve-start":        {"exec to /readyz 200 of bothy serve, on empty and existing data dirs; RSS at ready and idle", serveStart},
	"gateway-commit":     {"commit → client latency: clients live on every channel, messages posted open loop (bench/gateway)", gatewayCommit},
	"gateway-fanout":     {"fan-out to clients in one channel: delivered rate per client and latency (bench/gateway)", gatewayFanout},
	"gateway-idle":       {"server RSS per idle, identified gateway connection (bench/gateway)", gatewayIdle},
	"gateway-catchup":    {"identify with a cursor to catchup.complete, replaying N visible events (bench/gateway)", gatewayCatchup},
	"gateway-nodes":      {"PostgreSQL, two serve --role=api nodes: post on node A, clients on node B (bench/gateway)", gatewayNodes},
	"agents-invoke":      {"message mentioning an agent → the agent's agent.invocation on its gateway consumer (bench/agents)", agentsInvoke},
	"agents-runs":        {"an agent's run patch → run.updated at every client focused on the thread (bench/agents)", agentsRuns},
	"authz-warm":         {"delivery decision from the warm permission cache, p50/p99/max (bench/authz)", authzWarm},
	"console":            {"console pages' render p99 at the client, and the chat view's first-load bytes (bench/console)", consolePages},
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
	d, err := driverbench.ByName(*name)
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
	run, err := driverbench.Rate(ctx, d, dir, *per, *dur)
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
	d, err := driverbench.ByName(*name)
	if err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	path := filepath.Join(dir, "start.db")
	db, _, err := driverbench.Create(ctx, d, path)
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
	d, err := driverbench.ByName(*name)
	if err != nil {
		return err
	}
	took, err := driverbench.OpenToFirstQuery(ctx, d, *path)
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
	d, err := driverbench.ByName(*name)
	if err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	grew, err := driverbench.RSSGrowth(ctx, d, dir, *writes, *readers)
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
	engine      *engine.Name
	pgURL       *string
}

func addStoreFlags(fs *flag.FlagSet) storeFlags {
	return storeFlags{
		maxBatch:    fs.Int("max-batch", 0, "storage.Options.MaxBatch (0: the store's default; 1 turns group commit off)"),
		commitDelay: fs.Duration("commit-delay", 0, "storage.Options.BenchCommitDelay: a SIMULATED slow-disk commit cost slept before each COMMIT"),
		eventsOnly:  fs.Bool("events-only", false, "only append the event: no thread read, message row or thread count"),
		engine:      (*engine.Name)(fs.String("engine", string(engine.SQLite), "sqlite (a temp file) or postgres (a fresh database on the -postgres cluster)")),
		pgURL:       postgresFlag(fs),
	}
}

// postgresFlag is the cluster of the PostgreSQL scenarios.
func postgresFlag(fs *flag.FlagSet) *string {
	return fs.String("postgres", "", "PostgreSQL cluster URL of a user who may create databases (default: $"+pgcluster.EnvURL+", then $BOTHY_TEST_POSTGRES_URL)")
}

// connect connects to the cluster of the -postgres flag or the environment.
func connect(ctx context.Context, flagValue string) (*pgcluster.Cluster, error) {
	u, err := pgcluster.URL(flagValue)
	if err != nil {
		return nil, err
	}
	return pgcluster.Connect(ctx, u)
}

// open opens the store of a storage scenario; close closes it and whatever it needed.
func (f storeFlags) open(ctx context.Context) (s *storagebench.Store, close func(), err error) {
	o := storage.Options{MaxBatch: *f.maxBatch, BenchCommitDelay: *f.commitDelay}
	switch *f.engine {
	case engine.SQLite:
		dir, clean, err := tempDir()
		if err != nil {
			return nil, nil, err
		}
		if s, err = storagebench.Open(ctx, dir, o, *f.eventsOnly); err != nil {
			clean()
			return nil, nil, err
		}
		return s, func() { s.Close(); clean() }, nil
	case engine.Postgres:
		c, err := connect(ctx, *f.pgURL)
		if err != nil {
			return nil, nil, err
		}
		if s, err = storagebench.OpenPostgres(ctx, c, o, *f.eventsOnly); err != nil {
			c.Close()
			return nil, nil, err
		}
		return s, func() {
			if err := s.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "bothybench: %v\n", err)
			}
			c.Close()
		}, nil
	default:
		return nil, nil, fmt.Errorf("-engine %q: sqlite or postgres", *f.engine)
	}
}

// label names a storage run by what differs from the default: group commit on, no delay,
// message rows written. On PostgreSQL the Unit of Work names it: commit-phase (the event alone)
// or message-create.
func (f storeFlags) label() string {
	var parts []string
	if *f.engine == engine.Postgres {
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
	} else if *f.engine != engine.Postgres || *f.maxBatch > 1 {
		parts = append(parts, "group-commit")
		if *f.maxBatch > 1 {
			parts[len(parts)-1] += fmt.Sprintf("(max-batch=%d)", *f.maxBatch)
		}
	}
	if *f.eventsOnly && *f.engine != engine.Postgres {
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
	s, closeStore, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	run, err := s.Rate(ctx, *writers, *warmup, *dur)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("storage/%s/%d-writers", f.label(), *writers)
	measure.Result(out, name, run.PerSecond(), "events/s")
	measure.Result(out, name+"/cpu", run.CPUPerOp(), "µs/event")
	if run.DBRead {
		measure.Result(out, name+"/postgres-cpu", run.DBCPUPerOp(), "µs/event")
	}
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
	s, closeStore, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	if _, err := s.Latency(ctx, *rate, *warmup); err != nil {
		return err
	}
	l, err := s.Latency(ctx, *rate, *dur)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("storage/%s/latency@%g/s", f.label(), *rate)
	measure.Result(out, name+"/p50", measure.Ms(l.P50), "ms")
	measure.Result(out, name+"/p99", measure.Ms(l.P99), "ms")
	return nil
}

// serverFlags are the flags of the scenarios that run bothy serve.
type serverFlags struct {
	bin              *string
	people, channels *int
	args             *string
	engine           *engine.Name
	pgURL            *string
}

func addServerFlags(fs *flag.FlagSet) serverFlags {
	return serverFlags{
		bin:      fs.String("bin", "bench/out/bothy", "the bothy binary to run (go build -o bench/out/bothy .)"),
		people:   fs.Int("people", 4, "people who post (each with post on every channel; client i posts as person i mod people)"),
		channels: fs.Int("channels", 4, "channels whose main threads the messages rotate over"),
		args:     fs.String("serve-args", "", "more arguments for bothy serve, space-separated (e.g. \"--set database.max_batch=64\")"),
		engine:   (*engine.Name)(fs.String("engine", string(engine.SQLite), "sqlite (serve's own file in a temp data dir) or postgres (a fresh database on the -postgres cluster, migrated with bothy migrate up)")),
		pgURL:    postgresFlag(fs),
	}
}

// server is a running bothy serve, prepared for posting.
type server struct {
	*servebench.Server
	target httpbench.Target
	client *http.Client
	cpu    httpbench.CPUReaders
	// stop stops the server and then drops its database (PostgreSQL).
	stop func() error
}

// pgURLVar is the variable database.url_ref names for serve and migrate up: not BOTHY_…, which
// serve would take as a configuration key.
const pgURLVar = "DATABASE_URL"

// start runs bothy serve on a fresh data directory in dir (on PostgreSQL also on a fresh
// database, migrated with `bothy migrate up` first, as an operator does) and prepares it for
// posting.
func (f serverFlags) start(ctx context.Context, dir string, conns int) (*server, error) {
	o := servebench.Options{Bin: *f.bin, DataDir: filepath.Join(dir, "data"), WantSetupCode: true, Args: strings.Fields(*f.args)}
	var cpu httpbench.CPUReaders
	dropDB := func() error { return nil }
	switch *f.engine {
	case engine.SQLite:
	case engine.Postgres:
		c, err := connect(ctx, *f.pgURL)
		if err != nil {
			return nil, err
		}
		d, err := c.NewDatabase(ctx)
		if err != nil {
			c.Close()
			return nil, err
		}
		dropDB = func() error { defer c.Close(); return d.Drop(ctx) }
		if _, err := c.CPU(); err == nil {
			cpu.DB = c.CPU
		}
		o.Args = append([]string{"--set", "database.driver=postgres", "--set", "database.url_ref=env:" + pgURLVar}, o.Args...)
		o.Env = []string{pgURLVar + "=" + d.URL}
		if err := servebench.MigrateUp(ctx, o); err != nil {
			return nil, errors.Join(err, dropDB())
		}
	default:
		return nil, fmt.Errorf("-engine %q: sqlite or postgres", *f.engine)
	}
	s, err := servebench.Start(ctx, o)
	if err != nil {
		return nil, errors.Join(err, dropDB())
	}
	cpu.Server = s.CPU
	c := httpbench.Client(conns)
	t, err := httpbench.Prepare(ctx, c, s.Public, s.SetupCode, *f.people, *f.channels)
	if err != nil {
		err = fmt.Errorf("prepare: %w\n%s", err, s.Logs())
		return nil, errors.Join(err, s.Stop(), dropDB())
	}
	return &server{Server: s, target: t, client: c, cpu: cpu, stop: func() error {
		err := s.Stop()
		return errors.Join(err, dropDB())
	}}, nil
}

// prefix is where the engine goes in a result's name: "" on SQLite (the names the table had
// before PostgreSQL), "postgres/" on PostgreSQL.
func (f serverFlags) prefix() string {
	if *f.engine == engine.SQLite {
		return ""
	}
	return string(*f.engine) + "/"
}

// stopped stops s and returns err, or the error of the stop when err is nil.
func stopped(s *server, err error) error {
	if stopErr := s.stop(); err == nil {
		err = stopErr
	}
	return err
}

func httpClosed(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("http-closed", flag.ContinueOnError)
	f := addServerFlags(fs)
	clients := fs.Int("clients", 32, "concurrent clients, each posting back to back on its own keep-alive connection")
	warmup := fs.Duration("warmup", time.Second, "post this long before measuring")
	dur := fs.Duration("duration", 5*time.Second, "how long to measure")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	s, err := f.start(ctx, dir, *clients)
	if err != nil {
		return err
	}
	r, err := httpbench.Closed(ctx, s.client, s.target, *clients, *warmup, *dur, s.cpu)
	if err = stopped(s, err); err != nil {
		return err
	}
	name := fmt.Sprintf("http/%smessage-create/closed-loop/%d-clients", f.prefix(), *clients)
	measure.Result(out, name, r.PerSecond(), "messages/s")
	measure.Result(out, name+"/p50", measure.Ms(r.Latencies.P50), "ms")
	measure.Result(out, name+"/p99", measure.Ms(r.Latencies.P99), "ms")
	measure.Result(out, name+"/server-cpu", r.ServerCPUPerOp(), "µs/message")
	if s.cpu.DB != nil {
		measure.Result(out, name+"/postgres-cpu", r.DBCPUPerOp(), "µs/message")
	}
	measure.Result(out, name+"/loadgen-cpu", r.LoadCPUPerOp(), "µs/message")
	return nil
}

func httpOpen(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("http-open", flag.ContinueOnError)
	f := addServerFlags(fs)
	rate := fs.Float64("rate", 1000, "messages offered per second, each at its scheduled time")
	workers := fs.Int("workers", 64, "clients that send the due requests (a due request waits while all are busy)")
	warmup := fs.Duration("warmup", time.Second, "offer at the rate this long before measuring")
	dur := fs.Duration("duration", 10*time.Second, "how long to measure")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	s, err := f.start(ctx, dir, *workers)
	if err != nil {
		return err
	}
	r, err := httpbench.Open(ctx, s.client, s.target, *rate, *workers, *warmup, *dur, s.cpu)
	if err = stopped(s, err); err != nil {
		return err
	}
	name := fmt.Sprintf("http/%smessage-create/open-loop@%g/s", f.prefix(), *rate)
	measure.Result(out, name+"/p50", measure.Ms(r.Latencies.P50), "ms")
	measure.Result(out, name+"/p99", measure.Ms(r.Latencies.P99), "ms")
	measure.Result(out, name+"/max", measure.Ms(r.Latencies.Max), "ms")
	measure.Result(out, name+"/server-cpu", r.ServerCPUPerOp(), "µs/message")
	if s.cpu.DB != nil {
		measure.Result(out, name+"/postgres-cpu", r.DBCPUPerOp(), "µs/message")
	}
	return nil
}

// serveStart prints one line per start (bench/run's median and range then cover every start
// of every repetition): starts on fresh data directories, then on one that holds an owner,
// people, channels and messages, then the memory of one idle process of each kind.
func serveStart(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("serve-start", flag.ContinueOnError)
	f := addServerFlags(fs)
	starts := fs.Int("starts", 10, "starts of each kind")
	idle := fs.Duration("idle", time.Second, "how long the idle process waits before its second RSS reading")
	messages := fs.Int("messages", 2000, "messages in the existing data directory")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *f.engine != engine.SQLite {
		return errors.New("serve-start measures serve on its own SQLite data dir: -engine sqlite only")
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	o := servebench.Options{Bin: *f.bin, Args: strings.Fields(*f.args)}

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
	s, err := f.start(ctx, dir, 8)
	if err != nil {
		return err
	}
	if err := stopped(s, httpbench.Seed(ctx, s.client, s.target, *messages)); err != nil {
		return err
	}
	existing := filepath.Join(dir, "data")
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

// gatewayFlags are the flags of the gateway scenarios: the server's, and the instance's people
// and channels.
type gatewayFlags struct {
	bin, args, pgURL *string
	engine           *engine.Name
	people, channels *int
}

func addGatewayFlags(fs *flag.FlagSet, people, channels int) gatewayFlags {
	return gatewayFlags{
		bin:      fs.String("bin", "bench/out/bothy", "the bothy binary to run (go build -o bench/out/bothy .)"),
		args:     fs.String("serve-args", "", "more arguments for bothy serve, space-separated"),
		engine:   (*engine.Name)(fs.String("engine", string(engine.SQLite), "sqlite (serve's own file in a temp data dir) or postgres (a fresh database on the -postgres cluster, migrated with bothy migrate up)")),
		pgURL:    postgresFlag(fs),
		people:   fs.Int("people", people, "people to log in (two argon2id hashes each); client k connects as person k mod people"),
		channels: fs.Int("channels", channels, "channels (main threads) the messages rotate over"),
	}
}

func (f gatewayFlags) prefix() string {
	if *f.engine == engine.SQLite {
		return ""
	}
	return string(*f.engine) + "/"
}

// multiNodeArgs are what each of several api nodes on one PostgreSQL database is started with.
var multiNodeArgs = []string{"--set", "cluster.mode=multi", "--role=api"}

// nodes are running bothy serve processes on one database, prepared over the first (node A).
type nodes struct {
	servers []*servebench.Server
	opts    []servebench.Options
	inst    gatewaybench.Instance
	client  *http.Client
	dropDB  func() error
}

// startNodes starts n serve processes (n > 1: PostgreSQL only, each with multiNodeArgs) on a
// fresh database and prepares the instance as layout says over the first.
func (f gatewayFlags) startNodes(ctx context.Context, dir string, n int, layout gatewaybench.Layout) (*nodes, error) {
	ns := &nodes{dropDB: func() error { return nil }, client: httpbench.Client(64)}
	var base servebench.Options
	// The fleet connects from one address, with up to hundreds of connections per person: the
	// gateway's connection bounds are lifted (-serve-args may set them again).
	base.Bin, base.Args = *f.bin, append([]string{"--set", "gateway.max_connections_per_principal=0",
		"--set", "gateway.max_connections_per_address=0"}, strings.Fields(*f.args)...)
	switch *f.engine {
	case engine.SQLite:
		if n > 1 {
			return nil, errors.New("several nodes share one PostgreSQL database: -engine postgres")
		}
	case engine.Postgres:
		c, err := connect(ctx, *f.pgURL)
		if err != nil {
			return nil, err
		}
		d, err := c.NewDatabase(ctx)
		if err != nil {
			c.Close()
			return nil, err
		}
		ns.dropDB = func() error { defer c.Close(); return d.Drop(ctx) }
		base.Args = append([]string{"--set", "database.driver=postgres", "--set", "database.url_ref=env:" + pgURLVar}, base.Args...)
		base.Env = []string{pgURLVar + "=" + d.URL}
		if err := servebench.MigrateUp(ctx, base); err != nil {
			return nil, errors.Join(err, ns.dropDB())
		}
		if n > 1 {
			base.Args = append(base.Args, multiNodeArgs...)
		}
	default:
		return nil, fmt.Errorf("-engine %q: sqlite or postgres", *f.engine)
	}
	for k := range n {
		o := base
		o.DataDir = filepath.Join(dir, fmt.Sprintf("data-%d", k))
		o.WantSetupCode = k == 0
		ns.opts = append(ns.opts, o)
	}
	// Node A first, alone: each process that finds no owner makes a new setup code.
	if err := ns.start(ctx, ns.opts[:1]); err != nil {
		return nil, errors.Join(err, ns.dropDB())
	}
	inst, err := gatewaybench.Prepare(ctx, ns.client, ns.servers[0].Public, ns.servers[0].SetupCode, layout)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("prepare: %w\n%s", err, ns.servers[0].Logs()), ns.stop())
	}
	ns.inst = inst
	if err := ns.start(ctx, ns.opts[1:]); err != nil {
		return nil, errors.Join(err, ns.stop())
	}
	return ns, nil
}

// start starts the nodes of opts, one after the other.
func (ns *nodes) start(ctx context.Context, opts []servebench.Options) error {
	for _, o := range opts {
		s, err := servebench.Start(ctx, o)
		if err != nil {
			return err
		}
		ns.servers = append(ns.servers, s)
	}
	return nil
}

// restart stops every node in order and starts them again on the same data, without a setup
// code: the people's session tokens stay valid.
func (ns *nodes) restart(ctx context.Context) error {
	if err := ns.stopServers(); err != nil {
		return err
	}
	for k := range ns.opts {
		ns.opts[k].WantSetupCode = false
	}
	if err := ns.start(ctx, ns.opts); err != nil {
		return err
	}
	ns.inst.Base = ns.servers[0].Public
	return nil
}

// logs are the last lines of every node, for an error message.
func (ns *nodes) logs() string {
	var b strings.Builder
	for k, s := range ns.servers {
		fmt.Fprintf(&b, "node %d:\n%s\n", k, s.Logs())
	}
	return b.String()
}

func (ns *nodes) stopServers() error {
	var errs []error
	for _, s := range ns.servers {
		errs = append(errs, s.Stop())
	}
	ns.servers = nil
	return errors.Join(errs...)
}

// stop stops every node, then drops the database (PostgreSQL).
func (ns *nodes) stop() error {
	err := ns.stopServers()
	ns.client.CloseIdleConnections()
	return errors.Join(err, ns.dropDB())
}

// deliverFlags are the flags of the delivery scenarios.
type deliverFlags struct {
	clients, workers        *int
	rate                    *float64
	warmup, duration, drain *time.Duration
	cpuProfile              *string
}

func addDeliverFlags(fs *flag.FlagSet, clients int, rate float64) deliverFlags {
	return deliverFlags{
		clients:  fs.Int("clients", clients, "gateway clients, each on its own connection and session"),
		workers:  fs.Int("workers", 32, "the poster's HTTP clients (a due message waits while all are busy)"),
		rate:     fs.Float64("rate", rate, "messages offered per second, each at its scheduled time (open loop)"),
		warmup:   fs.Duration("warmup", time.Second, "offer at the rate this long before measuring"),
		duration: fs.Duration("duration", 10*time.Second, "how long to measure"),
		drain:    fs.Duration("drain", 10*time.Second, "how long the clients may take after the last create to receive everything"),
		cpuProfile: fs.String("cpuprofile", "", "write a CPU profile of this process (the poster and the clients, not the server) "+
			"from the first post to the last receipt to this file"),
	}
}

func (d deliverFlags) run(ctx context.Context, ns *nodes, postNode, clientNode int) (gatewaybench.Delivered, error) {
	if *d.cpuProfile != "" {
		f, err := os.Create(*d.cpuProfile)
		if err != nil {
			return gatewaybench.Delivered{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return gatewaybench.Delivered{}, err
		}
		defer pprof.StopCPUProfile()
	}
	r, err := gatewaybench.RunDeliver(ctx, ns.client, ns.inst, gatewaybench.Deliver{
		PostBase: ns.servers[postNode].Public, ClientBase: ns.servers[clientNode].Public,
		Clients: *d.clients, Rate: *d.rate, Warmup: *d.warmup, Duration: *d.duration, Workers: *d.workers, Drain: *d.drain,
		ServerCPU: ns.servers[clientNode].CPU,
	})
	if err != nil {
		return r, fmt.Errorf("%w\n%s", err, ns.logs())
	}
	return r, nil
}

// deliveryResults writes the latency rows of a delivery run and its information rows.
func deliveryResults(out io.Writer, name string, r gatewaybench.Delivered) {
	measure.Result(out, name+"/p50", measure.Ms(r.Latency.P50), "ms")
	measure.Result(out, name+"/p99", measure.Ms(r.Latency.P99), "ms")
	measure.Result(out, name+"/max", measure.Ms(r.Latency.Max), "ms")
	measure.Result(out, name+"/logged-to-client/p50", measure.Ms(r.FromLog.P50), "ms")
	measure.Result(out, name+"/logged-to-client/p99", measure.Ms(r.FromLog.P99), "ms")
	measure.Result(out, name+"/create-p99", measure.Ms(r.Offered.Create.P99), "ms")
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	measure.Result(out, name+"/server-cpu", us(r.ServerCPU), "µs/message")
	measure.Result(out, name+"/loadgen-cpu", us(r.LoadCPU), "µs/message")
	// bench/gateway's clients do not reconnect: a dropped connection fails the scenario. The row
	// stays, always 0, so that the table keeps its names.
	measure.Result(out, name+"/reconnects", 0, "reconnects")
}

// gatewayCommit: every client may read every channel, so each message reaches all of them.
func gatewayCommit(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gateway-commit", flag.ContinueOnError)
	f := addGatewayFlags(fs, 20, 4)
	d := addDeliverFlags(fs, 200, 500)
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	ns, err := f.startNodes(ctx, dir, 1, gatewaybench.Layout{Channels: *f.channels, People: *f.people})
	if err != nil {
		return err
	}
	r, err := d.run(ctx, ns, 0, 0)
	if err = errors.Join(err, ns.stop()); err != nil {
		return err
	}
	deliveryResults(out, fmt.Sprintf("gateway/%scommit-to-client/%d-clients@%g/s", f.prefix(), *d.clients, *d.rate), r)
	return nil
}

// gatewayFanout: every client in one channel; the figure is the slowest client's rate.
func gatewayFanout(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gateway-fanout", flag.ContinueOnError)
	f := addGatewayFlags(fs, 50, 1)
	d := addDeliverFlags(fs, 1000, 250)
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	ns, err := f.startNodes(ctx, dir, 1, gatewaybench.Layout{Channels: *f.channels, People: *f.people})
	if err != nil {
		return err
	}
	r, err := d.run(ctx, ns, 0, 0)
	if err = errors.Join(err, ns.stop()); err != nil {
		return err
	}
	name := fmt.Sprintf("gateway/%sfan-out/%d-clients", f.prefix(), *d.clients)
	measure.Result(out, name+"/delivered-per-client", r.MinRate, "messages/s")
	deliveryResults(out, name, r)
	return nil
}

// gatewayNodes: PostgreSQL, two api nodes on one database; the poster posts through node A,
// the clients follow node B.
func gatewayNodes(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gateway-nodes", flag.ContinueOnError)
	f := addGatewayFlags(fs, 10, 4)
	d := addDeliverFlags(fs, 50, 200)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *f.engine != engine.Postgres {
		return errors.New("two nodes share one PostgreSQL database: -engine postgres")
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	ns, err := f.startNodes(ctx, dir, 2, gatewaybench.Layout{Channels: *f.channels, People: *f.people})
	if err != nil {
		return err
	}
	r, err := d.run(ctx, ns, 0, 1)
	if err = errors.Join(err, ns.stop()); err != nil {
		return err
	}
	deliveryResults(out, "gateway/postgres/node-a-to-node-b", r)
	return nil
}

// gatewayIdle prepares the instance, restarts the server (so that the argon2id garbage of the
// logins is not in its heap), reads its RSS, opens the connections and reads it again.
func gatewayIdle(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gateway-idle", flag.ContinueOnError)
	f := addGatewayFlags(fs, 50, 4)
	conns := fs.Int("connections", 10000, "identified connections to open (person k mod people, one session each)")
	parallel := fs.Int("parallel", 64, "connections being opened at once")
	settle := fs.Duration("settle", time.Second, "wait after the restart before the first RSS reading")
	hold := fs.Duration("hold", 2*time.Second, "wait after the last catchup.complete before the second reading")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	ns, err := f.startNodes(ctx, dir, 1, gatewaybench.Layout{Channels: *f.channels, People: *f.people})
	if err != nil {
		return err
	}
	if err := ns.restart(ctx); err != nil {
		return errors.Join(err, ns.stop())
	}
	r, err := gatewaybench.RunIdle(ctx, ns.inst.Base, ns.inst.Tokens, gatewaybench.Idle{
		Connections: *conns, ConnectParallel: *parallel, Settle: *settle, Hold: *hold, RSS: ns.servers[0].RSS})
	if err = errors.Join(err, ns.stop()); err != nil {
		return err
	}
	name := fmt.Sprintf("gateway/%sidle/%d-connections", f.prefix(), *conns)
	measure.Result(out, name+"/rss-per-conn", r.PerConn()/1024, "KiB")
	measure.Result(out, name+"/rss-before", measure.MiB(r.Before), "MiB")
	measure.Result(out, name+"/rss-after", measure.MiB(r.After), "MiB")
	measure.Result(out, name+"/connect-rate", float64(r.Connections)/r.ConnectTime.Seconds(), "connections/s")
	return nil
}

// gatewayCatchup seeds the log, then identifies again and again with a cursor that leaves
// exactly -events visible events to replay, as a reader who may see half of the channels.
func gatewayCatchup(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gateway-catchup", flag.ContinueOnError)
	f := addGatewayFlags(fs, 1, 8)
	messages := fs.Int("messages", 20000, "messages to post first, round-robin over the channels")
	events := fs.Int("events", 1000, "visible events each replay holds")
	repeats := fs.Int("repeats", 200, "identifies, one after the other")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	ns, err := f.startNodes(ctx, dir, 1, gatewaybench.CatchUpLayout(*f.channels))
	if err != nil {
		return err
	}
	var readable []string
	for c, id := range ns.inst.ChannelIDs {
		if c%2 == 0 {
			readable = append(readable, id)
		}
	}
	err = gatewaybench.Seed(ctx, ns.client, ns.inst, *messages)
	var r gatewaybench.CaughtUp
	if err == nil {
		r, err = gatewaybench.RunCatchUp(ctx, ns.inst.Base, ns.inst.Tokens[0], readable, *events, *repeats, ns.servers[0].CPU)
	}
	if err = errors.Join(err, ns.stop()); err != nil {
		return err
	}
	name := fmt.Sprintf("gateway/%scatch-up/%d-events", f.prefix(), *events)
	measure.Result(out, name+"/p50", measure.Ms(r.ToComplete.P50), "ms")
	measure.Result(out, name+"/p99", measure.Ms(r.ToComplete.P99), "ms")
	measure.Result(out, name+"/max", measure.Ms(r.ToComplete.Max), "ms")
	measure.Result(out, name+"/to-last-event/p99", measure.Ms(r.ToLast.P99), "ms")
	measure.Result(out, name+"/server-cpu", measure.Ms(r.ServerCPU), "ms/catch-up")
	measure.Result(out, name+"/loadgen-cpu", measure.Ms(r.LoadCPU), "ms/catch-up")
	return nil
}

// authzWarm runs bench/authz's measurement in this fresh process.
func authzWarm(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("authz-warm", flag.ContinueOnError)
	n := fs.Int("n", 1_000_000, "decisions sampled, alone and again while a tail observes grant changes")
	if err := parse(fs, args); err != nil {
		return err
	}
	return authzbench.Run(ctx, out, *n)
}

// consolePages fills a real bothy serve with -messages messages over the REST API, signs the
// owner in through the console's form and measures the console: each page's render time
// (sequential GETs timed at the client, p50/p99 per page and the worst p99), then what the chat
// view's first load transfers to a browser that accepts gzip (HTML, stylesheets, scripts).
func consolePages(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	f := addServerFlags(fs)
	messages := fs.Int("messages", 10000, "messages in the instance, spread over the channels' main threads")
	agents := fs.Int("agents", 3, "agents, each with post on every channel")
	warmup := fs.Int("warmup", 20, "GETs of each page before measuring")
	samples := fs.Int("samples", 400, "measured GETs of each page")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	s, err := f.start(ctx, dir, 8)
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
		err = fmt.Errorf("%w\n%s", err, s.Logs())
	}
	if err = stopped(s, err); err != nil {
		return err
	}
	name := fmt.Sprintf("console/%srender@%d-messages", f.prefix(), *messages)
	for _, r := range renders {
		measure.Result(out, name+"/"+r.Page.Name+"/p50", measure.Ms(r.Latencies.P50), "ms")
		measure.Result(out, name+"/"+r.Page.Name+"/p99", measure.Ms(r.Latencies.P99), "ms")
	}
	w := consolebench.Worst(renders)
	fmt.Fprintf(os.Stderr, "console: the worst p99 is %s's (%s, %d bytes)\n", w.Page.Name, w.Page.Path, w.Bytes)
	measure.Result(out, name+"/worst-page/p99", measure.Ms(w.Latencies.P99), "ms")
	name = fmt.Sprintf("console/%sfirst-load@%d-messages/chat-view", f.prefix(), *messages)
	kib := func(b int64) float64 { return float64(b) / 1024 }
	measure.Result(out, name, kib(load.Total()), "KiB")
	measure.Result(out, name+"/html", kib(load.HTML), "KiB")
	measure.Result(out, name+"/css", kib(load.CSS), "KiB")
	measure.Result(out, name+"/js", kib(load.JS), "KiB")
	measure.Result(out, name+"/decoded", kib(load.Decoded), "KiB")
	return nil
}

// invokeLayout grants every person invoke on every channel: their mentions of the agent make
// runs.
func invokeLayout(channels, people int) gatewaybench.Layout {
	return gatewaybench.Layout{Channels: channels, People: people, Grant: func(int, int) string { return "invoke" }}
}

// startAgent starts the server, prepares the instance with layout and creates the agent with
// post on every channel.
func (f gatewayFlags) startAgent(ctx context.Context, dir string, layout gatewaybench.Layout) (*nodes, agentsbench.Agent, error) {
	ns, err := f.startNodes(ctx, dir, 1, layout)
	if err != nil {
		return nil, agentsbench.Agent{}, err
	}
	a, err := agentsbench.CreateAgent(ctx, ns.client, ns.inst.Base, ns.inst.Owner, ns.inst.ChannelIDs, "post")
	if err != nil {
		return nil, a, errors.Join(fmt.Errorf("create the agent: %w", err), ns.stop())
	}
	return ns, a, nil
}

// agentsInvoke: the agent follows the gateway as its consumer; people post open loop, one
// message in -every mentioning the agent; receipt of each agent.invocation − its message's due.
func agentsInvoke(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("agents-invoke", flag.ContinueOnError)
	f := addGatewayFlags(fs, 4, 4)
	rate := fs.Float64("rate", 200, "messages offered per second, each at its scheduled time (open loop)")
	every := fs.Int("every", 5, "one message in this many mentions the agent")
	warmup := fs.Duration("warmup", 2*time.Second, "offer at the rate this long before measuring")
	dur := fs.Duration("duration", 20*time.Second, "how long to measure")
	workers := fs.Int("workers", 32, "the poster's HTTP clients")
	drain := fs.Duration("drain", 10*time.Second, "how long the agent may take after the last create to receive every invocation")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	ns, a, err := f.startAgent(ctx, dir, invokeLayout(*f.channels, *f.people))
	if err != nil {
		return err
	}
	r, err := agentsbench.RunInvoke(ctx, ns.client, ns.inst, a, agentsbench.Invoke{
		Rate: *rate, Every: *every, Warmup: *warmup, Duration: *dur, Workers: *workers, Drain: *drain, ServerCPU: ns.servers[0].CPU})
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, ns.logs())
	}
	if err = errors.Join(err, ns.stop()); err != nil {
		return err
	}
	name := fmt.Sprintf("agents/%smessage-to-invocation@%g/s-1-in-%d", f.prefix(), *rate, *every)
	measure.Result(out, name+"/p50", measure.Ms(r.Latency.P50), "ms")
	measure.Result(out, name+"/p99", measure.Ms(r.Latency.P99), "ms")
	measure.Result(out, name+"/max", measure.Ms(r.Latency.Max), "ms")
	measure.Result(out, name+"/logged-to-agent/p99", measure.Ms(r.FromLog.P99), "ms")
	measure.Result(out, name+"/create-p99", measure.Ms(r.Create.P99), "ms")
	measure.Result(out, name+"/invocations", float64(r.Triggers), "invocations")
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	measure.Result(out, name+"/server-cpu", us(r.ServerCPU), "µs/message")
	measure.Result(out, name+"/loadgen-cpu", us(r.LoadCPU), "µs/message")
	return nil
}

// agentsRuns: clients focused on one thread, the agent patching several runs there at once;
// PATCH of version v → the first run.updated with a version ≥ v at each client.
func agentsRuns(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("agents-runs", flag.ContinueOnError)
	f := addGatewayFlags(fs, 20, 1)
	clients := fs.Int("clients", 100, "clients focused on the runs' thread (person k mod people)")
	runs := fs.Int("runs", 8, "runs patched at once, all in one thread")
	patchMin := fs.Duration("patch-min", 20*time.Millisecond, "least time between two patches of a run")
	patchMax := fs.Duration("patch-max", 50*time.Millisecond, "most time between two patches of a run")
	appendBytes := fs.Int("append", 24, "bytes of output_append per patch")
	background := fs.Float64("background", 0, "ordinary messages per second into the thread meanwhile (0: none)")
	warmup := fs.Duration("warmup", 2*time.Second, "patch this long before measuring")
	dur := fs.Duration("duration", 15*time.Second, "how long to measure")
	drain := fs.Duration("drain", 10*time.Second, "how long the clients may take after the last patch to have every version")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, clean, err := tempDir()
	if err != nil {
		return err
	}
	defer clean()
	ns, a, err := f.startAgent(ctx, dir, invokeLayout(*f.channels, *f.people))
	if err != nil {
		return err
	}
	r, err := agentsbench.RunFanout(ctx, ns.client, ns.inst, a, agentsbench.Fanout{
		Thread: ns.inst.Threads[0], Clients: *clients, ConnectParallel: 32, Runs: *runs,
		PatchMin: *patchMin, PatchMax: *patchMax, AppendBytes: *appendBytes,
		Warmup: *warmup, Duration: *dur, BackgroundRate: *background, BackgroundWorkers: 8, Drain: *drain,
		ServerCPU: ns.servers[0].CPU})
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, ns.logs())
	}
	if err = errors.Join(err, ns.stop()); err != nil {
		return err
	}
	name := fmt.Sprintf("agents/%srun-patch/%d-focused-%d-runs", f.prefix(), *clients, *runs)
	if *background > 0 {
		name += fmt.Sprintf("+%gmsg/s", *background)
	}
	measure.Result(out, name+"/p50", measure.Ms(r.Latency.P50), "ms")
	measure.Result(out, name+"/p99", measure.Ms(r.Latency.P99), "ms")
	measure.Result(out, name+"/max", measure.Ms(r.Latency.Max), "ms")
	measure.Result(out, name+"/patch-p99", measure.Ms(r.Patch.P99), "ms")
	measure.Result(out, name+"/patches", float64(r.Patches)/r.Elapsed.Seconds(), "patches/s")
	measure.Result(out, name+"/frames-per-patch", r.FramesPerPatch, "frames")
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	measure.Result(out, name+"/server-cpu", us(r.ServerCPU), "µs/patch")
	measure.Result(out, name+"/loadgen-cpu", us(r.LoadCPU), "µs/patch")
	return nil
}
