package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/storage/commit"
)

// The attribute keys of bothy's own that spans and metrics carry.
const (
	keyCorrelationID = attribute.Key("bothy.correlation_id")
	keyRoute         = attribute.Key("http.route")
	keyMethod        = attribute.Key("http.request.method")
	keyStatus        = attribute.Key("http.response.status_code")
	keyOutcome       = attribute.Key("outcome")
	keyJob           = attribute.Key("bothy.job")
	keyHost          = attribute.Key("server.address")
	keyCloseCode     = attribute.Key("bothy.close_code")
)

// Requests watches the router's requests (httpapi.RequestObserver): a server span named by the
// route pattern, its status and the correlation id, and the request counter and latency by route.
func (t *Telemetry) Requests() Requests { return Requests{t} }

// Requests is the router's observer.
type Requests struct{ t *Telemetry }

// Request implements httpapi.RequestObserver.
func (o Requests) Request(ctx context.Context, r *http.Request, cid string) (context.Context, func(route string, status int)) {
	t, start := o.t, time.Now()
	var span trace.Span
	if t.tracer != nil {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
		ctx, span = t.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(keyMethod.String(r.Method), keyCorrelationID.String(cid)))
	}
	method := r.Method
	return ctx, func(route string, status int) {
		if route == "" {
			route = "unmatched" // a 404's path is the client's, unbounded: never a label
		}
		if status == 0 {
			status = http.StatusOK
		}
		if !knownMethod(method) {
			method = "other"
		}
		took := since(start)
		a := t.requestAttrs(route, method, status)
		t.requests.Add(context.Background(), 1, a.count)
		t.requestDuration.Record(context.Background(), took, a.latency)
		if span != nil {
			span.SetName(method + " " + route)
			span.SetAttributes(keyRoute.String(route), keyStatus.Int(status))
			if status >= 500 {
				span.SetStatus(codes.Error, strconv.Itoa(status))
			}
			span.End()
		}
	}
}

// requestKey is one series of the request metrics; there are as many as routes × methods ×
// statuses answered, a few hundred.
type requestKey struct {
	route, method string
	status        int
}

// requestSeries are the attribute sets of one series, made once: building a set sorts and
// allocates, which a request would otherwise pay twice.
type requestSeries struct{ count, latency metric.MeasurementOption }

func (t *Telemetry) requestAttrs(route, method string, status int) requestSeries {
	k := requestKey{route, method, status}
	if v, ok := t.requestSets.Load(k); ok {
		return v.(requestSeries)
	}
	s := requestSeries{
		count:   withSet(attribute.NewSet(keyRoute.String(route), keyMethod.String(method), keyStatus.Int(status))),
		latency: attrs(keyRoute.String(route), keyMethod.String(method)),
	}
	t.requestSets.Store(k, s)
	return s
}

func knownMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}

// Writer watches the write path (commit.Observer): a span for each Unit of Work (child of the
// request's), one for each batch and its COMMIT (child of its first unit's, linked to the others),
// the batch sizes and the commit latency.
func (t *Telemetry) Writer() commit.Observer { return writer{t} }

type writer struct{ t *Telemetry }

var (
	outcomeCommitted = attribute.NewSet(keyOutcome.String("committed"))
	outcomeFailed    = attribute.NewSet(keyOutcome.String("failed"))
)

func (o writer) Unit(ctx context.Context) (context.Context, func(error)) {
	t := o.t
	var span trace.Span
	if t.tracer != nil && trace.SpanFromContext(ctx).IsRecording() {
		ctx, span = t.tracer.Start(ctx, "uow")
	}
	return ctx, func(err error) {
		if err != nil {
			t.unitsDone.Add(context.Background(), 1, withSet(outcomeFailed))
		} else {
			t.unitsDone.Add(context.Background(), 1, withSet(outcomeCommitted))
		}
		if span != nil {
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}
}

func (o writer) Batch(b commit.BatchReport) {
	t := o.t
	ctx := context.Background()
	t.batchUnits.Record(ctx, int64(len(b.Units)))
	if !b.CommitStart.IsZero() && b.Err == nil {
		t.commitDuration.Record(ctx, b.End.Sub(b.CommitStart).Seconds())
	}
	if t.tracer == nil {
		return
	}
	var parent context.Context
	var links []trace.Link
	for _, u := range b.Units {
		sc := trace.SpanContextFromContext(u)
		if !sc.IsSampled() {
			continue
		}
		if parent == nil {
			parent = u
			continue
		}
		links = append(links, trace.Link{SpanContext: sc})
	}
	if parent == nil {
		return // no unit of the batch is traced
	}
	bctx, span := t.tracer.Start(parent, "uow.batch", trace.WithTimestamp(b.Start), trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("bothy.batch.units", len(b.Units)), attribute.Int("bothy.batch.committed", b.Committed),
			attribute.Int("bothy.batch.events", b.Events), attribute.Int("bothy.batch.attempts", b.Attempts)))
	if !b.CommitStart.IsZero() {
		_, cs := t.tracer.Start(bctx, "uow.commit", trace.WithTimestamp(b.CommitStart))
		if b.Err != nil {
			cs.SetStatus(codes.Error, b.Err.Error())
		}
		cs.End(trace.WithTimestamp(b.End))
	}
	if b.Err != nil {
		span.SetStatus(codes.Error, b.Err.Error())
	}
	span.End(trace.WithTimestamp(b.End))
}

// Connections watches the gateway's connections (gateway.ConnWatcher): a span for each, from
// the upgrade to its end, and the count of those that ended by close code.
func (t *Telemetry) Connections() gateway.ConnWatcher { return conns{t} }

type conns struct{ t *Telemetry }

func (o conns) Connected(info gateway.ConnInfo) func(code gateway.CloseCode) {
	t := o.t
	var span trace.Span
	if t.tracer != nil {
		_, span = t.tracer.Start(context.Background(), "gateway.session", trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(keyCorrelationID.String(info.CorrelationID)))
	}
	return func(code gateway.CloseCode) {
		t.sessions.Add(context.Background(), 1, attrs(keyCloseCode.Int(int(code))))
		if span != nil {
			span.SetAttributes(keyCloseCode.Int(int(code)))
			span.End()
		}
	}
}

// Job watches one run of a job (the jobs runner's Observe): a span named by the job and the runs
// and their time by job and outcome.
func (t *Telemetry) Job(ctx context.Context, name string) (context.Context, func(err error)) {
	start := time.Now()
	var span trace.Span
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, "job "+name, trace.WithAttributes(keyJob.String(name)))
	}
	return ctx, func(err error) {
		outcome := "done"
		if err != nil {
			outcome = "failed"
		}
		t.jobRuns.Add(context.Background(), 1, attrs(keyJob.String(name), keyOutcome.String(outcome)))
		t.jobDuration.Record(context.Background(), since(start), attrs(keyJob.String(name)))
		if span != nil {
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}
}

// Egress watches one outbound request (the egress client's Observe): a client span, and the
// requests and their time by host and status.
func (t *Telemetry) Egress(ctx context.Context, method, host string) (context.Context, func(status int, err error)) {
	start := time.Now()
	var span trace.Span
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(keyMethod.String(method), keyHost.String(host)))
	}
	return ctx, func(status int, err error) {
		t.egressRequests.Add(context.Background(), 1, attrs(keyHost.String(host), keyStatus.Int(status)))
		t.egressDuration.Record(context.Background(), since(start), attrs(keyHost.String(host)))
		if span != nil {
			span.SetAttributes(keyStatus.Int(status))
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}
}
