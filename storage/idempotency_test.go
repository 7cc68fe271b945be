package storage_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

var _ kernel.IdempotencyStore = (*storage.DB)(nil)

func TestIdempotencyStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		alice, bob := kernel.NewID(), kernel.NewID()
		rec := kernel.IdempotencyRecord{Fingerprint: "sha256:abc", Status: 201, Body: []byte(`{"id":"1"}`)}
		save := func(p kernel.ID, key string, r kernel.IdempotencyRecord) error {
			return db.Do(ctx, func(ctx context.Context) error { return db.SaveIdempotency(ctx, p, key, r) })
		}

		t.Run("answers false for a new key", func(t *testing.T) {
			if _, ok, err := db.LookupIdempotency(ctx, alice, "k1"); ok || err != nil {
				t.Fatalf("ok %v, %v", ok, err)
			}
		})
		t.Run("reads back what it stored, per principal", func(t *testing.T) {
			if err := save(alice, "k1", rec); err != nil {
				t.Fatal(err)
			}
			got, ok, err := db.LookupIdempotency(ctx, alice, "k1")
			if !ok || err != nil || !reflect.DeepEqual(got, rec) {
				t.Fatalf("got %+v %v %v", got, ok, err)
			}
			if _, ok, _ := db.LookupIdempotency(ctx, bob, "k1"); ok {
				t.Fatal("bob sees alice's key")
			}
		})
		t.Run("keeps an empty body empty", func(t *testing.T) {
			if err := save(alice, "k2", kernel.IdempotencyRecord{Fingerprint: "f", Status: 204}); err != nil {
				t.Fatal(err)
			}
			got, ok, err := db.LookupIdempotency(ctx, alice, "k2")
			if !ok || err != nil || got.Body != nil || got.Status != 204 {
				t.Fatalf("got %+v %v %v", got, ok, err)
			}
		})
		t.Run("refuses a key stored twice with conflict, also from concurrent units", func(t *testing.T) {
			if err := save(alice, "k1", rec); !kernel.IsCode(err, kernel.CodeConflict) {
				t.Fatalf("err = %v", err)
			}
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = save(bob, "race", rec) }()
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !kernel.IsCode(err, kernel.CodeConflict):
					t.Fatalf("err = %v", err)
				}
			}
			if won != 1 {
				t.Fatalf("%d saves won", won)
			}
		})
	})
}

func TestDeleteIdempotencyBefore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		clock := kernel.NewManualClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		db := e.Open(t, storage.Options{Clock: clock})
		alice := kernel.NewID()
		save := func(key string) {
			t.Helper()
			if err := db.Do(ctx, func(ctx context.Context) error {
				return db.SaveIdempotency(ctx, alice, key, kernel.IdempotencyRecord{Fingerprint: "f", Status: 201})
			}); err != nil {
				t.Fatal(err)
			}
		}
		save("old-1")
		clock.Advance(time.Minute)
		save("old-2")
		clock.Advance(25 * time.Hour)
		save("new")
		cutoff := clock.Now().Add(-24 * time.Hour)

		n, err := db.DeleteIdempotencyBefore(ctx, cutoff, 1)
		if err != nil || n != 1 {
			t.Fatalf("first batch deleted %d, %v", n, err)
		}
		if _, ok, _ := db.LookupIdempotency(ctx, alice, "old-1"); ok {
			t.Fatal("the oldest key is not the first deleted")
		}
		if n, err = db.DeleteIdempotencyBefore(ctx, cutoff, 1000); err != nil || n != 1 {
			t.Fatalf("second batch deleted %d, %v", n, err)
		}
		if n, err = db.DeleteIdempotencyBefore(ctx, cutoff, 1000); err != nil || n != 0 {
			t.Fatalf("third batch deleted %d, %v", n, err)
		}
		if _, ok, _ := db.LookupIdempotency(ctx, alice, "new"); !ok {
			t.Fatal("a key younger than the cutoff was deleted")
		}
	})
}
