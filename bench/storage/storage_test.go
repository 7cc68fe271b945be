package storagebench

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"bothy.dev/bothy/storage"
)

// TestWritePath checks, in a fraction of a second, that the benchmark's Units of Work commit
// what it counts. The measurements are behind -bench and in bench/cmd/bothybench.
func TestWritePath(t *testing.T) {
	ctx := context.Background()
	t.Run("counts only committed events, each with its message row and thread count", func(t *testing.T) {
		s, err := Open(ctx, t.TempDir(), storage.Options{}, false)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		run, err := s.Rate(ctx, 32, 20*time.Millisecond, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if run.Ops <= 0 || run.PerSecond() <= 0 || run.CPU <= 0 {
			t.Fatalf("run = %+v", run)
		}
		events, messages, counted, err := s.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if events != s.DB.Head() || messages != events || counted != events {
			t.Fatalf("head %d, events %d, messages %d, counted in threads %d: want all equal", s.DB.Head(), events, messages, counted)
		}
	})
	t.Run("times every Unit of Work offered at a fixed rate", func(t *testing.T) {
		s, err := Open(ctx, t.TempDir(), storage.Options{}, false)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		l, err := s.Latency(ctx, 500, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if l.N != 50 || l.P50 <= 0 || l.P99 < l.P50 || int64(l.N) != s.DB.Head() {
			t.Fatalf("latencies %+v, head %d", l, s.DB.Head())
		}
	})
}

// BenchmarkDo: one op is one Unit of Work appending one message event (with its message row)
// from 256 concurrent writers, with group commit, without it, and with a simulated 2 ms commit.
//
//	go test ./bench/storage -run '^$' -bench Do -benchtime 3s -count 5
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		o    storage.Options
	}{
		{"group-commit", storage.Options{}},
		{"max-batch=1", storage.Options{MaxBatch: 1}},
		{"group-commit/simulated-2ms-commit", storage.Options{BenchCommitDelay: 2 * time.Millisecond}},
		{"max-batch=1/simulated-2ms-commit", storage.Options{MaxBatch: 1, BenchCommitDelay: 2 * time.Millisecond}},
	} {
		b.Run(fmt.Sprintf("%s/writers=256", c.name), func(b *testing.B) {
			s, err := Open(ctx, b.TempDir(), c.o, false)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.SetParallelism(max(1, 256/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.CreateMessage(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
