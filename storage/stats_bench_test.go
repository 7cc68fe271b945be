package storage_test

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// BenchmarkStats measures the overview's reads with 10,000 messages and 1,000 runs in the last
// day (the console's render target: p99 ≤ 10 ms for the whole page).
func BenchmarkStats(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, eng storetest.Engine) {
		db := eng.Open(b, storage.Options{})
		now := time.Now().UTC()
		msgs := make([]time.Time, 10000)
		for i := range msgs {
			msgs[i] = now.Add(-time.Duration(i%1440) * time.Minute)
		}
		runs := make([]time.Time, 1000)
		for i := range runs {
			runs[i] = now.Add(-time.Duration(i) * time.Minute)
		}
		statsFixture(b, db, msgs, runs)
		st := storage.NewStatsStore(db)
		ctx := context.Background()
		since := now.Truncate(time.Hour).Add(-23 * time.Hour)
		b.Run("counts", func(b *testing.B) {
			for b.Loop() {
				if _, err := st.Counts(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("hourly", func(b *testing.B) {
			for b.Loop() {
				if _, err := st.Hourly(ctx, since, 24); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("size", func(b *testing.B) {
			for b.Loop() {
				if _, err := st.DatabaseSize(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
