package commit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestAtCommitSets(t *testing.T) {
	var wrote []string
	exec := func(q string, args ...any) error {
		wrote = append(wrote, fmt.Sprint(append([]any{q}, args...)...))
		return nil
	}
	sums := NewAtCommit(func(a, b int) int { return a + b }, func(exec func(string, ...any) error, key string, v int) error {
		return exec("sum ", key, "=", v)
	})
	lasts := NewAtCommit(func(a, b string) string { return b }, func(exec func(string, ...any) error, key int, v string) error {
		return exec("last ", key, "=", v)
	})
	inUnit := func() (context.Context, *unit) {
		u := &unit{}
		return context.WithValue(context.Background(), unitKey{}, u), u
	}

	t.Run("merges per key across units, keeps each AtCommit apart, and writes in declaration and key order", func(t *testing.T) {
		wrote = nil
		ctx1, u1 := inUnit()
		lasts.Record(ctx1, 2, "x")
		sums.Record(ctx1, "b", 1)
		sums.Record(ctx1, "a", 1)
		sums.Record(ctx1, "b", 2)
		ctx2, u2 := inUnit()
		sums.Record(ctx2, "a", 10)
		lasts.Record(ctx2, 2, "y")
		lasts.Record(ctx2, 1, "z")
		batch := mergeAtCommit(nil, u1.atCommit)
		batch = mergeAtCommit(batch, u2.atCommit)
		if err := writeAtCommit(batch, exec); err != nil {
			t.Fatal(err)
		}
		want := []string{"sum a=11", "sum b=3", "last 1=z", "last 2=y"}
		if !slices.Equal(wrote, want) {
			t.Fatalf("wrote %q, want %q", wrote, want)
		}
	})
	t.Run("an AtCommit of all keys at once is handed them in key order with their merged values", func(t *testing.T) {
		var got []string
		all := NewAtCommitAll(func(a, b int) int { return a + b }, func(_ func(string, ...any) error, keys []string, vals map[string]int) error {
			for _, k := range keys {
				got = append(got, fmt.Sprint(k, "=", vals[k]))
			}
			return nil
		})
		ctx1, u1 := inUnit()
		all.Record(ctx1, "b", 1)
		all.Record(ctx1, "a", 2)
		ctx2, u2 := inUnit()
		all.Record(ctx2, "b", 5)
		if err := writeAtCommit(mergeAtCommit(mergeAtCommit(nil, u1.atCommit), u2.atCommit), exec); err != nil {
			t.Fatal(err)
		}
		if want := []string{"a=2", "b=6"}; !slices.Equal(got, want) {
			t.Fatalf("handed %q, want %q in one call", got, want)
		}
	})
	t.Run("stops at the first write that fails and reports it", func(t *testing.T) {
		boom := errors.New("boom")
		failing := NewAtCommit(func(a, b int) int { return a + b }, func(func(string, ...any) error, string, int) error { return boom })
		ctx, u := inUnit()
		failing.Record(ctx, "k", 1)
		sums.Record(ctx, "k", 1)
		wrote = nil
		if err := writeAtCommit(mergeAtCommit(nil, u.atCommit), exec); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		if want := []string{"sum k=1"}; !slices.Equal(wrote, want) {
			t.Fatalf("wrote %q before the failing write, want %q (the one declared first)", wrote, want)
		}
	})
	t.Run("reports false outside a Unit of Work", func(t *testing.T) {
		if sums.Record(context.Background(), "a", 1) {
			t.Fatal("recorded outside a unit")
		}
	})
}
