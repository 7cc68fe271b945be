package gateway

import (
	"context"
	"fmt"
	"runtime/debug"
)

// pushPrepLocked appends p to the connection's preparation line and starts its goroutine when
// none runs. Everything live that follows an event to prepare waits in the line behind it, so
// the connection still gets its events in seq order. A line as long as the queue's bound is a
// client that does not keep up: 4014, as for the queue. The caller holds c.mu.
func (c *conn) pushPrepLocked(p pending) {
	if len(c.prep) >= c.g.cfg.OutboundQueueMax {
		c.closeLocked(CloseSlowConsumer, "")
		return
	}
	c.prep = append(c.prep, p)
	if !c.preparing {
		c.preparing = true
		go c.prepareLoop()
	}
}

// prepareLoop empties the preparation line: it prepares each event that needs it (the
// Preparer's read and signature, outside c.mu) and queues the frames in order. An event the
// Preparer holds back is skipped; a Preparer error closes the connection with 4000, as a failed
// delivery check does (the client resumes and the catch-up decides again).
func (c *conn) prepareLoop() {
	defer func() {
		if p := recover(); p != nil {
			c.g.log.Error("gateway: panic while preparing a delivery", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			c.closeWith(CloseUnknownError, "")
		}
	}()
	for {
		c.mu.Lock()
		if c.endedLocked() || len(c.prep) == 0 {
			c.prep, c.preparing = nil, false
			c.mu.Unlock()
			return
		}
		p, actor := c.prep[0], c.actor
		c.mu.Unlock()

		f := p.frame
		if p.ev != nil {
			ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
			var deliver bool
			var err error
			f, deliver, err = preparedFrame(ctx, c.g.deps.Preparer, actor, *p.ev)
			cancel()
			if err != nil {
				c.g.log.Error("gateway: prepare a delivery", "seq", p.seq, "principal", actor.ID, "err", err)
				c.closeWith(CloseUnknownError, "")
				return
			}
			if !deliver {
				f = nil
			}
		}

		c.mu.Lock()
		if len(c.prep) > 0 {
			c.prep[0] = pending{}
			c.prep = c.prep[1:]
		}
		switch {
		case f == nil || c.endedLocked():
		case len(c.queue) >= c.g.cfg.OutboundQueueMax:
			c.closeLocked(CloseSlowConsumer, "")
		default:
			c.queue = append(c.queue, f)
			c.kickLocked()
		}
		c.mu.Unlock()
	}
}
