package appliance

import (
	"context"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/appliance/httpapi"
	"bothy.dev/bothy/appliance/telemetry"
	"bothy.dev/bothy/storage/commit"
)

// The telemetry of the process (appliance/telemetry, the telemetry.* settings): New opens it
// before the store, so that the writer is watched from its first batch; wire hands its hooks to
// the router, the gateway, the jobs runner and the egress client, and registers the gauges at
// its end. With telemetry.enabled false every hook stays nil and nothing is measured.

// openTelemetry builds a.telemetry when telemetry.enabled is set, and registers its shutdown as
// the first stop, so that it runs last and sends the spans of the others.
func (a *App) openTelemetry() error {
	c := a.Config.Telemetry
	if !c.Enabled {
		return nil
	}
	t, err := telemetry.New(telemetry.Options{ServiceName: c.ServiceName, Version: Version, OTLPEndpoint: c.OTLPEndpoint,
		SampleRatio: c.SampleRatio, SpanExporter: a.spanExporter, Logger: a.Logger})
	if err != nil {
		return err
	}
	a.telemetry = t
	a.OnStop("telemetry", func(ctx context.Context) error {
		// A collector that is gone costs the last spans, not an orderly shutdown.
		if err := t.Shutdown(ctx); err != nil {
			a.Logger.Warn("telemetry: the last export failed", "err", err)
		}
		return nil
	})
	return nil
}

// The hooks, each nil (an untyped nil for the interfaces) without telemetry.

func (a *App) writerObserver() commit.Observer {
	if a.telemetry == nil {
		return nil
	}
	return a.telemetry.Writer()
}

func (a *App) requestObserver() httpapi.RequestObserver {
	if a.telemetry == nil {
		return nil
	}
	return a.telemetry.Requests()
}

func (a *App) connWatcher() gateway.ConnWatcher {
	if a.telemetry == nil {
		return nil
	}
	return a.telemetry.Connections()
}

func (a *App) jobObserver() func(ctx context.Context, name string) (context.Context, func(error)) {
	if a.telemetry == nil {
		return nil
	}
	return a.telemetry.Job
}

func (a *App) egressObserver() func(ctx context.Context, method, host string) (context.Context, func(int, error)) {
	if a.telemetry == nil {
		return nil
	}
	return a.telemetry.Egress
}

// observeGauges registers the gauges read at each scrape: the log's head, the gateway's counts
// and its tail's lag (in the roles that serve it), the agents' consumers, the job backlog (in the
// roles that run jobs), the live runs and the database's size.
func (a *App) observeGauges(gw *gateway.Gateway, tails bool) error {
	if a.telemetry == nil {
		return nil
	}
	db := a.DB
	src := telemetry.Sources{Head: db.Head, ConsumerLag: db.ConsumerLag, LiveRuns: db.LiveRuns, DatabaseBytes: db.DatabaseBytes,
		JobBacklog: a.jobBacklog}
	if tails {
		src.Gateway = func() (int, int, int64) {
			s := gw.Stats()
			return s.Connections, s.QueuedFrames, s.Position
		}
	}
	return a.telemetry.Observe(src)
}
