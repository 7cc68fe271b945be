package driverbench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestMessageCreate checks, quickly, that both drivers run the whole benchmark transaction on
// the real schema and that it writes what it claims: the heavy runs are behind -bench and in
// bench/cmd/bothybench.
func TestMessageCreate(t *testing.T) {
	ctx := context.Background()
	for _, d := range Drivers {
		t.Run(d.Name+" commits single and grouped message creates", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b.db")
			db, fx, err := Create(ctx, d, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			w, err := NewWriter(ctx, db, fx)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(ctx, 64); err != nil {
				t.Fatal(err)
			}
			w.Close()
			var messages, events, seq, counted int64
			for q, dst := range map[string]*int64{
				`SELECT COUNT(*) FROM messages`:                                 &messages,
				`SELECT COUNT(*) FROM event_log WHERE type = 'message.created'`: &events,
				`SELECT value FROM sequence_counters WHERE name = 'event_seq'`:  &seq,
				`SELECT SUM(message_count) FROM threads`:                        &counted,
			} {
				if err := db.QueryRowContext(ctx, q).Scan(dst); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if messages != 65 || events != 65 || seq != 65 || counted != 65 {
				t.Fatalf("messages %d, events %d, event_seq %d, thread counts %d; want 65 each", messages, events, seq, counted)
			}
			took, err := OpenToFirstQuery(ctx, d, path)
			if err != nil {
				t.Fatal(err)
			}
			if took <= 0 || took > 10*time.Second {
				t.Fatalf("open to first query took %v", took)
			}
		})
	}
	t.Run("refuses an unknown driver", func(t *testing.T) {
		if _, err := ByName("mattn"); err == nil {
			t.Fatal("no error")
		}
	})
}

// BenchmarkMessageCreate: one op is one message create; per-commit=64 shares a commit among 64.
//
//	go test ./bench/driver -run '^$' -bench MessageCreate -benchtime 2s -count 5
func BenchmarkMessageCreate(b *testing.B) {
	ctx := context.Background()
	for _, d := range Drivers {
		for _, per := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/per-commit=%d", d.Name, per), func(b *testing.B) {
				db, fx, err := Create(ctx, d, filepath.Join(b.TempDir(), "b.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				w, err := NewWriter(ctx, db, fx)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				b.ResetTimer()
				for done := 0; done < b.N; done += per {
					if err := w.Commit(ctx, min(per, b.N-done)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
			})
		}
	}
}

// BenchmarkOpen is a connection's cost once the driver is warm; the cold first open of a process
// is measured by bothybench driver-start in a fresh process.
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	for _, d := range Drivers {
		b.Run(d.Name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "b.db")
			db, _, err := Create(ctx, d, path)
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
			b.ResetTimer()
			for range b.N {
				if _, err := OpenToFirstQuery(ctx, d, path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
