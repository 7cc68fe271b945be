package appliance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"

	"bothy.dev/bothy/appliance/config"
)

// ErrShutdownTimeout is returned by Run when the graceful shutdown did not finish within
// shutdown.total_timeout.
var ErrShutdownTimeout = errors.New("shutdown did not finish within shutdown.total_timeout")

// Listeners are the sockets of one process. serve opens them before New, so that a port in
// use ends the start before the data directory is created or a database migrated.
type Listeners struct {
	internal net.Listener
	public   net.Listener // nil in role worker, which serves no public listener
}

// Listen opens the listeners cfg names: the internal one (health), then the public one unless
// the role is worker. A port another process holds is an error that names its key and says
// so; nothing else is touched.
func Listen(cfg config.Config) (*Listeners, error) {
	iln, err := listen(cfg.Server.InternalListenAddr, "internal", "server.internal_listen_addr", "--internal-listen-addr")
	if err != nil {
		return nil, err
	}
	l := &Listeners{internal: iln}
	if servesAPI(cfg.Server.Role) {
		l.public, err = listen(cfg.Server.ListenAddr, "public", "server.listen_addr", "--listen-addr")
		if err != nil {
			iln.Close()
			return nil, err
		}
	}
	return l, nil
}

func listen(addr, name, key, flag string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("open the %s listener (%s): %s is in use by another process (another bothy serve?); "+
			"stop it or choose another address with %s: %w", name, key, addr, flag, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open the %s listener (%s): %w", name, key, err)
	}
	return ln, nil
}

// Close closes the listeners; Run closes them itself once it has taken them.
func (l *Listeners) Close() error {
	if l == nil {
		return nil
	}
	var errs []error
	for _, ln := range []net.Listener{l.internal, l.public} {
		if ln != nil {
			errs = append(errs, ln.Close())
		}
	}
	return errors.Join(errs...)
}

// Run opens the listeners (Listen) and runs the App on them (RunOn).
func (a *App) Run(ctx context.Context) error {
	ln, err := Listen(a.Config)
	if err != nil {
		defer a.Close()
		a.Logger.Error("start failed", "err", err)
		return err
	}
	return a.RunOn(ctx, ln)
}

// RunOn serves the internal listener of ln (health), then the public one (not in role
// worker), starts the background tasks, reports ready and prints the setup link while no owner
// exists. It serves until ctx ends, then shuts down in order: not ready → HTTP
// servers finish their requests → stop hooks → background tasks → store. It returns nil after
// an orderly shutdown, and an error when the start failed, a server or background task failed,
// or the shutdown overran its deadline. It closes ln.
func (a *App) RunOn(ctx context.Context, ln *Listeners) error {
	// Run is called once per App; a second call panics on the closed ready channel.
	defer a.Close()
	startFailed := func(err error) error {
		ln.Close()
		a.Logger.Error("start failed", "err", err)
		return err
	}
	if a.Public == nil {
		return startFailed(errors.New("wire set no public handler"))
	}
	if ln == nil || ln.internal == nil || (ln.public == nil) == servesAPI(a.Config.Server.Role) {
		return startFailed(errors.New("the listeners do not match server.role"))
	}
	cfg := a.Config
	errorLog := slog.NewLogLogger(a.Logger.Handler(), slog.LevelWarn)

	a.internalAddr.Store(ln.internal.Addr())
	internal := &http.Server{
		Handler:           a.healthHandler(),
		ReadHeaderTimeout: cfg.HTTP.ReadHeaderTimeout,
		IdleTimeout:       cfg.HTTP.IdleTimeout,
		ErrorLog:          errorLog,
	}
	failed := make(chan error, 2+len(a.background))
	var serving sync.WaitGroup
	serve := func(name string, srv *http.Server, ln net.Listener) {
		serving.Add(1)
		go func() {
			defer serving.Done()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("%s listener: %w", name, err)
			}
		}()
	}
	serve("internal", internal, ln.internal)

	// Role worker serves no public listener: only the internal one, for its health.
	var public *http.Server
	if ln.public != nil {
		a.publicAddr.Store(ln.public.Addr())
		public = &http.Server{
			Handler:           a.Public,
			ReadHeaderTimeout: cfg.HTTP.ReadHeaderTimeout,
			IdleTimeout:       cfg.HTTP.IdleTimeout,
			ErrorLog:          errorLog,
		}
		serve("public", public, ln.public)
	}

	// Background tasks keep ctx's values but not its cancellation: they stop at their turn
	// in the shutdown, not when the signal arrives.
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBackground()
	var bg sync.WaitGroup
	for _, t := range a.background {
		bg.Add(1)
		go func() {
			defer bg.Done()
			err := t.fn(bgCtx)
			if bgCtx.Err() == nil {
				if err == nil {
					err = errors.New("returned while the process runs")
				}
				failed <- fmt.Errorf("%s: %w", t.name, err)
			}
		}()
	}

	a.state.Store("")
	a.Logger.Info("listening", "public", a.PublicAddr(), "internal", a.InternalAddr(), "role", cfg.Server.Role)

	var runErr error
	if err := a.announceSetup(ctx, public != nil); err != nil && ctx.Err() == nil {
		runErr = err
	} else {
		close(a.ready)
		select {
		case <-ctx.Done():
			a.Logger.Info("shutting down")
		case runErr = <-failed:
		}
	}
	if runErr != nil {
		a.Logger.Error("stopping after a failure", "err", runErr)
	}

	// Shutdown, within shutdown.total_timeout.
	a.state.Store(notReadyShuttingDown)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Shutdown.TotalTimeout)
	defer cancel()
	var errs []error
	if public != nil {
		if err := public.Shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("public listener: %w", err))
		}
	}
	for i := len(a.stops) - 1; i >= 0; i-- {
		if err := a.stops[i].fn(sctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", a.stops[i].name, err))
		}
	}
	stopBackground()
	if !waitUntil(sctx, &bg) {
		errs = append(errs, errors.New("background tasks did not stop"))
	}
	if err := internal.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("internal listener: %w", err))
	}
	serving.Wait()
	if err := a.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close the store: %w", err))
	}
	if sctx.Err() != nil {
		errs = append(errs, ErrShutdownTimeout)
	}
	if len(errs) > 0 {
		a.Logger.Error("shutdown incomplete", "err", errors.Join(errs...))
	} else {
		a.Logger.Info("stopped")
	}
	return errors.Join(append([]error{runErr}, errs...)...)
}

// announceSetup prints the one line that leads the operator to the first owner's setup, while
// setup is not complete and this process serves the public listener (a worker does not). It is
// the only line serve writes to stdout.
func (a *App) announceSetup(ctx context.Context, public bool) error {
	if a.Identity == nil || !public {
		return nil
	}
	code, ok, err := a.Identity.IssueSetupCode(ctx)
	if err != nil {
		return fmt.Errorf("issue the setup code: %w", err)
	}
	if !ok {
		return nil
	}
	if a.publicURLGuessed() {
		a.Logger.Warn("the setup link names an address of this machine, which people may not reach it at: "+
			"set server.public_url to the address they open (a headless server, a container or a proxy needs it)",
			"public_url", a.PublicURL())
	}
	_, err = fmt.Fprintf(a.Stdout, "Open %s/console/setup?code=%s to create the first owner\n", a.PublicURL(), url.QueryEscape(code))
	return err
}

// waitUntil waits for wg or the end of ctx, whichever is first, and reports whether wg finished.
func waitUntil(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
