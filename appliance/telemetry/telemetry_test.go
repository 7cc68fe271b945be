package telemetry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/storage/commit"
)

func newTraced(t *testing.T) (*Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(Options{SampleRatio: 1, SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	return tel, exp
}

// scrape serves Handler once and parses it as Prometheus text.
func scrape(t *testing.T, tel *Telemetry) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics = %d", rec.Code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	return f
}

// sample is the value of the one series of name whose labels include want (a histogram's count).
func sample(t *testing.T, f map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	fam, ok := f[name]
	if !ok {
		t.Fatalf("no %s in /metrics", name)
	}
next:
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no series of %s with %v", name, want)
	return 0
}

func byName(spans tracetest.SpanStubs, name string) *tracetest.SpanStub {
	for i := range spans {
		if spans[i].Name == name {
			return &spans[i]
		}
	}
	return nil
}

// A request becomes a server span named by its method and route pattern, with its status and
// correlation id, and one count and one latency of its route; a path no route matched is counted
// as "unmatched", never by its path.
func TestRequests(t *testing.T) {
	tel, exp := newTraced(t)
	obs := tel.Requests()
	r := httptest.NewRequest(http.MethodPost, "/api/v1/threads/abc/messages", nil)
	_, end := obs.Request(context.Background(), r, "cid-1")
	end("/api/v1/threads/{id}/messages", http.StatusCreated)
	_, end = obs.Request(context.Background(), httptest.NewRequest(http.MethodGet, "/no/such/path", nil), "cid-2")
	end("", http.StatusNotFound)

	f := scrape(t, tel)
	if n := sample(t, f, "bothy_http_requests_total", map[string]string{"http_route": "/api/v1/threads/{id}/messages",
		"http_request_method": "POST", "http_response_status_code": "201"}); n != 1 {
		t.Errorf("requests of the route = %v, want 1", n)
	}
	if n := sample(t, f, "bothy_http_request_duration_seconds", map[string]string{"http_route": "/api/v1/threads/{id}/messages"}); n != 1 {
		t.Errorf("latencies of the route = %v, want 1", n)
	}
	if n := sample(t, f, "bothy_http_requests_total", map[string]string{"http_route": "unmatched", "http_response_status_code": "404"}); n != 1 {
		t.Errorf("unmatched requests = %v, want 1", n)
	}
	s := byName(exp.GetSpans(), "POST /api/v1/threads/{id}/messages")
	if s == nil || s.SpanKind != trace.SpanKindServer {
		t.Fatalf("no server span of the route: %+v", exp.GetSpans())
	}
	got := map[string]string{}
	for _, kv := range s.Attributes {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	if got["bothy.correlation_id"] != "cid-1" || got["http.response.status_code"] != "201" {
		t.Errorf("span attributes %v", got)
	}
}

// A request that carries a traceparent continues its caller's trace.
func TestRequestsContinueTheCallersTrace(t *testing.T) {
	tel, exp := newTraced(t)
	r := httptest.NewRequest(http.MethodGet, "/api/v1/me", nil)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	_, end := tel.Requests().Request(context.Background(), r, "cid")
	end("/api/v1/me", http.StatusOK)
	s := byName(exp.GetSpans(), "GET /api/v1/me")
	if s == nil || s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("span %+v does not continue the caller's trace", s)
	}
}

// A Unit of Work under a traced request is its child span; its batch is the unit's child, linked
// to the batch's other traced units, with the COMMIT inside; the batch size and the commit time
// reach their histograms, and the unit its outcome's count.
func TestWriter(t *testing.T) {
	tel, exp := newTraced(t)
	req, end := tel.Requests().Request(context.Background(), httptest.NewRequest(http.MethodPost, "/x", nil), "cid")
	w := tel.Writer()
	u1, done1 := w.Unit(req)
	u2, done2 := w.Unit(req)
	untraced, done3 := w.Unit(context.Background())
	if trace.SpanContextFromContext(untraced).IsValid() {
		t.Error("a unit outside any trace got a span")
	}
	start := time.Now()
	w.Batch(commit.BatchReport{Units: []context.Context{untraced, u1, u2}, Committed: 3, Events: 3, Attempts: 1,
		Start: start, CommitStart: start.Add(time.Millisecond), End: start.Add(3 * time.Millisecond)})
	done1(nil)
	done2(nil)
	done3(errors.New("conflict"))
	end("/x", http.StatusCreated)

	spans := exp.GetSpans()
	unit, batch, cs := byName(spans, "uow"), byName(spans, "uow.batch"), byName(spans, "uow.commit")
	if unit == nil || batch == nil || cs == nil {
		t.Fatalf("spans %v", spans)
	}
	if batch.Parent.SpanID() != trace.SpanContextFromContext(u1).SpanID() {
		t.Error("the batch is not the first traced unit's child")
	}
	if len(batch.Links) != 1 || batch.Links[0].SpanContext.SpanID() != trace.SpanContextFromContext(u2).SpanID() {
		t.Errorf("the batch's links %v, want the second unit", batch.Links)
	}
	if cs.Parent.SpanID() != batch.SpanContext.SpanID() || !cs.StartTime.Equal(start.Add(time.Millisecond)) || !cs.EndTime.Equal(start.Add(3*time.Millisecond)) {
		t.Errorf("commit span %v–%v under %v", cs.StartTime, cs.EndTime, cs.Parent.SpanID())
	}
	f := scrape(t, tel)
	if n := sample(t, f, "bothy_uow_batch_units", nil); n != 1 {
		t.Errorf("batches = %v, want 1", n)
	}
	if n := sample(t, f, "bothy_uow_commit_duration_seconds", nil); n != 1 {
		t.Errorf("commits = %v, want 1", n)
	}
	if n := sample(t, f, "bothy_uow_units_total", map[string]string{"outcome": "committed"}); n != 2 {
		t.Errorf("committed units = %v, want 2", n)
	}
	if n := sample(t, f, "bothy_uow_units_total", map[string]string{"outcome": "failed"}); n != 1 {
		t.Errorf("failed units = %v, want 1", n)
	}
}

// Without an exporter or an endpoint no span is made, while the metrics still count.
func TestNoTracesWithoutAnEndpoint(t *testing.T) {
	tel, err := New(Options{SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	if tel.Tracing() {
		t.Fatal("tracing without an endpoint")
	}
	ctx, end := tel.Requests().Request(context.Background(), httptest.NewRequest(http.MethodGet, "/x", nil), "cid")
	if trace.SpanContextFromContext(ctx).IsValid() {
		t.Error("a span without an endpoint")
	}
	end("/x", http.StatusOK)
	if n := sample(t, scrape(t, tel), "bothy_http_requests_total", map[string]string{"http_route": "/x"}); n != 1 {
		t.Errorf("requests = %v, want 1", n)
	}
}

// The gauges read their sources at each scrape; a source that fails leaves its gauge out and
// the others in.
func TestGauges(t *testing.T) {
	tel, _ := newTraced(t)
	head := int64(42)
	err := tel.Observe(Sources{
		Head:    func() int64 { return head },
		Gateway: func() (int, int, int64) { return 3, 7, 40 },
		ConsumerLag: func(ctx context.Context, h int64) (int64, int, error) {
			return h - 30, 2, nil
		},
		JobBacklog: func(context.Context) (int64, error) { return 0, errors.New("database gone") },
		LiveRuns: func(context.Context) (map[string]int64, error) {
			return map[string]int64{"queued": 4, "running": 1}, nil
		},
		DatabaseBytes: func(context.Context) (int64, error) { return 1 << 20, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	f := scrape(t, tel)
	for name, want := range map[string]float64{"bothy_eventlog_head": 42, "bothy_gateway_connections": 3, "bothy_gateway_queued_frames": 7,
		"bothy_gateway_tail_lag": 2, "bothy_agent_consumer_lag": 12, "bothy_agent_consumers": 2, "bothy_database_size_bytes": 1 << 20} {
		if got := sample(t, f, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := sample(t, f, "bothy_runs", map[string]string{"state": "queued"}); got != 4 {
		t.Errorf("queued runs = %v, want 4", got)
	}
	if _, ok := f["bothy_jobs_backlog"]; ok {
		t.Error("a backlog that could not be read is shown")
	}
	head = 50
	if got := sample(t, scrape(t, tel), "bothy_eventlog_head", nil); got != 50 {
		t.Errorf("head after it moved = %v, want 50", got)
	}
}

// A gateway connection is a span from its start to its end, and its end is counted by close code.
func TestConnections(t *testing.T) {
	tel, exp := newTraced(t)
	ended := tel.Connections().Connected(gateway.ConnInfo{CorrelationID: "cid"})
	ended(gateway.CloseCode(4009))
	if byName(exp.GetSpans(), "gateway.session") == nil {
		t.Error("no span of the connection")
	}
	if n := sample(t, scrape(t, tel), "bothy_gateway_connections_closed_total", map[string]string{"bothy_close_code": "4009"}); n != 1 {
		t.Errorf("closed connections = %v, want 1", n)
	}
}

func TestOTLPURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://collector:4318":          "http://collector:4318/v1/traces",
		"http://collector:4318/":         "http://collector:4318/v1/traces",
		"https://otel.example/custom/tr": "https://otel.example/custom/tr",
	} {
		if got := otlpURL(in, "/v1/traces"); got != want {
			t.Errorf("otlpURL(%q) = %q, want %q", in, got, want)
		}
	}
}
