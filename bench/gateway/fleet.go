package gatewaybench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/client"
)

// member is one gateway client of a fleet: the client package's Run on its own connection
// (its own gateway session), with a probe on the connection and a ledger of what it received.
type member struct {
	cl      *client.Client
	probe   *probe
	ledger  *ledger // nil: the member records nothing
	count   atomic.Int64
	readies atomic.Int64
	done    chan struct{}
	err     error // what Run returned, once done is closed
}

// handle is the member's event handler: it records every message.created of the poster.
func (m *member) handle(ev client.Event) error {
	if ev.Type != "message.created" || m.ledger == nil {
		return nil
	}
	now := time.Now()
	due, i, ok := readStamp(ev.Data)
	if !ok {
		m.ledger.foreign++
	} else {
		m.ledger.record(due, i, ev.CreatedAt, now)
	}
	m.count.Add(1)
	return nil
}

// fleet is many members against one server, all stopped together.
type fleet struct {
	members []*member
	cancel  context.CancelFunc
}

// Connect timing: every wait re-checks in its loop and has a deadline (STYLE rule 21).
const (
	completeDeadline = 30 * time.Second
	stopDeadline     = 15 * time.Second
)

// connectFleet connects n clients to base, client k as tokens[k mod len], at most parallel at
// a time, and returns once every one of them has received catchup.complete. ledger makes
// each member's ledger (nil: none). The members start live at the head (no cursor).
func connectFleet(ctx context.Context, base string, tokens []string, n, parallel int, ledger func() *ledger) (*fleet, error) {
	if len(tokens) == 0 || n < 1 {
		return nil, errors.New("gatewaybench: no client to connect")
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &fleet{cancel: cancel}
	sem := make(chan struct{}, max(1, parallel))
	var (
		wg       sync.WaitGroup
		once     sync.Once
		failed   atomic.Bool
		firstErr error
	)
	fail := func(err error) { once.Do(func() { firstErr = err; failed.Store(true) }) }
	for k := range n {
		if ctx.Err() != nil || failed.Load() {
			break
		}
		sem <- struct{}{}
		m := &member{probe: newProbe(), done: make(chan struct{})}
		if ledger != nil {
			m.ledger = ledger()
		}
		m.cl = client.New(base, tokens[k%len(tokens)],
			client.WithHTTPClient(m.probe.httpClient()),
			client.WithBackoff(100*time.Millisecond, 2*time.Second),
			client.WithReadyHandler(func(client.Ready) { m.readies.Add(1) }))
		f.members = append(f.members, m)
		go func() {
			defer close(m.done)
			m.err = m.cl.Run(runCtx, m.handle)
		}()
		wg.Go(func() {
			defer func() { <-sem }()
			t := time.NewTimer(completeDeadline)
			defer t.Stop()
			select {
			case <-m.probe.complete:
			case <-m.done:
				fail(fmt.Errorf("client %d: Run ended before catchup.complete: %w", k, m.err))
			case <-t.C:
				fail(fmt.Errorf("client %d: no catchup.complete within %s", k, completeDeadline))
			case <-ctx.Done():
				fail(ctx.Err())
			}
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return nil, errors.Join(firstErr, f.stop())
	}
	return f, nil
}

// stop ends every member's Run and waits for them; it reports a Run that did not return in
// time or ended otherwise than by the cancel.
func (f *fleet) stop() error {
	f.cancel()
	deadline := time.NewTimer(stopDeadline)
	defer deadline.Stop()
	var errs []error
	for k, m := range f.members {
		select {
		case <-m.done:
			if m.err != nil && !errors.Is(m.err, context.Canceled) {
				errs = append(errs, fmt.Errorf("client %d: %w", k, m.err))
			}
		case <-deadline.C:
			return errors.Join(append(errs, fmt.Errorf("gatewaybench: clients still running %s after the stop", stopDeadline))...)
		}
	}
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("and %d more", len(errs)-3))
	}
	return errors.Join(errs...)
}

// reconnects is how many times members identified again after their first ready.
func (f *fleet) reconnects() int64 {
	var n int64
	for _, m := range f.members {
		n += max(0, m.readies.Load()-1)
	}
	return n
}

// waitDelivered waits until every member has counted total messages, or the deadline.
func (f *fleet) waitDelivered(ctx context.Context, total int64, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		behind := 0
		var least int64 = total
		for _, m := range f.members {
			if c := m.count.Load(); c < total {
				behind++
				least = min(least, c)
			}
		}
		if behind == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d clients short of the %d messages posted %s after the last answer (the furthest behind has %d)",
				behind, len(f.members), total, within, least)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
