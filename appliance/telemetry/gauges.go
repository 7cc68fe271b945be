package telemetry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Sources are what the gauges read at each collection (a scrape of /metrics, an OTLP push).
// Each may be nil: its gauges are then left out (a worker has no gateway, an api process runs no
// jobs).
type Sources struct {
	// Head is the event log's head seq, from memory.
	Head func() int64
	// Gateway is the gateway's counts: open connections, frames queued for their writers, and
	// the seq its hub has passed (the tail's position).
	Gateway func() (connections, queuedFrames int, position int64)
	// ConsumerLag is the largest lag of the agents' durable consumers behind head, and how many
	// there are.
	ConsumerLag func(ctx context.Context, head int64) (lag int64, consumers int, err error)
	// JobBacklog is how many jobs are due and wait for a worker.
	JobBacklog func(ctx context.Context) (int64, error)
	// LiveRuns counts the runs that have not ended, by status.
	LiveRuns func(ctx context.Context) (map[string]int64, error)
	// DatabaseBytes is the size of the database.
	DatabaseBytes func(ctx context.Context) (int64, error)
}

// readTimeout bounds the queries of one collection.
const readTimeout = 2 * time.Second

// Observe registers the gauges of src; it is called once, after the wiring.
func (t *Telemetry) Observe(src Sources) error {
	m := t.meter
	var errs []error
	gauge := func(name, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	head := gauge("bothy.eventlog.head", "The event log's head seq")
	tailLag := gauge("bothy.gateway.tail.lag", "Events the gateway's log tail is behind head")
	connections := gauge("bothy.gateway.connections", "Open gateway connections")
	queued := gauge("bothy.gateway.queued.frames", "Frames queued for the gateway connections' writers")
	consumerLag := gauge("bothy.agent.consumer.lag", "Events the agent consumer furthest behind has not acknowledged")
	consumers := gauge("bothy.agent.consumers", "Agents with a durable consumer")
	backlog := gauge("bothy.jobs.backlog", "Jobs due that wait for a worker")
	runs := gauge("bothy.runs", "Runs that have not ended, by state")
	size, err := m.Int64ObservableGauge("bothy.database.size", metric.WithUnit("By"), metric.WithDescription("The size of the database"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: gauges: %w", err)
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		var errs []error
		var h int64
		if src.Head != nil {
			h = src.Head()
			o.ObserveInt64(head, h)
		}
		if src.Gateway != nil {
			c, q, pos := src.Gateway()
			o.ObserveInt64(connections, int64(c))
			o.ObserveInt64(queued, int64(q))
			o.ObserveInt64(tailLag, max(0, h-pos))
		}
		if src.ConsumerLag != nil {
			lag, n, err := src.ConsumerLag(ctx, h)
			if err == nil {
				o.ObserveInt64(consumerLag, lag)
				o.ObserveInt64(consumers, int64(n))
			}
			errs = append(errs, err)
		}
		if src.JobBacklog != nil {
			n, err := src.JobBacklog(ctx)
			if err == nil {
				o.ObserveInt64(backlog, n)
			}
			errs = append(errs, err)
		}
		if src.LiveRuns != nil {
			by, err := src.LiveRuns(ctx)
			for state, n := range by {
				o.ObserveInt64(runs, n, metric.WithAttributes(attribute.String("state", state)))
			}
			errs = append(errs, err)
		}
		if src.DatabaseBytes != nil {
			n, err := src.DatabaseBytes(ctx)
			if err == nil {
				o.ObserveInt64(size, n)
			}
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			// The other gauges are still reported; the failed one is missing from this scrape.
			t.log.Warn("metrics: a gauge could not be read", "err", err)
		}
		return nil
	}, head, tailLag, connections, queued, consumerLag, consumers, backlog, runs, size)
	if err != nil {
		return fmt.Errorf("telemetry: gauges: %w", err)
	}
	return nil
}
