package storage_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

func TestSigningKeyStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := storage.NewSigningKeyStore(db)
		at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		key := func(b byte) runs.SigningKey {
			return runs.SigningKey{KID: string(kernel.NewID()), Purpose: runs.PurposeInvocation, Algorithm: runs.AlgorithmEdDSA,
				Seed: bytes.Repeat([]byte{b}, ed25519.SeedSize), CreatedAt: at}
		}
		t.Run("keeps the first key of a purpose", func(t *testing.T) {
			first := key(1)
			got, err := s.EnsureSigningKey(ctx, first)
			if err != nil {
				t.Fatal(err)
			}
			if got.KID != first.KID || !bytes.Equal(got.Seed, first.Seed) || !got.CreatedAt.Equal(at) {
				t.Fatalf("got %+v, want %+v", got, first)
			}
			again, err := s.EnsureSigningKey(ctx, key(2))
			if err != nil {
				t.Fatal(err)
			}
			if again.KID != first.KID || !bytes.Equal(again.Seed, first.Seed) {
				t.Fatalf("a second candidate replaced the key: %+v", again)
			}
		})
		t.Run("two keyrings made at once sign with the same key", func(t *testing.T) {
			var wg sync.WaitGroup
			kids := make([]string, 8)
			errs := make([]error, 8)
			for i := range kids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, kids[i], errs[i] = runs.NewKeyring(s, nil).Signer(ctx)
				}()
			}
			wg.Wait()
			for i := range kids {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if kids[i] != kids[0] {
					t.Fatalf("keyrings disagree: %v", kids)
				}
			}
		})
	})
}
