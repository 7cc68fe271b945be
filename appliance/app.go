// Package appliance builds the bothy process in one place: it loads the configuration, opens the
// store, wires the modules (wire.go), runs the listeners and shuts them down in order. main.go
// only calls Main.
//
// It must not hold domain rules: those live in app/<module>. Nothing here is global state; every
// App is built by New and carries what it uses.
package appliance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/push"
	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/appliance/telemetry"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/jobs"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/sqlite"
)

// Version is the version of the binary, set at build time with
// -ldflags "-X bothy.dev/bothy/appliance.Version=v1.2.3".
var Version = "dev"

// DatabaseFile is the name of the SQLite database inside server.data_dir.
const DatabaseFile = "bothy.db"

// App is one bothy process. New builds it; wire (wire.go) adds the services and the public
// handler; Run serves until its context ends; Close releases what New opened.
type App struct {
	Config config.Config
	Logger *slog.Logger
	// Stdout receives the lines meant for the operator or a script (the setup link); logs go
	// to Logger.
	Stdout io.Writer
	Clock  kernel.Clock
	// DB is the store: the Unit of Work, the event log and the repositories.
	DB *storage.DB

	// Public is the handler of the public listener (REST, gateway, console). wire sets it.
	Public http.Handler

	// Gateway is the realtime gateway (hub, sessions, log tail). wire sets it.
	Gateway *gateway.Gateway

	// Jobs is the job queue: the modules enqueue through it (kernel.Jobs) and wire registers
	// the handlers on it. wire sets it; roles all and worker run its runner.
	Jobs *jobs.Queue
	// jobPool is the job runner's own writable pool (jobs.RunnerOptions.Pool), nil in role api.
	jobPool *sql.DB

	// Identity holds the identity use cases. wire sets it. serve uses it to print the setup
	// link (IssueSetupCode) and `setup bootstrap-owner` to create the first owner; while it is
	// nil, serve prints no setup link.
	Identity *identity.Service

	// Push holds the Web Push use cases; the notifier enqueues through it. wire sets it.
	Push *push.Service

	// telemetry holds the traces and metrics (observe.go); nil with telemetry.enabled false.
	// spanExporter, set by a test before New, takes the spans instead of OTLP; jobBacklog is
	// the runner's count of due jobs, nil in a role that runs none.
	telemetry    *telemetry.Telemetry
	spanExporter telemetry.SpanExporter
	jobBacklog   func(ctx context.Context) (int64, error)

	// signals is the channel ephemeral between the nodes of a cluster (cluster.mode multi on
	// PostgreSQL; nil otherwise). openPostgres makes it, wire hands it to the gateway.
	signals *postgres.Signals

	background []task
	stops      []task

	// interfaceAddrs lists this machine's addresses for PublicURL (net.InterfaceAddrs when
	// nil; tests set their own).
	interfaceAddrs func() ([]net.Addr, error)

	state        atomic.Value // readiness: "" when ready, else the reason (notReady*)
	publicAddr   atomic.Value // net.Addr, once bound
	internalAddr atomic.Value // net.Addr, once bound
	ready        chan struct{}
	closeOnce    sync.Once
	closeErr     error
}

type task struct {
	name string
	fn   func(ctx context.Context) error
}

// New opens the store named by database.driver and wires the modules. It starts no listener:
// Run does.
//
// On SQLite (the default) it creates the data directory, opens <data_dir>/bothy.db and migrates
// it by itself (one process cannot race itself), logging each migration it applies. On
// PostgreSQL it never migrates: a schema behind this binary ends the start with an error that
// names `bothy migrate up` (several nodes starting at once must not race to migrate); it
// registers the LISTEN side of the log tail's wake-up and a 1 s poll of the head as background tasks.
func New(ctx context.Context, cfg config.Config, logger *slog.Logger, stdout io.Writer) (*App, error) {
	a, err := newApp(cfg, logger, stdout)
	if err != nil {
		return nil, err
	}
	return a.open(ctx)
}

// newApp is the App of cfg before anything is opened (a test sets its hooks, then calls open).
func newApp(cfg config.Config, logger *slog.Logger, stdout io.Writer) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if stdout == nil {
		stdout = io.Discard
	}
	a := &App{Config: cfg, Logger: logger, Stdout: stdout, Clock: kernel.SystemClock{}, ready: make(chan struct{})}
	a.state.Store(notReadyStartup)
	return a, nil
}

// open opens the store and wires the modules of a, which New has made.
func (a *App) open(ctx context.Context) (*App, error) {
	cfg, logger := a.Config, a.Logger
	if err := a.openTelemetry(); err != nil {
		return nil, err
	}

	opts := storage.Options{
		MaxBatch:   cfg.Database.MaxBatch,
		TxRetryMax: txRetryMax(cfg),
		Logger:     logger,
		Clock:      a.Clock,
		Observer:   a.writerObserver(),
	}
	var err error
	switch engineOf(cfg) {
	case engine.Postgres:
		err = a.openPostgres(ctx, opts)
	default:
		err = a.openSQLiteStore(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	if err := wire(ctx, a); err != nil {
		a.Close()
		return nil, fmt.Errorf("wire the appliance: %w", err)
	}
	return a, nil
}

// txRetryMax maps database.tx_retry_max to storage.Options, where 0 means the default.
func txRetryMax(cfg config.Config) int {
	if cfg.Database.TxRetryMax == 0 {
		return -1
	}
	return cfg.Database.TxRetryMax
}

// engineOf is the engine database.driver names. Validate has restricted the value to the two
// engines, so this is the one place the configuration string becomes an engine.Name.
func engineOf(cfg config.Config) engine.Name { return engine.Name(cfg.Database.Driver) }

// openSQLiteStore opens and migrates the embedded database and sets a.DB.
func (a *App) openSQLiteStore(ctx context.Context, opts storage.Options) error {
	w, r, err := openSQLite(ctx, a.Config, a.Logger)
	if err != nil {
		return err
	}
	if _, err := migrate.Up(ctx, w, engine.SQLite, func(m migrate.Migration) {
		a.Logger.Info("migration applied", "version", m.Version, "name", m.Name, "engine", engine.SQLite)
	}); err != nil {
		w.Close()
		r.Close()
		return fmt.Errorf("migrate the database: %w", err)
	}
	db, err := storage.Open(ctx, sqlite.Dialect{}, w, r, opts)
	if err != nil {
		w.Close()
		r.Close()
		return fmt.Errorf("open the store: %w", err)
	}
	a.DB = db
	return nil
}

// ErrSchemaBehind ends a start on PostgreSQL whose schema lacks migrations of this binary.
var ErrSchemaBehind = errors.New("the database schema is behind this binary")

// openPostgres connects to database.url_ref, refuses a schema with pending migrations, sets
// a.DB and registers the head's listener and poll.
func (a *App) openPostgres(ctx context.Context, opts storage.Options) error {
	cfg := a.Config
	url, w, r, err := openPostgres(ctx, cfg, cfg.Database.URLRef)
	if err != nil {
		return err
	}
	pending, err := migrate.Pending(ctx, w, engine.Postgres)
	if err != nil {
		w.Close()
		r.Close()
		return fmt.Errorf("read the schema version: %w", err)
	}
	if len(pending) > 0 {
		w.Close()
		r.Close()
		return fmt.Errorf("%w: %d migration(s) pending, the first %s; serve never migrates PostgreSQL: run `bothy migrate up` with the same configuration, then start again",
			ErrSchemaBehind, len(pending), migrationName(pending[0]))
	}
	db, err := storage.Open(ctx, postgresDialect(cfg), w, r, opts)
	if err != nil {
		w.Close()
		r.Close()
		return fmt.Errorf("open the store: %w", err)
	}
	a.DB = db
	logger := a.Logger
	a.Background("event_log listener", func(ctx context.Context) error {
		return postgres.Listen(ctx, url, db.AdvanceHead, logger)
	})
	a.Background("event_log poll", func(ctx context.Context) error {
		pollHead(ctx, db, headPollInterval, logger)
		return nil
	})
	if cfg.Cluster.Mode == "multi" {
		// Several nodes share typing and presence over NOTIFY ephemeral (ids only; the receiver reads the state
		// from the database): one LISTEN
		// connection of its own, the sibling of the log tail's.
		a.signals = postgres.NewSignals(url, r, logger)
		a.Background("ephemeral listener", a.signals.Listen)
	}
	return nil
}

// headPollInterval is how often the head is read on PostgreSQL even without a notification:
// the safety net under LISTEN/NOTIFY.
const headPollInterval = time.Second

// pollHead refreshes db's head every interval until ctx ends. A failure is logged once, and so
// is the recovery, not every second of an outage (/readyz reports the database meanwhile).
func pollHead(ctx context.Context, db *storage.DB, interval time.Duration, logger *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := db.RefreshHead(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			failing = true
			logger.Warn("event_log poll: cannot read the head", "err", err)
		case err == nil && failing:
			failing = false
			logger.Info("event_log poll: reading the head again")
		}
	}
}

// Background registers fn to run while the App runs, from the start of Run until shutdown,
// which cancels its context (after the HTTP servers have stopped). fn returning early with an
// error ends the process with exit code 1: a failing log tail or hub ends the process, so that
// an orchestrator restarts it rather than keep a node that delivers nothing. Call it from
// wire, before Run.
func (a *App) Background(name string, fn func(ctx context.Context) error) {
	a.background = append(a.background, task{name, fn})
}

// OnStop registers fn to run during shutdown, after the HTTP servers have stopped and before
// background tasks are cancelled and the store is closed; stops run in reverse order of
// registration, within shutdown.total_timeout (ctx carries the deadline). The gateway closes its
// WebSockets here (4013). Call it from wire, before Run.
func (a *App) OnStop(name string, fn func(ctx context.Context) error) {
	a.stops = append(a.stops, task{name, fn})
}

// Close closes the store. Run calls it at the end; call it yourself when the App never ran.
// It is safe to call more than once.
func (a *App) Close() error {
	a.closeOnce.Do(func() {
		if a.DB != nil {
			a.closeErr = a.DB.Close()
		}
		if a.jobPool != nil {
			a.closeErr = errors.Join(a.closeErr, a.jobPool.Close())
		}
	})
	return a.closeErr
}

// Ready is closed once Run has opened both listeners, reported ready and printed the setup
// link (if it prints one).
func (a *App) Ready() <-chan struct{} { return a.ready }

// PublicAddr is the bound address of the public listener ("" before Run has bound it). With
// port 0 in the configuration this is where the chosen port shows.
func (a *App) PublicAddr() string { return addrString(&a.publicAddr) }

// InternalAddr is the bound address of the internal (health) listener, "" before Run.
func (a *App) InternalAddr() string { return addrString(&a.internalAddr) }

func addrString(v *atomic.Value) string {
	if a, ok := v.Load().(net.Addr); ok {
		return a.String()
	}
	return ""
}

// PublicURL is the origin users reach the instance at: server.public_url when set, otherwise
// http:// and the public listener's address (the bound one once Run has bound it). A wildcard
// host (0.0.0.0, ::, none) is no address a browser can open: it becomes an address of this
// machine that others may reach (reachableHost), and localhost only on a machine without one.
func (a *App) PublicURL() string {
	if a.Config.Server.PublicURL != "" {
		return a.Config.Server.PublicURL
	}
	hostport := a.PublicAddr()
	if hostport == "" {
		hostport = a.Config.Server.ListenAddr
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "http://" + hostport
	}
	if wildcardHost(host) {
		host = a.reachableHost()
	}
	return "http://" + net.JoinHostPort(host, port)
}

// publicURLGuessed reports whether PublicURL had to pick an address of this machine for a
// wildcard listener, which may not be the one people reach (a container, a proxy, NAT).
func (a *App) publicURLGuessed() bool {
	if a.Config.Server.PublicURL != "" {
		return false
	}
	host, _, err := net.SplitHostPort(a.Config.Server.ListenAddr)
	return err == nil && wildcardHost(host)
}

func wildcardHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// reachableHost is the first IPv4 address of this machine's interfaces that is neither
// loopback nor link-local (an IPv6 one when it has no such IPv4), or localhost when it has
// none.
func (a *App) reachableHost() string {
	addrs := a.interfaceAddrs
	if addrs == nil {
		addrs = net.InterfaceAddrs
	}
	list, err := addrs()
	if err != nil {
		return "localhost"
	}
	v6 := ""
	for _, ad := range list {
		ipn, ok := ad.(*net.IPNet)
		if !ok || !ipn.IP.IsGlobalUnicast() {
			continue // loopback, link-local, multicast
		}
		if ip4 := ipn.IP.To4(); ip4 != nil {
			return ip4.String()
		}
		if v6 == "" {
			v6 = ipn.IP.String()
		}
	}
	if v6 != "" {
		return v6
	}
	return "localhost"
}

// NewLogger returns the structured logger of the process: text or JSON, at the configured level.
func NewLogger(c config.LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	switch c.Level {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openPostgres resolves ref and connects the writer and the read pool with the database.*
// settings. It returns the URL for the listener; the URL is never logged or shown (errors name
// the reference).
func openPostgres(ctx context.Context, cfg config.Config, ref string) (url string, w, r *sql.DB, err error) {
	url, err = config.ResolveRef(ref)
	if err != nil {
		return "", nil, nil, fmt.Errorf("database.url_ref: %w", err)
	}
	w, r, err = postgres.Open(ctx, postgres.Options{
		URL:              url,
		MaxOpenConns:     cfg.Database.MaxOpenConns,
		StatementTimeout: cfg.Database.StatementTimeout,
		LockTimeout:      cfg.Database.LockTimeout,
		IdleInTxTimeout:  cfg.Database.IdleInTxTimeout,
	})
	if err != nil {
		return "", nil, nil, fmt.Errorf("open the database (%s): %w", ref, err)
	}
	return url, w, r, nil
}

func postgresDialect(cfg config.Config) postgres.Dialect {
	return postgres.Dialect{StatementTimeout: cfg.Database.StatementTimeout, LockTimeout: cfg.Database.LockTimeout}
}

// openSQLite creates the data directory and opens <data_dir>/bothy.db with the configured
// pragmas: one write connection, a read pool.
func openSQLite(ctx context.Context, cfg config.Config, logger *slog.Logger) (w, r *sql.DB, err error) {
	if err := ensureDataDir(cfg.Server.DataDir, logger); err != nil {
		return nil, nil, err
	}
	w, r, err = sqlite.Open(ctx, sqliteOptions(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("open the database: %w", err)
	}
	return w, r, nil
}

// sqliteOptions are the database.* settings of <data_dir>/bothy.db.
func sqliteOptions(cfg config.Config) sqlite.Options {
	return sqlite.Options{
		Path:        filepath.Join(cfg.Server.DataDir, DatabaseFile),
		Synchronous: cfg.Database.Synchronous,
		BusyTimeout: cfg.Database.BusyTimeout,
		Readers:     cfg.Database.ReadPoolSize,
	}
}

// ensureDataDir creates the data directory with mode 0700: it holds the database with every
// message and credential hash. An existing directory that is ours (empty, or holding bothy.db)
// but open to others is tightened to 0700; one that holds other files is left alone with a
// warning, because the operator may have pointed data_dir at a shared directory.
func ensureDataDir(dir string, logger *slog.Logger) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create the data directory: %w", err)
		}
		// MkdirAll is subject to the umask, which may take but never add bits; make it exact.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("set the mode of the data directory: %w", err)
		}
		logger.Info("data directory created", "path", dir)
		return nil
	case err != nil:
		return fmt.Errorf("data directory: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("data directory %s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	ours := len(entries) == 0
	for _, e := range entries {
		if e.Name() == DatabaseFile {
			ours = true
		}
	}
	if !ours {
		logger.Warn("the data directory is open to other users; set its mode to 0700", "path", dir, "mode", fi.Mode().Perm().String())
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("tighten the mode of the data directory: %w", err)
	}
	logger.Warn("data directory was open to other users; its mode is now 0700", "path", dir, "was", fi.Mode().Perm().String())
	return nil
}
