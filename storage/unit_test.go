package storage_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

func TestAfterCommit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		t.Run("runs once the unit has committed, and never for a unit that rolled back", func(t *testing.T) {
			var fired atomic.Int32
			var wg sync.WaitGroup
			errs := make([]error, 16)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = db.Do(ctx, func(ctx context.Context) error {
						db.AfterCommit(ctx, func() { fired.Add(1) })
						if i%2 == 1 {
							return errors.New("rolled back")
						}
						return nil
					})
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if (err == nil) != (i%2 == 0) {
					t.Fatalf("unit %d: %v", i, err)
				}
			}
			if n := fired.Load(); n != 8 {
				t.Fatalf("fired %d times, want 8", n)
			}
		})
		t.Run("Exec writes in the unit and rolls back with it", func(t *testing.T) {
			boom := errors.New("boom")
			err := db.Do(ctx, func(ctx context.Context) error {
				if _, err := db.Exec(ctx, `INSERT INTO idempotency_keys (principal_id, idem_key, fingerprint, status_code, response_body, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
					"p", "k", "f", 201, "", "2026-01-01T00:00:00.000000Z"); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatal(err)
			}
			if _, ok, _ := db.LookupIdempotency(ctx, "p", "k"); ok {
				t.Fatal("the row of a rolled back unit is there")
			}
		})
		t.Run("Exec and AfterCommit panic outside a unit", func(t *testing.T) {
			for name, fn := range map[string]func(){
				"Exec":        func() { db.Exec(ctx, `SELECT 1`) },
				"AfterCommit": func() { db.AfterCommit(ctx, func() {}) },
			} {
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("%s did not panic", name)
						}
					}()
					fn()
				}()
			}
		})
	})
}
