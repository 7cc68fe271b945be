package gateway

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// tailState is what the tail remembers between reads.
type tailState struct {
	observed int64 // the last seq handed to the Observer: a retried event is observed once
}

// How long the tail keeps trying after failures (a database that does not answer, a gap) before
// it gives up and so ends the process (a process that cannot deliver should not look alive): the orchestrator restarts it and the clients
// resume.
const (
	tailRetryFirst = 50 * time.Millisecond
	tailRetryMax   = 2 * time.Second
)

var tailGiveUp = 30 * time.Second // a variable for tests

// Tail is the one log tail of the process: woken by the store after each commit (on
// PostgreSQL also by another node's, through NOTIFY) and every TailPoll as a safety net, it reads
// the events after the hub's position in batches of TailBatch and, one event at a time and in seq
// order, hands each to the Observer (the permission cache) and then to the hub. It returns nil
// when ctx ends and an error when it cannot go on, which ends the process; a panic becomes that
// error too.
func (g *Gateway) Tail(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("gateway log tail: panic: %v\n%s", p, debug.Stack())
		}
	}()
	poll := time.NewTicker(g.cfg.TailPoll)
	defer poll.Stop()
	var failingSince time.Time
	backoff := tailRetryFirst
	for {
		wake := g.deps.Log.Changed()
		n, err := g.tailOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			now := time.Now()
			if failingSince.IsZero() {
				failingSince = now
				g.log.Warn("gateway log tail: cannot go on, retrying", "position", g.hub.Position(), "err", err)
			}
			if now.Sub(failingSince) > tailGiveUp {
				return fmt.Errorf("gateway log tail: failing for %s: %w", tailGiveUp, err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, tailRetryMax)
			continue
		case !failingSince.IsZero():
			g.log.Info("gateway log tail: going on", "position", g.hub.Position())
			failingSince, backoff = time.Time{}, tailRetryFirst
		}
		if n == g.cfg.TailBatch {
			continue // more is waiting
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-poll.C:
		}
	}
}

// errGap is a hole in the log: never expected (seq is gapless and committed in order), so the
// tail waits for it to close rather than skip.
type errGap struct{ want, got int64 }

func (e errGap) Error() string {
	return fmt.Sprintf("gap in the event log: want seq %d, read %d", e.want, e.got)
}

// tailOnce reads one batch after the hub's position and dispatches it; it returns how many
// events it read.
func (g *Gateway) tailOnce(ctx context.Context) (int, error) {
	pos := g.hub.Position()
	evs, err := g.deps.Log.EventsAfter(ctx, pos, g.cfg.TailBatch)
	if err != nil {
		return 0, err
	}
	for _, e := range evs {
		if e.Seq != pos+1 {
			return 0, errGap{pos + 1, e.Seq}
		}
		g.observe(e)
		if err := g.hub.Dispatch(ctx, e); err != nil {
			return 0, err
		}
		pos = e.Seq
	}
	return len(evs), nil
}

func (g *Gateway) observe(e kernel.LoggedEvent) {
	if g.deps.Observer != nil && e.Seq > g.tailer.observed {
		g.deps.Observer.Observe(e)
	}
	g.tailer.observed = max(g.tailer.observed, e.Seq)
}
