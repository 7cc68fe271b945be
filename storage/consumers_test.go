package storage_test

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

func TestConsumerStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := storage.NewConsumerStore(db)
		bot := mustPrincipal(t, db, "bot", false, "active").ID
		other := mustPrincipal(t, db, "other", false, "active").ID
		at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		acked := func(t *testing.T, agent kernel.ID) (int64, bool) {
			t.Helper()
			seq, ok, err := s.AckedSeq(ctx, agent)
			if err != nil {
				t.Fatal(err)
			}
			return seq, ok
		}
		if _, ok := acked(t, bot); ok {
			t.Fatal("a cursor before any ack")
		}
		if err := s.SaveAcks(ctx, map[kernel.ID]int64{bot: 7, other: 3}, at); err != nil {
			t.Fatal(err)
		}
		if seq, ok := acked(t, bot); !ok || seq != 7 {
			t.Fatalf("bot's cursor %d %v, want 7", seq, ok)
		}
		if err := s.SaveAcks(ctx, map[kernel.ID]int64{bot: 5, other: 9}, at.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if seq, _ := acked(t, bot); seq != 7 {
			t.Fatalf("a lower ack moved bot's cursor back to %d", seq)
		}
		if seq, _ := acked(t, other); seq != 9 {
			t.Fatalf("other's cursor %d, want 9", seq)
		}
		if err := s.SaveAcks(ctx, map[kernel.ID]int64{bot: 8, kernel.NewID(): 1}, at); err == nil {
			t.Fatal("saved the cursor of a principal that does not exist")
		}
		if seq, _ := acked(t, bot); seq != 7 {
			t.Fatalf("a failed save changed bot's cursor to %d: the acks are saved together or not at all", seq)
		}
	})
}
