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
	// writeKeys, when set instead of write, makes the writes of all the keys at once (in key
	// order): a statement of many rows costs less than many statements.
	writeKeys func(exec func(q string, args ...any) error, keys []K, vals map[K]V) error
}

var atCommitOrder atomic.Int64

// NewAtCommit declares a write at commit: merge combines two values recorded under one key (the
// earlier first); write makes the write of one key with exec, which runs a statement written with
// ? placeholders in the batch's transaction, before its COMMIT. An error of write fails the
// batch. exec may answer nil and report a failure of the statement at the COMMIT instead.
func NewAtCommit[K cmp.Ordered, V any](merge func(a, b V) V, write func(exec func(q string, args ...any) error, key K, v V) error) *AtCommit[K, V] {
	return &AtCommit[K, V]{order: atCommitOrder.Add(1), merge: merge, write: write}
}

// NewAtCommitAll declares a write at commit like NewAtCommit, whose write makes the writes of all
// the keys a batch recorded at once, handed in key order with their merged values.
func NewAtCommitAll[K cmp.Ordered, V any](merge func(a, b V) V, write func(exec func(q string, args ...any) error, keys []K, vals map[K]V) error) *AtCommit[K, V] {
	return &AtCommit[K, V]{order: atCommitOrder.Add(1), merge: merge, writeKeys: write}
}

// Record merges v into what the Unit of Work of ctx recorded under key. It reports false outside
// a Unit of Work (the caller then writes at once).
func (a *AtCommit[K, V]) Record(ctx context.Context, key K, v V) bool {
	st := unitFrom(ctx)
	if st == nil {
		return false
	}
	var vals map[K]V
	for _, p := range st.atCommit {
		if p.of == atCommitOf(a) {
			vals = p.vals.(map[K]V)
			break
		}
	}
	if vals == nil {
		if st.atCommit == nil {
			st.atCommit = st.atCommitBuf[:0]
		}
		vals = map[K]V{}
		st.atCommit = append(st.atCommit, pendingAtCommit{of: a, vals: vals})
	}
	a.add(vals, key, v)
	return true
}

// Recorded returns what the Unit of Work of ctx has recorded under key so far (its own records
// only, not those of the batch's other units); ok is false when it recorded nothing there.
func (a *AtCommit[K, V]) Recorded(ctx context.Context, key K) (v V, ok bool) {
	st := unitFrom(ctx)
	if st == nil {
		return v, false
	}
	for _, p := range st.atCommit {
		if p.of == atCommitOf(a) {
			v, ok = p.vals.(map[K]V)[key]
			return v, ok
		}
	}
	return v, false
}

func (a *AtCommit[K, V]) add(vals map[K]V, key K, v V) {
	if old, ok := vals[key]; ok {
		v = a.merge(old, v)
	}
	vals[key] = v
}

func (a *AtCommit[K, V]) declared() int64 { return a.order }

func (a *AtCommit[K, V]) absorb(dst, src any) {
	d := dst.(map[K]V)
	for k, v := range src.(map[K]V) {
		a.add(d, k, v)
	}
}

func (a *AtCommit[K, V]) writeAll(vals any, exec func(q string, args ...any) error) error {
	m := vals.(map[K]V)
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if a.writeKeys != nil {
		return a.writeKeys(exec, keys, m)
	}
	for _, k := range keys {
		if err := a.write(exec, k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

// atCommitOf is an AtCommit of any key and value types, as units and batches hold them.
type atCommitOf interface {
	declared() int64
	// absorb merges the values src into dst, both of the AtCommit's map type.
	absorb(dst, src any)
	writeAll(vals any, exec func(q string, args ...any) error) error
}

// pendingAtCommit is what a unit, or a batch, recorded for one AtCommit: the merged value of
// each key, a map[K]V of its types.
type pendingAtCommit struct {
	of   atCommitOf
	vals any
}

// mergeAtCommit merges a unit that succeeded into its batch's sets, and returns them. The unit
// is done with its own: the batch may keep them.
func mergeAtCommit(batch, unit []pendingAtCommit) []pendingAtCommit {
next:
	for _, u := range unit {
		for _, b := range batch {
			if b.of == u.of {
				b.of.absorb(b.vals, u.vals)
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
	slices.SortFunc(batch, func(a, b pendingAtCommit) int { return cmp.Compare(a.of.declared(), b.of.declared()) })
	for _, p := range batch {
		if err := p.of.writeAll(p.vals, exec); err != nil {
			return err
		}
	}
	return nil
}
