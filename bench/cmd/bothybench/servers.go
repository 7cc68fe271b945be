package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	gatewaybench "bothy.dev/bothy/bench/gateway"
	httpbench "bothy.dev/bothy/bench/http"
	servebench "bothy.dev/bothy/bench/serve"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/sqlite"
)

// What the scenarios that run bothy serve share: the flags, the database, starting the
// processes and stopping them at the end.

// serving are the defaults of a scenario's server flags.
type serving struct {
	people, channels int
	// peopleUsage says what the people do, for the usage of -people.
	peopleUsage string
}

// httpServe is the instance of bench/http: 4 people with post on 4 channels.
var httpServe = &serving{people: 4, channels: 4,
	peopleUsage: "people who post (each with post on every channel; client i posts as person i mod people)"}

// gatewayServe is an instance of bench/gateway's kind.
func gatewayServe(people, channels int) *serving {
	return &serving{people: people, channels: channels,
		peopleUsage: "people to log in (two argon2id hashes each); client k connects as person k mod people"}
}

// serverFlags are the flags of the scenarios that run bothy serve, besides -engine and
// -postgres.
type serverFlags struct {
	bin, args        *string
	people, channels *int
}

func addServerFlags(fs *flag.FlagSet, d serving) serverFlags {
	return serverFlags{
		bin:      fs.String("bin", "bench/out/bothy", "the bothy binary to run (go build -o bench/out/bothy .)"),
		args:     fs.String("serve-args", "", "more arguments for bothy serve, space-separated (e.g. \"--set database.max_batch=64\")"),
		people:   fs.Int("people", d.people, d.peopleUsage),
		channels: fs.Int("channels", d.channels, "channels whose main threads the messages rotate over"),
	}
}

// pgURLVar is the variable database.url_ref names for serve and migrate up: not BOTHY_…, which
// serve would take as a configuration key.
const pgURLVar = "DATABASE_URL"

// multiNodeArgs are what each of several api nodes on one PostgreSQL database is started with.
var multiNodeArgs = []string{"--set", "cluster.mode=multi", "--role=api"}

// nodes are running bothy serve processes on one database, prepared over the first (node A).
type nodes struct {
	servers []*servebench.Server
	opts    []servebench.Options
	client  *http.Client
	// dbCPU reads the CPU time of the PostgreSQL cluster's processes, when they are in this
	// machine's /proc.
	dbCPU  httpbench.CPUReader
	dropDB func() error
	// dbURL is the PostgreSQL database's URL ("" on SQLite).
	dbURL string
	// inst is the instance of bench/gateway's kind (startGateway).
	inst gatewaybench.Instance
}

// startFirst starts node A of n bothy serve processes (n > 1: PostgreSQL only, each with
// multiNodeArgs), each on its own data directory in the run's temp dir, with args before
// -serve-args, on serve's own SQLite file or on a fresh PostgreSQL database, migrated with
// `bothy migrate up` first, as an operator does. The nodes are stopped and the database
// dropped at the end. conns bound the HTTP client's connections.
func (r *runner) startFirst(ctx context.Context, n int, args []string, conns int) (*nodes, error) {
	dir, err := r.tempDir()
	if err != nil {
		return nil, err
	}
	ns := &nodes{dropDB: func() error { return nil }, client: httpbench.Client(conns)}
	var base servebench.Options
	base.Bin, base.Args = *r.server.bin, append(args, strings.Fields(*r.server.args)...)
	switch *r.engine {
	case engine.SQLite:
		if n > 1 {
			return nil, errors.New("several nodes share one PostgreSQL database: -engine postgres")
		}
	case engine.Postgres:
		c, err := r.postgres(ctx)
		if err != nil {
			return nil, err
		}
		d, err := c.NewDatabase(ctx)
		if err != nil {
			c.Close()
			return nil, err
		}
		ns.dropDB = func() error { defer c.Close(); return d.Drop(ctx) }
		ns.dbURL = d.URL
		if _, err := c.CPU(); err == nil {
			ns.dbCPU = c.CPU
		}
		base.Args = append([]string{"--set", "database.driver=postgres", "--set", "database.url_ref=env:" + pgURLVar}, base.Args...)
		base.Env = []string{pgURLVar + "=" + d.URL}
		if err := servebench.MigrateUp(ctx, base); err != nil {
			return nil, errors.Join(err, ns.dropDB())
		}
		if n > 1 {
			base.Args = append(base.Args, multiNodeArgs...)
		}
	}
	for k := range n {
		o := base
		o.DataDir = filepath.Join(dir, fmt.Sprintf("data-%d", k))
		o.WantSetupCode = k == 0
		ns.opts = append(ns.opts, o)
	}
	// Node A first, alone: each process that finds no owner makes a new setup code.
	if err := ns.start(ctx, ns.opts[:1]); err != nil {
		return nil, errors.Join(err, ns.stop())
	}
	r.atEnd(ns.stop)
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

// seedStopped stops the one SQLite node, lets seed write into its database file (faster than
// the REST API for rows by the hundred thousand, and the rows' rules are the scenario's to
// keep), and starts it again on the same data: the people's session tokens stay valid.
func (ns *nodes) seedStopped(ctx context.Context, seed func(db *sql.DB) error) error {
	if err := ns.stopServers(); err != nil {
		return err
	}
	w, rd, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(ns.opts[0].DataDir, "bothy.db"), Synchronous: "NORMAL"})
	if err != nil {
		return err
	}
	if err := errors.Join(seed(w), w.Close(), rd.Close()); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	ns.opts[0].WantSetupCode = false
	return ns.start(ctx, ns.opts)
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

// stop stops every node, then drops the database (PostgreSQL). Once stopped, stop does
// nothing.
func (ns *nodes) stop() error {
	err := ns.stopServers()
	ns.client.CloseIdleConnections()
	drop := ns.dropDB
	ns.dropDB = func() error { return nil }
	return errors.Join(err, drop())
}

// server is a running bothy serve, prepared for posting as bench/http prepares it.
type server struct {
	*servebench.Server
	target httpbench.Target
	client *http.Client
	cpu    httpbench.CPUReaders
	// dataDir is its data directory.
	dataDir string
	// dbURL is its PostgreSQL database's URL ("" on SQLite).
	dbURL string
	// stop stops the server and then drops its database (PostgreSQL); the runner calls it at
	// the end too.
	stop func() error
}

// startServer runs one bothy serve, stopped at the end, and prepares it for posting (owner,
// people, channels).
func (r *runner) startServer(ctx context.Context, conns int) (*server, error) {
	return r.startServerWith(ctx, conns, nil)
}

// startGateway starts n nodes (n > 1: PostgreSQL only) for gateway clients, stopped at the end,
// and prepares the instance as layout says over the first.
func (r *runner) startGateway(ctx context.Context, n int, layout gatewaybench.Layout) (*nodes, error) {
	// The fleet connects from one address, with up to hundreds of connections per person: the
	// gateway's connection bounds are lifted (-serve-args may set them again).
	ns, err := r.startFirst(ctx, n, []string{"--set", "gateway.max_connections_per_principal=0",
		"--set", "gateway.max_connections_per_address=0"}, 64)
	if err != nil {
		return nil, err
	}
	inst, err := gatewaybench.Prepare(ctx, ns.client, ns.servers[0].Public, ns.servers[0].SetupCode, layout)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w\n%s", err, ns.servers[0].Logs())
	}
	ns.inst = inst
	if err := ns.start(ctx, ns.opts[1:]); err != nil {
		return nil, err
	}
	return ns, nil
}

// layout is the instance of the server flags, every person with post on every channel.
func (r *runner) layout() gatewaybench.Layout {
	return gatewaybench.Layout{Channels: *r.server.channels, People: *r.server.people}
}
