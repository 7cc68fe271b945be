package storage_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

func TestPresenceStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := storage.NewPresenceStore(db)
		a, b := kernel.NewID(), kernel.NewID() // nodes
		ada := mustPrincipal(t, db, "ada", false, "active").ID
		bob := mustPrincipal(t, db, "bob", false, "active").ID
		cid := mustPrincipal(t, db, "cid", false, "active").ID
		t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		rows := func(t *testing.T, principal kernel.ID, since time.Time) []string {
			t.Helper()
			got, err := s.PresenceRows(ctx, principal, since)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range got {
				node := map[kernel.ID]string{a: "a", b: "b"}[r.Node]
				who := map[kernel.ID]string{ada: "ada", bob: "bob", cid: "cid"}[r.Principal]
				out = append(out, fmt.Sprintf("%s/%s=%d@%s", node, who, r.Connections, r.UpdatedAt.Sub(t0)))
			}
			slices.Sort(out)
			return out
		}
		want := func(t *testing.T, got []string, want ...string) {
			t.Helper()
			if !slices.Equal(got, want) {
				t.Fatalf("rows %v, want %v", got, want)
			}
		}

		t.Run("writes a person's row, updates it and deletes it at 0", func(t *testing.T) {
			if err := s.WritePresence(ctx, a, ada, 1, t0); err != nil {
				t.Fatal(err)
			}
			if err := s.WritePresence(ctx, a, ada, 3, t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			want(t, rows(t, ada, t0), "a/ada=3@1s")
			if err := s.WritePresence(ctx, a, ada, 0, t0.Add(2*time.Second)); err != nil {
				t.Fatal(err)
			}
			want(t, rows(t, ada, t0))
			if err := s.WritePresence(ctx, a, ada, 0, t0); err != nil {
				t.Fatalf("deleting a row that is not there: %v", err)
			}
		})
		t.Run("a flush makes the node's rows exactly its counts, with a fresh time", func(t *testing.T) {
			if err := s.WritePresence(ctx, a, cid, 1, t0); err != nil {
				t.Fatal(err)
			}
			if err := s.WritePresence(ctx, b, cid, 2, t0); err != nil {
				t.Fatal(err)
			}
			at := t0.Add(5 * time.Second)
			if err := s.FlushPresence(ctx, a, map[kernel.ID]int{ada: 2, bob: 1, cid: 0}, at, t0); err != nil {
				t.Fatal(err)
			}
			want(t, rows(t, kernel.NilID, t0), "a/ada=2@5s", "a/bob=1@5s", "b/cid=2@0s")
			want(t, rows(t, kernel.NilID, at), "a/ada=2@5s", "a/bob=1@5s")
			want(t, rows(t, cid, t0), "b/cid=2@0s")
		})
		t.Run("a flush deletes every node's rows older than the stale time", func(t *testing.T) {
			at := t0.Add(20 * time.Second)
			if err := s.FlushPresence(ctx, a, map[kernel.ID]int{ada: 1}, at, t0.Add(10*time.Second)); err != nil {
				t.Fatal(err)
			}
			want(t, rows(t, kernel.NilID, time.Time{}), "a/ada=1@20s")
		})
		t.Run("a flush writes and deletes more rows than one statement holds", func(t *testing.T) {
			many := map[kernel.ID]int{}
			for i := range 270 {
				many[mustPrincipal(t, db, fmt.Sprintf("p%d", i), false, "active").ID] = i%3 + 1
			}
			at := t0.Add(30 * time.Second)
			if err := s.FlushPresence(ctx, b, many, at, t0); err != nil {
				t.Fatal(err)
			}
			got, err := s.PresenceRows(ctx, kernel.NilID, at)
			if err != nil || len(got) != 270 {
				t.Fatalf("%d rows, %v", len(got), err)
			}
			for _, r := range got {
				if r.Node != b || r.Connections != many[r.Principal] {
					t.Fatalf("row %+v", r)
				}
			}
			if err := s.FlushPresence(ctx, b, map[kernel.ID]int{}, at.Add(time.Second), t0); err != nil {
				t.Fatal(err)
			}
			want(t, rows(t, kernel.NilID, t0), "a/ada=1@20s")
		})
		t.Run("an orderly shutdown deletes the node's rows only", func(t *testing.T) {
			if err := s.WritePresence(ctx, b, bob, 1, t0.Add(40*time.Second)); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteNodePresence(ctx, a); err != nil {
				t.Fatal(err)
			}
			want(t, rows(t, kernel.NilID, t0), "b/bob=1@40s")
		})
	})
}

var _ gateway.PresenceStore = (*storage.PresenceStore)(nil)
