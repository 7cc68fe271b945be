package client

import (
	"context"
	"fmt"
	"sync"
)

// flight is the handlers of one Agent run: it starts each invocation's handler when it is
// delivered, at most max at once (the others wait their turn, in seq order), and knows the
// low-water mark, the highest seq below which every delivered invocation is done.
type flight struct {
	a      *Agent
	ctx    context.Context // the handlers'; stop ends it
	stop   context.CancelCauseFunc
	handle func(context.Context, *Invocation) error
	max    int
	wg     sync.WaitGroup

	mu      sync.Mutex
	jobs    map[int64]*job // delivered and not yet handed (gateway) or acknowledged (poll)
	waiting []*job         // delivered, not started, in seq order
	busy    int            // handlers that run
	// horizon is the seq up to which everything was delivered (the poll's next_cursor);
	// known is false until the first poll answered it.
	horizon int64
	known   bool
	failed  error // the first handler's error, wrapped
	// changed is closed, and replaced, whenever a handler returns.
	changed chan struct{}
}

// job is one invocation and, once done is closed, its handler's error.
type job struct {
	ev   Event
	done chan struct{}
	err  error
}

func newFlight(ctx context.Context, a *Agent, handle func(context.Context, *Invocation) error, max int) *flight {
	fctx, stop := context.WithCancelCause(ctx)
	return &flight{a: a, ctx: fctx, stop: stop, handle: handle, max: max,
		jobs: map[int64]*job{}, changed: make(chan struct{})}
}

// deliver starts the handler of an invocation, or queues it behind the max that run; an
// invocation delivered again (a replay that overlaps) is the job it was. It never blocks.
func (f *flight) deliver(ev Event) *job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deliverLocked(ev)
}

// offer is deliver without the queue: it answers false, and keeps nothing, when max handlers
// run already and the invocation is not one delivered before.
func (f *flight) offer(ev Event) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.jobs[ev.Seq] == nil && !f.roomLocked() {
		return false
	}
	f.deliverLocked(ev)
	return true
}

func (f *flight) deliverLocked(ev Event) *job {
	if j := f.jobs[ev.Seq]; j != nil {
		return j
	}
	j := &job{ev: ev, done: make(chan struct{})}
	f.jobs[ev.Seq] = j
	switch {
	case f.ctx.Err() != nil:
		j.err = f.ctx.Err()
		close(j.done)
	case f.roomLocked():
		f.startLocked(j)
	default:
		f.waiting = append(f.waiting, j)
	}
	return j
}

func (f *flight) roomLocked() bool { return f.busy+len(f.waiting) < f.max }

// room reports whether a handler may start now, and answers a channel closed when one next
// returns.
func (f *flight) room() (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.roomLocked(), f.changed
}

func (f *flight) startLocked(j *job) {
	f.busy++
	f.wg.Add(1)
	go f.run(j)
}

func (f *flight) run(j *job) {
	defer f.wg.Done()
	err := f.a.invoke(f.ctx, j.ev, f.handle)
	f.mu.Lock()
	defer f.mu.Unlock()
	j.err = err
	close(j.done)
	f.busy--
	if err != nil && f.failed == nil && f.ctx.Err() == nil {
		f.failed = fmt.Errorf("client: handler at seq %d: %w", j.ev.Seq, err)
		// Its cancel does not call back into the flight: the lock may be held.
		f.stop(f.failed)
	}
	for f.busy < f.max && len(f.waiting) > 0 {
		next := f.waiting[0]
		f.waiting = f.waiting[1:]
		if f.ctx.Err() != nil {
			next.err = f.ctx.Err()
			close(next.done)
			continue
		}
		f.startLocked(next)
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// wait blocks until j's handler has returned and answers its error; the gateway's Run hands
// the invocations in seq order, so its cursor, the bound of its ack, is the low-water mark.
func (f *flight) wait(j *job) error {
	<-j.done
	f.forget(j.ev.Seq)
	return j.err
}

// forget drops the finished jobs up to seq, which the gateway's Run has handed.
func (f *flight) forget(seq int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s, j := range f.jobs {
		if s > seq {
			continue
		}
		select {
		case <-j.done:
			delete(f.jobs, s)
		default:
		}
	}
}

// lowWater is the highest seq that may be acknowledged: every invocation up to it is done
// (a failed one is not), and everything up to it was delivered; ok is false before the horizon
// is known. It drops the jobs below it.
func (f *flight) lowWater() (mark int64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.known {
		return 0, false
	}
	mark = f.horizon
	for s, j := range f.jobs {
		select {
		case <-j.done:
			if j.err == nil {
				continue
			}
		default:
		}
		mark = min(mark, s-1)
	}
	for s := range f.jobs {
		if s <= mark {
			delete(f.jobs, s)
		}
	}
	return mark, true
}

// delivered moves the horizon: everything up to seq was delivered.
func (f *flight) delivered(seq int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.horizon, f.known = max(f.horizon, seq), true
}
