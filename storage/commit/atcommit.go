package commit

import (
	"cmp"
	"context"
	"slices"
	"sync/atomic"
)

// AtCommit is a write that Units of Work record under a key and that their batch makes once per
// key, at its commit, with what the batch's units recorded there merged: a repository declares
// one for a row many units change (a thread's message count), so that a busy row costs one
// statement per batch instead of one per unit, and the batch takes those rows in key order
// (two writers on one database then cannot deadlock on them). A unit that fails takes what it
// recorded with it; a batch that runs again starts from nothing, as its units record again.
// Batches make the writes of several AtCommits in the order they were declared.
type AtCommit[K cmp.Ordered, V any] struct {
	order int64
	merge func(a, b V) V
	write func(exec func(q string, args ...any) error, key K, v V) error
}

var atCommitOrder atomic.Int64

// NewAtCommit declares a write at commit: merge combines two values recorded under one key (the
// earlier first); write makes the write of one key with exec, which runs a statement written with
// ? placeholders in the batch's transaction, before its COMMIT. An error of write fails the
// batch. exec may answer nil and report a failure of the statement at the COMMIT instead.
func NewAtCommit[K cmp.Ordered, V any](merge func(a, b V) V, write func(exec func(q string, args ...any) error, key K, v V) error) *AtCommit[K, V] {
	return &AtCommit[K, V]{order: atCommitOrder.Add(1), merge: merge, write: write}
}

// Record merges v into what the Unit of Work of ctx recorded under key. It reports false outside
// a Unit of Work (the caller then writes at once).
func (a *AtCommit[K, V]) Record(ctx context.Context, key K, v V) bool {
	st := unitFrom(ctx)
	if st == nil {
		return false
	}
	var set *atCommitSet[K, V]
	for _, s := range st.atCommit {
		if s, ok := s.(*atCommitSet[K, V]); ok && s.a == a {
			set = s
			break
		}
	}
	if set == nil {
		set = &atCommitSet[K, V]{a: a, vals: map[K]V{}}
		st.atCommit = append(st.atCommit, set)
	}
	set.add(key, v)
	return true
}

// atCommitSet is what a unit, or a batch, recorded for one AtCommit: the merged value of each
// key.
type atCommitSet[K cmp.Ordered, V any] struct {
	a    *AtCommit[K, V]
	vals map[K]V
}

func (s *atCommitSet[K, V]) add(key K, v V) {
	if old, ok := s.vals[key]; ok {
		v = s.a.merge(old, v)
	}
	s.vals[key] = v
}

func (s *atCommitSet[K, V]) declared() int64 { return s.a.order }

func (s *atCommitSet[K, V]) absorb(o pendingAtCommit) bool {
	other, ok := o.(*atCommitSet[K, V])
	if !ok || other.a != s.a {
		return false
	}
	for k, v := range other.vals {
		s.add(k, v)
	}
	return true
}

func (s *atCommitSet[K, V]) write(exec func(q string, args ...any) error) error {
	keys := make([]K, 0, len(s.vals))
	for k := range s.vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := s.a.write(exec, k, s.vals[k]); err != nil {
			return err
		}
	}
	return nil
}

// pendingAtCommit is an atCommitSet of any key and value types, as the writer holds them.
type pendingAtCommit interface {
	declared() int64
	// absorb merges o into the set if o belongs to the same AtCommit, and reports whether it did.
	absorb(o pendingAtCommit) bool
	write(exec func(q string, args ...any) error) error
}

// mergeAtCommit merges a unit that succeeded into its batch's sets, and returns them. The unit
// is done with its own: the batch may keep them.
func mergeAtCommit(batch, unit []pendingAtCommit) []pendingAtCommit {
next:
	for _, u := range unit {
		for _, b := range batch {
			if b.absorb(u) {
				continue next
			}
		}
		batch = append(batch, u)
	}
	return batch
}

// writeAtCommit makes the batch's writes at commit, AtCommit by AtCommit in the order they were
// declared, key by key in key order.
func writeAtCommit(batch []pendingAtCommit, exec func(q string, args ...any) error) error {
	slices.SortFunc(batch, func(a, b pendingAtCommit) int { return cmp.Compare(a.declared(), b.declared()) })
	for _, s := range batch {
		if err := s.write(exec); err != nil {
			return err
		}
	}
	return nil
}
