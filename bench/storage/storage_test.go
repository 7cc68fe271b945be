package storagebench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/bench/internal/pgcluster"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/storetest/pgdb"
)

// engines open a store on SQLite (a temp file) and on PostgreSQL (a fresh database of the
// cluster BOTHY_TEST_POSTGRES_URL names; skipped when it is unset).
var engines = []struct {
	name engine.Name
	open func(tb testing.TB, o storage.Options, eventsOnly bool) *Store
}{
	{engine.SQLite, func(tb testing.TB, o storage.Options, eventsOnly bool) *Store {
		s, err := Open(context.Background(), tb.TempDir(), o, eventsOnly)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		return s
	}},
	{engine.Postgres, func(tb testing.TB, o storage.Options, eventsOnly bool) *Store {
		s, err := OpenPostgres(context.Background(), cluster(tb), o, eventsOnly)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			if err := s.Close(); err != nil {
				tb.Error(err)
			}
		})
		return s
	}},
}

var (
	clusterOnce sync.Once
	theCluster  *pgcluster.Cluster
	clusterErr  error
)

// cluster connects once to the test cluster (skipping the test without one); never closed.
func cluster(tb testing.TB) *pgcluster.Cluster {
	tb.Helper()
	u := pgdb.URL(tb)
	clusterOnce.Do(func() { theCluster, clusterErr = pgcluster.Connect(context.Background(), u) })
	if clusterErr != nil {
		tb.Fatal(clusterErr)
	}
	return theCluster
}

// TestWritePath checks, in a fraction of a second, that the benchmark's Units of Work commit
// what it counts, on both engines. The measurements are behind -bench and in
// bench/cmd/bothybench.
func TestWritePath(t *testing.T) {
	ctx := context.Background()
	for _, e := range engines {
		t.Run(string(e.name), func(t *testing.T) {
			t.Run("counts only committed events, each with its message row and thread count", func(t *testing.T) {
				s := e.open(t, storage.Options{}, false)
				// 400 ms: under the race detector on a loaded machine a PostgreSQL batch has
				// taken longer than 100 ms, and a window without a commit counts nothing.
				run, err := s.Rate(ctx, 32, 20*time.Millisecond, 400*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				if run.Ops <= 0 || run.PerSecond() <= 0 || run.CPU <= 0 {
					t.Fatalf("run = %+v", run)
				}
				if e.name == engine.Postgres && run.DBRead && run.DBCPU <= 0 {
					t.Fatalf("the cluster's CPU was read but did not grow: %+v", run)
				}
				events, messages, counted, err := s.Count(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if events != s.DB.Head() || messages != events || counted != events {
					t.Fatalf("head %d, events %d, messages %d, counted in threads %d: want all equal", s.DB.Head(), events, messages, counted)
				}
			})
			t.Run("events only: one event per Unit of Work and nothing else", func(t *testing.T) {
				s := e.open(t, storage.Options{}, true)
				run, err := s.Rate(ctx, 8, 20*time.Millisecond, 400*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				events, messages, _, err := s.Count(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if run.Ops <= 0 || events != s.DB.Head() || messages != 0 {
					t.Fatalf("run %+v, head %d, events %d, messages %d", run, s.DB.Head(), events, messages)
				}
			})
			t.Run("times every Unit of Work offered at a fixed rate", func(t *testing.T) {
				s := e.open(t, storage.Options{}, false)
				l, err := s.Latency(ctx, 500, 100*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				if l.N != 50 || l.P50 <= 0 || l.P99 < l.P50 || int64(l.N) != s.DB.Head() {
					t.Fatalf("latencies %+v, head %d", l, s.DB.Head())
				}
			})
		})
	}
}

// BenchmarkDo: one op is one Unit of Work appending one message event (with its message row)
// from 256 concurrent writers, with group commit, without it, and with a simulated 2 ms commit;
// and on PostgreSQL (BOTHY_TEST_POSTGRES_URL) from 8 writers, a message create or the event alone.
//
//	go test ./bench/storage -run '^$' -bench Do -benchtime 3s -count 5
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		engine     int // index in engines
		writers    int
		eventsOnly bool
		o          storage.Options
	}{
		{"group-commit", 0, 256, false, storage.Options{}},
		{"max-batch=1", 0, 256, false, storage.Options{MaxBatch: 1}},
		{"group-commit/simulated-2ms-commit", 0, 256, false, storage.Options{BenchCommitDelay: 2 * time.Millisecond}},
		{"max-batch=1/simulated-2ms-commit", 0, 256, false, storage.Options{MaxBatch: 1, BenchCommitDelay: 2 * time.Millisecond}},
		{"postgres/commit-phase", 1, 8, true, storage.Options{}},
		{"postgres/message-create", 1, 8, false, storage.Options{}},
	} {
		b.Run(fmt.Sprintf("%s/writers=%d", c.name, c.writers), func(b *testing.B) {
			s := engines[c.engine].open(b, c.o, c.eventsOnly)
			b.SetParallelism(max(1, c.writers/runtime.GOMAXPROCS(0)))
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
