package storage_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

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
