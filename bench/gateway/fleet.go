package gatewaybench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// member is one gateway client of a fleet: its own connection and gateway session, read by its
// own goroutine (follow), with a ledger of what it received.
type member struct {
	c      *conn   // nil until identify is sent
	ledger *ledger // nil: the member records nothing
	count  atomic.Int64
	r      *Reader // runs follow
}

// follow reads the member's connection until it is closed, recording every message.created of
// the poster in the ledger. It returns nil when close ended it, and an error for a dropped
// connection, a seq that is not above the one before (a duplicate or a reordering), a frame
// out of its place in the protocol or one that is not as the server writes it.
func (m *member) follow() error {
	var order Order
	for {
		f, at, err := m.c.read()
		if err != nil {
			if m.c.closing.Load() {
				return nil
			}
			return err
		}
		op, _ := frameOp(f)
		switch string(op) {
		case "event":
			e, err := parseEvent(f)
			switch {
			case err != nil:
				return err
			case e.seq == 0: // ephemeral: presence, typing
				continue
			}
			if err := order.Event(e.seq); err != nil {
				return err
			}
			if m.ledger == nil || string(e.typ) != "message.created" {
				continue
			}
			if due, i, ok := readStamp(e.data); ok {
				m.ledger.record(due, i, e.createdAt, at)
			} else {
				m.ledger.foreign++
			}
			m.count.Add(1)
		case "ready":
			if err := order.Ready(); err != nil {
				return err
			}
		case "catchup.complete":
			if err := order.Complete(); err != nil {
				return err
			}
			m.r.Completed()
		}
	}
}

// fleet is many members against one server, all stopped together.
type fleet struct {
	members []*member
}

// Connect timing: every wait re-checks in its loop and has a deadline, so a run never hangs.
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
	f := &fleet{}
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
		m := &member{r: NewReader()}
		if ledger != nil {
			m.ledger = ledger()
		}
		f.members = append(f.members, m)
		wg.Go(func() {
			defer func() { <-sem }()
			if err := m.connect(ctx, base, tokens[k%len(tokens)]); err != nil {
				fail(fmt.Errorf("client %d: %w", k, err))
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

// connect dials, identifies without a cursor, starts follow and waits for catchup.complete.
func (m *member) connect(ctx context.Context, base, token string) error {
	c, err := dial(ctx, base)
	if err != nil {
		return err
	}
	if _, err := c.identify(token, -1); err != nil {
		c.abort()
		return err
	}
	m.c = c
	m.r.Start(m.follow)
	return m.r.WaitComplete(ctx)
}

// stop closes every member's connection and waits for their readers; it reports a member
// whose connection ended otherwise than by the stop, or whose reader did not return in time.
func (f *fleet) stop() error {
	var wg sync.WaitGroup
	for _, m := range f.members {
		if m.c != nil {
			wg.Go(m.c.close)
		}
	}
	wg.Wait()
	deadline := time.NewTimer(stopDeadline)
	defer deadline.Stop()
	var errs []error
	for k, m := range f.members {
		if m.c == nil {
			continue
		}
		select {
		case <-m.r.Done():
			if err := m.r.Err(); err != nil {
				errs = append(errs, fmt.Errorf("client %d: %w", k, err))
			}
		case <-deadline.C:
			return errors.Join(append(errs, fmt.Errorf("gatewaybench: clients still reading %s after the stop", stopDeadline))...)
		}
	}
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("and %d more", len(errs)-3))
	}
	return errors.Join(errs...)
}

// waitDelivered waits until every member has counted total messages, or the deadline; a
// member whose connection ended fails it at once.
func (f *fleet) waitDelivered(ctx context.Context, total int64, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		behind := 0
		var least int64 = total
		for k, m := range f.members {
			if err := m.r.Failed(); err != nil {
				return fmt.Errorf("client %d: %w", k, err)
			}
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
