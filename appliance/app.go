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

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
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

	// Identity holds the identity use cases. wire sets it. serve uses it to print the setup
	// link (IssueSetupCode) and `setup bootstrap-owner` to create the first owner; while it is
	// nil, serve prints no setup link.
	Identity *identity.Service

	background []task
	stops      []task

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

// New creates the data directory, opens and migrates the embedded SQLite database, opens the
// store and wires the modules. It starts no listener: Run does. On SQLite serve migrates by
// itself (DESIGN §8), and logs each migration it applies.
func New(ctx context.Context, cfg config.Config, logger *slog.Logger, stdout io.Writer) (*App, error) {
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

	w, r, err := openSQLite(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	if _, err := migrate.Up(ctx, w, "sqlite", func(m migrate.Migration) {
		logger.Info("migration applied", "version", m.Version, "name", m.Name, "engine", "sqlite")
	}); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("migrate the database: %w", err)
	}
	db, err := storage.Open(ctx, sqlite.Dialect{}, w, r, storage.Options{
		MaxBatch: cfg.Database.MaxBatch,
		Logger:   logger,
		Clock:    a.Clock,
	})
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open the store: %w", err)
	}
	a.DB = db
	if err := wire(a); err != nil {
		a.Close()
		return nil, fmt.Errorf("wire the appliance: %w", err)
	}
	return a, nil
}

// Background registers fn to run while the App runs, from the start of Run until shutdown,
// which cancels its context (after the HTTP servers have stopped). fn returning early with an
// error ends the process with exit code 1 (seed 15.2: a failing log tail or hub ends the
// process). Call it from wire, before Run.
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
// http:// and the public listener's address (the bound one once Run has bound it), with a
// wildcard host shown as localhost.
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
	switch host {
	case "", "0.0.0.0", "::":
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
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

// openSQLite creates the data directory and opens <data_dir>/bothy.db with the configured
// pragmas: one write connection, a read pool.
func openSQLite(ctx context.Context, cfg config.Config, logger *slog.Logger) (w, r *sql.DB, err error) {
	if err := ensureDataDir(cfg.Server.DataDir, logger); err != nil {
		return nil, nil, err
	}
	w, r, err = sqlite.Open(ctx, sqlite.Options{
		Path:        filepath.Join(cfg.Server.DataDir, DatabaseFile),
		Synchronous: cfg.Database.Synchronous,
		BusyTimeout: cfg.Database.BusyTimeout,
		Readers:     cfg.Database.ReadPoolSize,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("open the database: %w", err)
	}
	return w, r, nil
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
