package gateway

import (
	"context"
	"fmt"
	"runtime/debug"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
)

// catchUp switches a freshly identified connection from the log to the hub without a gap or a
// duplicate:
//
//  1. register with the hub, which returns its position P; from now on the hub holds every live
//     event after P for this connection (offer buffers it while catchingUp);
//  2. send ready, then replay from the log the visible events in (cursor, P];
//  3. send catchup.complete, then the held events with seq above what was sent, and go live;
//  4. if the held events overflowed meanwhile (before or while they were sent), drop them, pin
//     a new P and replay from the last seq sent up to it, then go on with 3.
//
// Without a cursor the replay is empty: the client starts at P.
func (c *conn) catchUp(sess *session, actor kernel.Actor, cursor *int64, vis kernel.Visibility, gen uint64) {
	defer func() {
		if p := recover(); p != nil {
			c.g.log.Error("gateway: panic in a catch-up", "panic", fmt.Sprint(p), "stack", string(debug.Stack()),
				"correlation_id", c.info.CorrelationID)
			c.closeWith(CloseUnknownError, "")
		}
	}()
	ctx := context.Background()
	h := c.g.hub
	pos, err := h.attach(ctx, c, actor, vis, gen)
	if err != nil {
		c.closeWith(c.g.failed("register with the hub", err), "")
		return
	}
	if focus := c.g.sessionFocus(sess); !focus.IsZero() {
		h.setFocus(c, focus)
	}
	after := pos
	if cursor != nil {
		after = *cursor
		// Before ready: a client behind retention has nothing to replay from.
		if code, reason := c.g.behindRetention(ctx, after); code != 0 {
			c.closeWith(code, reason)
			return
		}
	}
	if !c.sendReady(sess, actor, max(after, pos), after) {
		return
	}
	completed := false
	for {
		var ok bool
		if after, ok = c.replay(ctx, actor, after, pos); !ok {
			return
		}
		c.mu.Lock()
		c.lastSent = max(c.lastSent, after, pos) // the log is replayed up to here
		if !c.overflow && !c.endedLocked() {
			if !completed {
				c.queue = append(c.queue, catchupCompleteFrame(c.lastSent))
				completed = true
			}
			if c.drainHeldLocked() {
				c.catchingUp = false
			}
		}
		ended, overflow, last := c.endedLocked(), c.overflow, c.lastSent
		c.kickLocked()
		c.mu.Unlock()
		switch {
		case ended || !overflow:
			return
		default:
			// The held events overflowed (while replaying or while draining them): what they
			// held is in the log; replay it up to a new pin.
			after, pos = last, h.repin(c)
		}
	}
}

// sendReady queues ready. A person's connection is counted online first and gets the online
// set in it, under the presence's lock: every presence.updated after the set follows ready. It
// reports false when the connection ended.
func (c *conn) sendReady(sess *session, actor kernel.Actor, head, from int64) bool {
	if actor.Kind != kernel.KindPerson {
		var acked *int64
		if c.consumer.Load() {
			acked = &from
		}
		return c.enqueueWait(readyFrame(sess.id, actor, head, nil, acked))
	}
	c.g.presence.join(c, actor.ID, c.g.clock.Now(), func(online []kernel.ID) {
		c.enqueueControl(readyFrame(sess.id, actor, head, online, nil))
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.endedLocked()
}

// drainHeldLocked moves the held live events above lastSent to the queue, waiting for room as the
// replay does. It reports false when the connection ended or the held events overflowed while it
// waited. The caller holds c.mu.
func (c *conn) drainHeldLocked() bool {
	for len(c.buf) > 0 {
		for len(c.queue) >= c.catchUpRoom() && !c.endedLocked() && !c.overflow {
			c.kickLocked()
			c.cond.Wait()
		}
		if c.endedLocked() || c.overflow {
			return false
		}
		p := c.buf[0]
		c.buf[0] = pending{}
		c.buf = c.buf[1:]
		switch {
		case p.seq <= c.lastSent:
		case p.ev != nil || len(c.prep) > 0:
			c.lastSent = p.seq
			c.pushPrepLocked(p)
		default:
			c.queue = append(c.queue, p.frame)
			c.lastSent = p.seq
		}
	}
	c.buf = nil
	return true
}

// replay queues the events in (after, upTo] that actor may see now, as sync's catch-up decides,
// and returns how far it got (upTo, or after when after was already beyond it). ok is false when
// the connection ended.
func (c *conn) replay(ctx context.Context, actor kernel.Actor, after, upTo int64) (int64, bool) {
	var held []recentEvent
	for after < upTo {
		var ok bool
		if held, ok = c.g.hub.recent.read(held[:0], after, upTo, catchup.MaxLimit); ok && len(held) > 0 {
			// From memory, with sync's rules: what actor may see now.
			vis, err := c.g.deps.Scoper.Visible(ctx, actor, catchup.ActEventsCatchUp)
			if err != nil {
				c.closeWith(c.g.failed("catch-up", err), "")
				return after, false
			}
			for _, ev := range held {
				if catchup.Visible(vis, actor, ev.scope) {
					f := ev.frame
					if needsPrepare(c.g.deps.Preparer, actor, ev.typ, ev.scope) {
						// The memory holds the shared frame only: read the event for its payload.
						evs, err := c.g.deps.Log.EventsAfter(ctx, ev.seq-1, 1)
						if err == nil && (len(evs) != 1 || evs[0].Seq != ev.seq) {
							err = fmt.Errorf("event %d is not in the log", ev.seq)
						}
						var deliver bool
						if err == nil {
							f, deliver, err = preparedFrame(ctx, c.g.deps.Preparer, actor, evs[0])
						}
						if err != nil {
							c.closeWith(c.g.failed("catch-up", err), "")
							return after, false
						}
						if !deliver {
							continue
						}
					}
					if !c.enqueueWait(f) {
						return after, false
					}
					c.replayed.Store(ev.seq)
				}
			}
			after = held[len(held)-1].seq
			clear(held)
			continue
		}
		page, err := c.g.deps.CatchUp.CatchUp(ctx, actor, after, catchup.MaxLimit)
		if err != nil {
			c.closeWith(c.g.failed("catch-up", err), closeReason(err))
			return after, false
		}
		for _, e := range page.Events {
			if e.Seq > upTo {
				break
			}
			f := EventFrame(e)
			if needsPrepare(c.g.deps.Preparer, actor, e.Type, e.Scope) {
				var deliver bool
				if f, deliver, err = preparedFrame(ctx, c.g.deps.Preparer, actor, e); err != nil {
					c.closeWith(c.g.failed("catch-up", err), "")
					return after, false
				}
				if !deliver {
					continue
				}
			}
			if !c.enqueueWait(f) {
				return after, false
			}
			c.replayed.Store(e.Seq)
		}
		if page.NextAfter <= after {
			break // the log ends before upTo: cannot happen, as the hub has passed upTo
		}
		after = min(page.NextAfter, upTo)
	}
	return max(after, upTo), true
}
