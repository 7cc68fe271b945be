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

// signingKey is a key of purpose invocation with a seed of b, made at.
func signingKey(b byte, at time.Time) runs.SigningKey {
	return runs.SigningKey{KID: string(kernel.NewID()), Purpose: runs.PurposeInvocation, Algorithm: runs.AlgorithmEdDSA,
		Seed: bytes.Repeat([]byte{b}, ed25519.SeedSize), CreatedAt: at}
}

// mustKIDs is the key ids SigningKeys lists, in its order.
func mustKIDs(t *testing.T, s *storage.SigningKeyStore, since time.Time) []string {
	t.Helper()
	keys, err := s.SigningKeys(context.Background(), runs.PurposeInvocation, since)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		out = append(out, k.KID)
	}
	return out
}

func TestSigningKeyStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := storage.NewSigningKeyStore(db)
		at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		first := signingKey(1, at)
		t.Run("keeps the first key of a purpose", func(t *testing.T) {
			got, err := s.EnsureSigningKey(ctx, first)
			if err != nil {
				t.Fatal(err)
			}
			if got.KID != first.KID || !bytes.Equal(got.Seed, first.Seed) || !got.CreatedAt.Equal(at) || got.RetiredAt != nil {
				t.Fatalf("got %+v, want %+v", got, first)
			}
			again, err := s.EnsureSigningKey(ctx, signingKey(2, at))
			if err != nil {
				t.Fatal(err)
			}
			if again.KID != first.KID || !bytes.Equal(again.Seed, first.Seed) {
				t.Fatalf("a second candidate replaced the key: %+v", again)
			}
		})

		rotatedAt := at.Add(time.Hour)
		second := signingKey(3, rotatedAt)
		t.Run("a rotation retires the current key and makes the candidate current", func(t *testing.T) {
			got, rotated, err := s.RotateSigningKey(ctx, first.KID, second)
			if err != nil || !rotated {
				t.Fatalf("rotated %v, err %v", rotated, err)
			}
			if got.KID != second.KID || got.RetiredAt != nil || !bytes.Equal(got.Seed, second.Seed) {
				t.Fatalf("current after the rotation %+v", got)
			}
			keys, err := s.SigningKeys(ctx, runs.PurposeInvocation, at)
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != 2 || keys[0].KID != second.KID || keys[1].KID != first.KID ||
				keys[1].RetiredAt == nil || !keys[1].RetiredAt.Equal(rotatedAt) {
				t.Fatalf("keys %+v", keys)
			}
			if cur, err := s.EnsureSigningKey(ctx, signingKey(4, rotatedAt)); err != nil || cur.KID != second.KID {
				t.Fatalf("ensure after the rotation: %+v, %v", cur, err)
			}
		})

		t.Run("a rotation of a key that is no longer current changes nothing", func(t *testing.T) {
			got, rotated, err := s.RotateSigningKey(ctx, first.KID, signingKey(5, rotatedAt.Add(time.Minute)))
			if err != nil || rotated || got.KID != second.KID {
				t.Fatalf("got %+v, rotated %v, err %v", got, rotated, err)
			}
			if kids := mustKIDs(t, s, at); len(kids) != 2 {
				t.Fatalf("keys %v", kids)
			}
		})

		t.Run("retired keys drop out of the list and are deleted after the cutoff", func(t *testing.T) {
			if kids := mustKIDs(t, s, rotatedAt.Add(time.Microsecond)); len(kids) != 1 || kids[0] != second.KID {
				t.Fatalf("keys since after the retirement %v", kids)
			}
			if n, err := s.DeleteRetiredSigningKeys(ctx, runs.PurposeInvocation, rotatedAt); err != nil || n != 0 {
				t.Fatalf("deleted %d at the retirement, err %v", n, err)
			}
			if n, err := s.DeleteRetiredSigningKeys(ctx, runs.PurposeInvocation, rotatedAt.Add(time.Second)); err != nil || n != 1 {
				t.Fatalf("deleted %d after the retirement, err %v", n, err)
			}
			if kids := mustKIDs(t, s, time.Time{}); len(kids) != 1 || kids[0] != second.KID {
				t.Fatalf("keys after the deletion %v", kids)
			}
		})
	})
}

// Several nodes on one database: the first key, and a rotation they all try at once, end with
// one current key every node signs with.
func TestSigningKeyStoreNodes(t *testing.T) {
	storetest.Run(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		where := e.NewDatabase(t)
		nodes := []*storage.SigningKeyStore{
			storage.NewSigningKeyStore(e.OpenAt(t, where, storage.Options{})),
			storage.NewSigningKeyStore(e.OpenAt(t, where, storage.Options{})),
		}
		clock := kernel.NewManualClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		const n = 8
		t.Run("keyrings made at once sign with the same key", func(t *testing.T) {
			var wg sync.WaitGroup
			kids := make([]string, n)
			errs := make([]error, n)
			for i := range kids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, kids[i], errs[i] = runs.NewKeyring(nodes[i%2], clock).Signer(ctx)
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

		t.Run("two nodes rotating at once leave one current key", func(t *testing.T) {
			cur, err := nodes[0].EnsureSigningKey(ctx, signingKey(9, clock.Now()))
			if err != nil {
				t.Fatal(err)
			}
			at := clock.Now().Add(time.Hour)
			var wg sync.WaitGroup
			got := make([]runs.SigningKey, n)
			rotated := make([]bool, n)
			errs := make([]error, n)
			for i := range got {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], rotated[i], errs[i] = nodes[i%2].RotateSigningKey(ctx, cur.KID, signingKey(byte(i), at))
				}()
			}
			wg.Wait()
			winners := 0
			for i := range got {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if rotated[i] {
					winners++
				}
				if got[i].KID != got[0].KID || got[i].KID == cur.KID {
					t.Fatalf("rotations answer different current keys: %+v", got)
				}
			}
			if winners != 1 {
				t.Fatalf("%d rotations won", winners)
			}
			for _, node := range nodes {
				if kids := mustKIDs(t, node, at.Add(time.Microsecond)); len(kids) != 1 || kids[0] != got[0].KID {
					t.Fatalf("current keys %v, want %s", kids, got[0].KID)
				}
			}
		})

		t.Run("a node reads the key another node rotated to", func(t *testing.T) {
			o := runs.KeyringOptions{Rotation: time.Hour, TokenTTL: time.Minute}
			a, b := runs.NewKeyringWith(nodes[0], clock, o), runs.NewKeyringWith(nodes[1], clock, o)
			_, before, err := b.Signer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Hour)
			r, err := a.Rotate(ctx)
			if err != nil || !r.Rotated || r.KID == before {
				t.Fatalf("rotation %+v, err %v", r, err)
			}
			if _, kid, err := b.Signer(ctx); err != nil || kid != r.KID {
				t.Fatalf("node b signs with %s (%v), want %s", kid, err, r.KID)
			}
		})
	})
}
