package storage_test

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// The numbers of /metrics that storage reads: the database's size, the agents' consumer lag and
// the runs that have not ended, on both engines.
func TestGauges(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		size, err := db.DatabaseBytes(ctx)
		if err != nil || size <= 0 {
			t.Fatalf("DatabaseBytes = %d, %v; want the size of a migrated database", size, err)
		}
		lag, n, err := db.ConsumerLag(ctx, 100)
		if err != nil || lag != 0 || n != 0 {
			t.Fatalf("ConsumerLag without consumers = %d, %d, %v; want 0, 0", lag, n, err)
		}
		s := storage.NewConsumerStore(db)
		bot := mustPrincipal(t, db, "bot", false, "active").ID
		other := mustPrincipal(t, db, "other", false, "active").ID
		if err := s.SaveAcks(ctx, map[kernel.ID]int64{bot: 70, other: 95}, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		if lag, n, err := db.ConsumerLag(ctx, 100); err != nil || lag != 30 || n != 2 {
			t.Fatalf("ConsumerLag = %d, %d, %v; want the furthest behind, 30, of 2", lag, n, err)
		}
		runs, err := db.LiveRuns(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, state := range []string{"queued", "running", "waiting_input"} {
			if v, ok := runs[state]; !ok || v != 0 {
				t.Errorf("LiveRuns[%s] = %d, %v; want 0 and present", state, v, ok)
			}
		}
	})
}
