package appliance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"bothy.dev/bothy/appliance/config"
)

// telemetryClient is an owner with a thread to post in, on a running appliance.
type telemetryClient struct {
	t      *testing.T
	a      *App
	token  string
	thread string
}

// call POSTs in to path as the owner and decodes the answer into out; it returns the answer's
// Correlation-Id.
func (c *telemetryClient) call(path, token string, in, out any, want int) string {
	c.t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(http.MethodPost, "http://"+c.a.PublicAddr()+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		c.t.Fatalf("POST %s = %d, want %d: %s", path, resp.StatusCode, want, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			c.t.Fatalf("POST %s: %v", path, err)
		}
	}
	return resp.Header.Get("Correlation-Id")
}

// startWithOwner runs a on cfg and makes its owner, a space and a channel.
func startWithOwner(t *testing.T, a *App) *telemetryClient {
	t.Helper()
	mustRun(t, a)
	code, ok, err := a.Identity.IssueSetupCode(context.Background())
	if err != nil || !ok {
		t.Fatalf("setup code: %v %v", ok, err)
	}
	c := &telemetryClient{t: t, a: a}
	c.call("/api/v1/setup", "", map[string]string{"code": code, "handle": "owner", "display_name": "Owner", "password": "telemetry horse battery"}, nil, http.StatusCreated)
	var ids struct {
		ID           string `json:"id"`
		MainThreadID string `json:"main_thread_id"`
		Token        string `json:"token"`
	}
	c.call("/api/v1/auth/login", "", map[string]string{"handle": "owner", "password": "telemetry horse battery"}, &ids, http.StatusOK)
	c.token = ids.Token
	c.call("/api/v1/spaces", c.token, map[string]string{"name": "Ops"}, &ids, http.StatusCreated)
	c.call("/api/v1/spaces/"+ids.ID+"/channels", c.token, map[string]string{"name": "general"}, &ids, http.StatusCreated)
	c.thread = ids.MainThreadID
	return c
}

func (c *telemetryClient) post(i int) string {
	c.t.Helper()
	return c.call("/api/v1/threads/"+c.thread+"/messages", c.token, map[string]string{"content": fmt.Sprintf("message %d", i)}, nil, http.StatusCreated)
}

// scrape reads /metrics from the internal listener and parses it as Prometheus text.
func scrape(t *testing.T, a *App) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + a.InternalAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("GET /metrics: Content-Type %q, want Prometheus text", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	return families
}

// value is the sum over the series of family name whose labels include want: a counter's or
// gauge's value, a histogram's count.
func value(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	f, ok := families[name]
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
series:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue series
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, found
}

// TestMetrics holds /metrics on the internal listener to Prometheus text whose counters move
// with the work: three messages posted add three requests of their route, three committed Units
// of Work, batches and commits to their histograms and three events to the log's head; the gauges
// read from the database and the gateway are there. With telemetry.enabled false there is no
// /metrics.
func TestMetrics(t *testing.T) {
	a := mustNew(t, testConfig(t))
	c := startWithOwner(t, a)

	route := map[string]string{"http_route": "/api/v1/threads/{id}/messages", "http_request_method": "POST"}
	created := map[string]string{"http_route": "/api/v1/threads/{id}/messages", "http_response_status_code": "201"}
	committed := map[string]string{"outcome": "committed"}
	before := scrape(t, a)
	reqs0, _ := value(t, before, "bothy_http_requests_total", created)
	lat0, _ := value(t, before, "bothy_http_request_duration_seconds", route)
	units0, ok := value(t, before, "bothy_uow_units_total", committed)
	if !ok {
		t.Fatal("no bothy_uow_units_total after the setup's writes")
	}
	batches0, _ := value(t, before, "bothy_uow_batch_units", nil)
	commits0, _ := value(t, before, "bothy_uow_commit_duration_seconds", nil)
	head0, _ := value(t, before, "bothy_eventlog_head", nil)

	for i := range 3 {
		c.post(i)
	}
	after := scrape(t, a)
	grew := func(name string, labels map[string]string, was, by float64) {
		t.Helper()
		now, ok := value(t, after, name, labels)
		if !ok || now < was+by {
			t.Errorf("%s%v = %v (found %v), want at least %v", name, labels, now, ok, was+by)
		}
	}
	if now, _ := value(t, after, "bothy_http_requests_total", created); now != reqs0+3 {
		t.Errorf("bothy_http_requests_total%v = %v, want %v", created, now, reqs0+3)
	}
	grew("bothy_http_request_duration_seconds", route, lat0, 3)
	grew("bothy_uow_units_total", committed, units0, 3)
	grew("bothy_uow_batch_units", nil, batches0, 1)
	grew("bothy_uow_commit_duration_seconds", nil, commits0, 1)
	grew("bothy_eventlog_head", nil, head0, 3)
	for _, name := range []string{"bothy_database_size_bytes", "bothy_gateway_connections", "bothy_gateway_queued_frames",
		"bothy_gateway_tail_lag", "bothy_agent_consumer_lag", "bothy_jobs_backlog"} {
		if _, ok := value(t, after, name, nil); !ok {
			t.Errorf("no %s in /metrics", name)
		}
	}
	if size, _ := value(t, after, "bothy_database_size_bytes", nil); size <= 0 {
		t.Errorf("bothy_database_size_bytes = %v", size)
	}
	if _, ok := value(t, after, "bothy_runs", map[string]string{"state": "queued"}); !ok {
		t.Error("no bothy_runs{state=queued} in /metrics")
	}

	t.Run("off", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Telemetry.Enabled = false
		a := mustNew(t, cfg)
		mustRun(t, a)
		resp, err := http.Get("http://" + a.InternalAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /metrics with telemetry off = %d, want 404", resp.StatusCode)
		}
	})
}

// TestTraceOfMessageCreate holds the trace of one message create: the request's server span,
// named by its route and carrying its status and correlation id; the Unit of Work as its child;
// the batch that committed it as the unit's child, with the COMMIT inside it.
func TestTraceOfMessageCreate(t *testing.T) {
	cfg := testConfig(t)
	exp := tracetest.NewInMemoryExporter()
	a, err := newApp(cfg, testLogger(t), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	a.spanExporter = exp
	if _, err := a.open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	c := startWithOwner(t, a)
	exp.Reset()
	cid := c.post(1)
	if err := a.telemetry.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := exp.GetSpans()
	var request *tracetest.SpanStub
	for i, s := range spans {
		if s.Name == "POST /api/v1/threads/{id}/messages" {
			request = &spans[i]
		}
	}
	if request == nil {
		t.Fatalf("no span of the request among %v", names(spans))
	}
	attrs := map[string]string{}
	for _, kv := range request.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["bothy.correlation_id"] != cid || cid == "" {
		t.Errorf("request span's correlation id %q, want the answer's %q", attrs["bothy.correlation_id"], cid)
	}
	if attrs["http.response.status_code"] != "201" || attrs["http.route"] != "/api/v1/threads/{id}/messages" {
		t.Errorf("request span's attributes %v", attrs)
	}
	childOf := func(name string, parent tracetest.SpanStub) *tracetest.SpanStub {
		for i, s := range spans {
			if s.Name == name && s.Parent.SpanID() == parent.SpanContext.SpanID() && s.SpanContext.TraceID() == parent.SpanContext.TraceID() {
				return &spans[i]
			}
		}
		return nil
	}
	unit := childOf("uow", *request)
	if unit == nil {
		t.Fatalf("no Unit of Work span under the request among %v", names(spans))
	}
	batch := childOf("uow.batch", *unit)
	if batch == nil {
		t.Fatalf("no batch span under the Unit of Work among %v", names(spans))
	}
	commit := childOf("uow.commit", *batch)
	if commit == nil {
		t.Fatalf("no commit span under the batch among %v", names(spans))
	}
	if commit.StartTime.Before(batch.StartTime) || commit.EndTime.After(batch.EndTime) || batch.EndTime.After(unit.EndTime.Add(time.Millisecond)) {
		t.Errorf("spans out of order: batch %v–%v, commit %v–%v, unit ends %v", batch.StartTime, batch.EndTime, commit.StartTime, commit.EndTime, unit.EndTime)
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestTelemetryConfigRefusals holds the telemetry.* checks: a sample ratio outside 0 to 1 and an
// endpoint that is not an http(s) URL are refused, naming the key.
func TestTelemetryConfigRefusals(t *testing.T) {
	for key, v := range map[string]string{"telemetry.sample_ratio": "1.5", "telemetry.otlp_endpoint": "collector:4318"} {
		_, err := config.Load(config.Input{Flags: []config.Override{{Key: key, Value: v, Flag: "--set"}}})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v, want a refusal naming the key", key, v, err)
		}
	}
}
