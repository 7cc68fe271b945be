package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"bothy.dev/bothy/storage/commit"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BenchmarkMessageCreateHooks is what the hooks of one message create cost with metrics on and no
// traces (the default): the request's observer, its Unit of Work's, and a batch of one. bench/'s
// telemetry-overhead measures the whole server; this is the hooks alone, steady on a busy machine.
func BenchmarkMessageCreateHooks(b *testing.B) {
	for _, traced := range []bool{false, true} {
		name := "metrics"
		o := Options{SampleRatio: 1}
		if traced {
			name, o.SpanExporter = "traces-discarded", discard{}
		}
		b.Run(name, func(b *testing.B) {
			tel, err := New(o)
			if err != nil {
				b.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			req := httptest.NewRequest(http.MethodPost, "/api/v1/threads/x/messages", nil)
			w := tel.Writer()
			b.ReportAllocs()
			for b.Loop() {
				ctx, end := tel.Requests().Request(context.Background(), req, "cid")
				uctx, done := w.Unit(ctx)
				now := time.Now()
				w.Batch(commit.BatchReport{Units: []context.Context{uctx}, Committed: 1, Events: 1, Attempts: 1, Start: now, CommitStart: now, End: now})
				done(nil)
				end("/api/v1/threads/{id}/messages", http.StatusCreated)
			}
		})
	}
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
