package appliance

import (
	"context"
)

const serveHelp = `bothy serve [flags]

Starts the server. It first opens its listeners, the internal one (/healthz, /readyz) and the
public one, so that a port already in use ends the start with exit code 1 before anything is
created or migrated. On the embedded SQLite database (database.driver sqlite, the default) it
then creates server.data_dir (mode 0700) and migrates the database by itself, logging each
migration. On PostgreSQL (database.driver postgres, database.url_ref) it never migrates: while
the schema has pending migrations it ends at once with exit code 1 and asks for
'bothy migrate up'. While no owner exists it prints one line on stdout with the setup link:
on server.public_url, else on the address it listens on, where a wildcard (0.0.0.0, ::)
becomes an address of this machine. A server people reach by another name (a headless box,
a container, a proxy) needs server.public_url. Logs go to stderr.

Roles (server.role, --role): all, the default, runs everything in one process; api runs the
HTTP API and the gateway, and worker the background jobs, next to other processes on one
PostgreSQL database. A worker opens no public listener, only the internal one (/healthz,
/readyz); api processes wake it over NOTIFY bothy_jobs when they enqueue a job due now, and it
polls the queue every second. An all process runs jobs too. Several api (or all) processes
behind one proxy need cluster.mode multi: each is a node with an id of its own, new at every
start, and they share typing and presence over NOTIFY ephemeral and the table
gateway_presence. A gateway session lives in the memory of its node: a resume that reaches
another node is answered with 4006 and the client identifies with its cursor.

SIGTERM or SIGINT shuts down gracefully within shutdown.total_timeout; a second signal ends
the process at once.

Exit codes: 0 orderly end, 1 start or runtime failure (or a shutdown beyond
shutdown.total_timeout), 2 usage or configuration error, 3 forced end by a second signal.`

func (c *cli) serve(ctx context.Context, args []string) int {
	f := c.newFlags("serve", serveHelp)
	var cf configFlags
	cf.register(f)
	cf.dataDir(f)
	cf.named(f, "listen-addr", "server.listen_addr", "public listener `host:port`")
	cf.named(f, "internal-listen-addr", "server.internal_listen_addr", "health listener `host:port`")
	cf.named(f, "role", "server.role", "process `role`: all, or api or worker on PostgreSQL")
	if code, done := f.parse(args); done {
		return code
	}
	cfg, code, ok := cf.load(c)
	if !ok {
		return code
	}
	logger := NewLogger(cfg.Log, c.stderr)

	// Subscribe before the start, so a signal during it is not lost: it ends the process as
	// soon as Run begins.
	sigs, unsubscribe := c.signals()
	defer unsubscribe()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The listeners first: a port in use ends the start before the data directory is created
	// or the database migrated, so a second serve on the same machine changes nothing.
	ln, err := Listen(cfg)
	if err != nil {
		logger.Error("start failed", "err", err)
		return ExitFailure
	}
	app, err := New(ctx, cfg, logger, c.stdout)
	if err != nil {
		ln.Close()
		logger.Error("start failed", "err", err)
		return codeOf(err)
	}
	done := make(chan error, 1)
	go func() { done <- app.RunOn(ctx, ln) }()
	if c.onReady != nil {
		go func() {
			select {
			case <-app.Ready():
				c.onReady(app)
			case <-ctx.Done():
			}
		}()
	}

	select {
	case err := <-done:
		return runResult(err)
	case s := <-sigs:
		logger.Info("signal received", "signal", s.String())
		cancel()
	}
	// A second signal that is already pending wins over a shutdown that happens to be done.
	select {
	case s := <-sigs:
		logger.Warn("second signal, exiting now", "signal", s.String())
		return ExitForced
	default:
	}
	select {
	case err := <-done:
		return runResult(err)
	case s := <-sigs:
		logger.Warn("second signal, exiting now", "signal", s.String())
		return ExitForced
	}
}

// runResult is serve's exit code for what Run returned; Run has logged the error already.
func runResult(err error) int {
	if err != nil {
		return ExitFailure
	}
	return ExitOK
}
