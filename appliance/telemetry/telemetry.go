// Package telemetry is the process's traces and metrics, on OpenTelemetry: the metrics are read
// by Prometheus from /metrics on the internal listener (Handler), and pushed over OTLP too when
// an endpoint is set; traces are made only when that endpoint is set (or a test hands its own
// exporter), sampled by a ratio.
//
// It is the one home of the OpenTelemetry SDK and the Prometheus client (arch_test.go): the
// packages that do the work declare small hooks of their own (httpapi.RequestObserver,
// commit.Observer, gateway.ConnWatcher, the jobs runner's and the egress client's Observe),
// and this package implements them. A hook left nil costs the work nothing.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Options configure the telemetry of one process (the telemetry.* settings).
type Options struct {
	// ServiceName names the process in traces and metrics (service.name). Default "bothy".
	ServiceName string
	// Version is the binary's version (service.version).
	Version string
	// OTLPEndpoint is the base URL of an OTLP/HTTP collector (http://collector:4318): traces go
	// to its /v1/traces and metrics to its /v1/metrics. Empty: no traces, and metrics only on
	// /metrics.
	OTLPEndpoint string
	// SampleRatio is the share of traces kept, from 0 to 1, for a request that comes without a
	// sampled parent; one that comes with one follows its parent's decision.
	SampleRatio float64
	// SpanExporter takes the spans instead of OTLP (tests: tracetest's in-memory exporter);
	// spans are exported as they end.
	SpanExporter sdktrace.SpanExporter
	Logger       *slog.Logger
}

// SpanExporter takes ended spans (Options.SpanExporter), named here so that the appliance's
// tests hand one over without importing the SDK themselves.
type SpanExporter = sdktrace.SpanExporter

// Telemetry holds the providers, the instruments and the /metrics handler.
type Telemetry struct {
	log      *slog.Logger
	registry *prometheus.Registry
	meters   *sdkmetric.MeterProvider
	meter    metric.Meter
	traces   *sdktrace.TracerProvider // nil when no traces are made
	tracer   trace.Tracer             // nil when no traces are made
	prop     propagation.TextMapPropagator

	requests        metric.Int64Counter
	requestDuration metric.Float64Histogram
	batchUnits      metric.Int64Histogram
	commitDuration  metric.Float64Histogram
	unitsDone       metric.Int64Counter
	jobRuns         metric.Int64Counter
	jobDuration     metric.Float64Histogram
	egressRequests  metric.Int64Counter
	egressDuration  metric.Float64Histogram
	sessions        metric.Int64Counter

	requestSets sync.Map // requestKey → requestSeries
}

// secondsBuckets are the bounds of the latency histograms, in seconds: from 100 µs (a commit on a
// fast disk) to 10 s.
var secondsBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// New builds the telemetry: the meter provider with its Prometheus reader (and an OTLP one when
// an endpoint is set), and the tracer provider when traces are made.
func New(o Options) (*Telemetry, error) {
	if o.ServiceName == "" {
		o.ServiceName = "bothy"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// The SDK reports a failed export through its one handler of the process; it goes to the
	// log instead of the standard logger's stderr.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { o.Logger.Warn("telemetry: export failed", "err", err) }))
	res := resource.NewSchemaless(semconv.ServiceName(o.ServiceName), semconv.ServiceVersion(o.Version))
	t := &Telemetry{log: o.Logger, registry: prometheus.NewRegistry(), prop: propagation.TraceContext{}}

	promReader, err := otelprom.New(otelprom.WithRegisterer(t.registry), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("telemetry: the Prometheus reader: %w", err)
	}
	readers := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(promReader)}
	if o.OTLPEndpoint != "" {
		exp, err := otlpmetrichttp.New(context.Background(), otlpmetrichttp.WithEndpointURL(otlpURL(o.OTLPEndpoint, "/v1/metrics")))
		if err != nil {
			return nil, fmt.Errorf("telemetry: the OTLP metric exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	t.meters = sdkmetric.NewMeterProvider(readers...)
	t.meter = t.meters.Meter("bothy.dev/bothy")

	var spans sdktrace.TracerProviderOption
	switch {
	case o.SpanExporter != nil:
		spans = sdktrace.WithSyncer(o.SpanExporter)
	case o.OTLPEndpoint != "":
		exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(otlpURL(o.OTLPEndpoint, "/v1/traces")))
		if err != nil {
			return nil, fmt.Errorf("telemetry: the OTLP trace exporter: %w", err)
		}
		spans = sdktrace.WithBatcher(exp)
	}
	if spans != nil {
		t.traces = sdktrace.NewTracerProvider(spans, sdktrace.WithResource(res),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))))
		t.tracer = t.traces.Tracer("bothy.dev/bothy")
	}
	if err := t.instruments(); err != nil {
		return nil, err
	}
	return t, nil
}

// otlpURL is the collector's URL for one signal: the base URL with the signal's path unless it
// names a path itself.
func otlpURL(base, path string) string {
	u, err := url.Parse(base)
	if err != nil || (u.Path != "" && u.Path != "/") {
		return base
	}
	u.Path = path
	return u.String()
}

func (t *Telemetry) instruments() error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	t.requests, err = t.meter.Int64Counter("bothy.http.requests", metric.WithDescription("HTTP requests answered, by route, method and status"))
	add(err)
	t.requestDuration, err = t.meter.Float64Histogram("bothy.http.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Time to answer an HTTP request, by route and method"), metric.WithExplicitBucketBoundaries(secondsBuckets...))
	add(err)
	t.batchUnits, err = t.meter.Int64Histogram("bothy.uow.batch.units", metric.WithDescription("Units of Work in one batch of the writer (one COMMIT)"),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
	add(err)
	t.commitDuration, err = t.meter.Float64Histogram("bothy.uow.commit.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of a batch's COMMIT"), metric.WithExplicitBucketBoundaries(secondsBuckets...))
	add(err)
	t.unitsDone, err = t.meter.Int64Counter("bothy.uow.units", metric.WithDescription("Units of Work answered, by outcome (committed, failed)"))
	add(err)
	t.jobRuns, err = t.meter.Int64Counter("bothy.jobs.runs", metric.WithDescription("Job runs, by job name and outcome (done, failed)"))
	add(err)
	t.jobDuration, err = t.meter.Float64Histogram("bothy.jobs.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of a job's run, by job name"), metric.WithExplicitBucketBoundaries(secondsBuckets...))
	add(err)
	t.egressRequests, err = t.meter.Int64Counter("bothy.egress.requests", metric.WithDescription("Outbound requests, by host and status (0: no answer)"))
	add(err)
	t.egressDuration, err = t.meter.Float64Histogram("bothy.egress.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of an outbound request"), metric.WithExplicitBucketBoundaries(secondsBuckets...))
	add(err)
	t.sessions, err = t.meter.Int64Counter("bothy.gateway.connections.closed", metric.WithDescription("Gateway connections that ended, by close code"))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: instruments: %w", err)
	}
	return nil
}

// Tracing says whether spans are made.
func (t *Telemetry) Tracing() bool { return t.tracer != nil }

// Handler serves the metrics as Prometheus text (the internal listener's /metrics).
func (t *Telemetry) Handler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{ErrorLog: slogPrinter{t.log}})
}

// Shutdown sends what is left to the collector and stops the providers.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	if t.traces != nil {
		errs = append(errs, t.traces.Shutdown(ctx))
	}
	errs = append(errs, t.meters.Shutdown(ctx))
	return errors.Join(errs...)
}

// ForceFlush exports the spans that ended (tests read them right after the work).
func (t *Telemetry) ForceFlush(ctx context.Context) error {
	if t.traces == nil {
		return nil
	}
	return t.traces.ForceFlush(ctx)
}

type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) {
	p.log.Warn("metrics: " + strings.TrimSpace(fmt.Sprintln(v...)))
}

// since is the time from start in seconds, for the histograms.
func since(start time.Time) float64 { return time.Since(start).Seconds() }

func withSet(s attribute.Set) metric.MeasurementOption { return metric.WithAttributeSet(s) }

// attrs are small helpers for attribute sets.
func attrs(kv ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(kv...))
}
