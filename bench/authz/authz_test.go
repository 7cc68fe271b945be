package authzbench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/bench/internal/measure"
)

// BenchmarkAuthorizeWarm is the project's target "authorize from the warm cache: p99 ≤ 5 µs": a
// member's message-read decision on the delivery path with ~1,000 principals and ~1,000
// channels loaded.
//
//	go test -run '^$' -bench AuthorizeWarm -benchtime 2000000x ./bench/authz
//
// "decide" is the plain loop (ns/op); "sampled" times every call and reports p50, p99 and max in
// ns (each call then also pays two clock reads); "while-observing" samples the same way while a
// log tail applies 10,000 grant changes a second, each taking the cache's write lock.
func BenchmarkAuthorizeWarm(b *testing.B) {
	in, err := New(Default)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	d := in.Service.Delivery()
	b.Logf("%d principals, %d channels, %d grants, %d reads", Default.Principals, Default.Channels, in.Grants, len(in.Reads))

	b.Run("decide", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			r := &in.Reads[i%len(in.Reads)]
			if err := d.Authorize(ctx, r.Actor, messaging.ActMessageRead, r.Resource); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	sampled := func(b *testing.B, observe bool) {
		var stop func() (int, error)
		if observe {
			stop = in.Observing(10_000)
		}
		b.ResetTimer()
		ds, err := in.Sample(ctx, b.N)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if stop != nil {
			n, err := stop()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n), "events")
		}
		l := measure.Summarise(ds)
		b.ReportMetric(float64(l.P50.Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(l.P99.Nanoseconds()), "p99-ns")
		b.ReportMetric(float64(l.Max.Nanoseconds()), "max-ns")
	}
	b.Run("sampled", func(b *testing.B) { sampled(b, false) })
	b.Run("while-observing", func(b *testing.B) { sampled(b, true) })
}

// BenchmarkAuthorizeWarmParallel is the same decision from every core at once (the hub's
// writers), for contention on the cache's read lock.
func BenchmarkAuthorizeWarmParallel(b *testing.B) {
	in, err := New(Default)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	d := in.Service.Delivery()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(time.Now().UnixNano()) & 0xffff
		for pb.Next() {
			r := &in.Reads[i%len(in.Reads)]
			if err := d.Authorize(ctx, r.Actor, messaging.ActMessageRead, r.Resource); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

func TestRunWritesEveryFigure(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), &out, 2000); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"authz/authorize-warm/p99", "authz/authorize-warm/while-observing/p99", "authz/authorize-warm/while-observing/events"} {
		if !strings.Contains(out.String(), "RESULT\t"+name+"\t") {
			t.Errorf("no %s in\n%s", name, out.String())
		}
	}
}

func TestChurnLeavesTheReadsAllowed(t *testing.T) {
	in, err := New(Default)
	if err != nil {
		t.Fatal(err)
	}
	for range 5000 {
		in.Service.Observe(in.NextEvent())
	}
	if err := in.ObserveErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Sample(context.Background(), len(in.Reads)); err != nil {
		t.Fatal(err)
	}
}
