package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// pollPage is one answer of GET /api/v1/agents/me/events.
type pollPage struct {
	Events     []Event `json:"events"`
	NextCursor int64   `json:"next_cursor"`
	HeadSeq    int64   `json:"head_seq"`
}

// RunLongPoll is Run over the REST consumer, for an agent that cannot hold a WebSocket
// (serverless, a proxy that cuts them): it long-polls GET /api/v1/agents/me/events (25 s at a
// time) and acknowledges with POST /api/v1/agents/me/ack, with the same handler, the same
// MaxConcurrent bound and the same low-water-mark ack as Run. While MaxConcurrent handlers run
// it takes no further invocation, but leaves it in the log for a later poll, and reads on only
// for the cancel requests. It starts at the cursor of WithCursor, else after what the agent
// acknowledged; a network error, a 5xx or a 429 is retried with the Client's backoff.
//
// It returns ctx's error when ctx ends (after the handlers returned and what they finished was
// acknowledged), the first handler's error as Run does, an error matching
// ErrAuthenticationFailed when the server refuses the token (401, 403), one matching
// ErrResyncRequired when it refuses the cursor, and any other refusal (4xx) as it came.
func (a *Agent) RunLongPoll(ctx context.Context, handle func(ctx context.Context, inv *Invocation) error) error {
	if handle == nil {
		return errors.New("client: Agent.RunLongPoll needs a handler")
	}
	if a.c.base.Scheme == "invalid" {
		return fmt.Errorf("client: base URL %q is not an http or https URL", a.c.base.Opaque)
	}
	f, err := a.begin(ctx, handle)
	if err != nil {
		return err
	}
	a.c.mu.Lock()
	cursor, hasCursor := a.c.cursor, a.c.hasCursor
	a.c.mu.Unlock()
	if hasCursor {
		f.delivered(cursor)
	}

	acks := make(chan struct{})
	go func() {
		defer close(acks)
		a.ackLoop(f, cursor)
	}()
	err = a.poll(f, cursor, hasCursor)
	err = a.end(ctx, f, err)
	<-acks
	return err
}

// poll long-polls until the flight stops, and delivers what it reads. cursor is the seq up to
// which every invocation was delivered; while MaxConcurrent handlers run, it leaves the next
// invocation where it is (a later poll reads it again, when a handler has returned) and polls
// ahead for the cancel requests alone, so that a cancel reaches a busy handler.
func (a *Agent) poll(f *flight, cursor int64, hasCursor bool) error {
	ahead := cursor // how far the polls while busy have read
	failures := 0
	for f.ctx.Err() == nil {
		roomy, freed := f.room()
		from, pctx, stopPoll := cursor, f.ctx, context.CancelFunc(func() {})
		if !roomy {
			// Busy: read on from where the last poll ended, until a handler returns.
			from = max(cursor, ahead)
			pctx, stopPoll = context.WithCancel(f.ctx)
			go func() {
				select {
				case <-freed:
					stopPoll()
				case <-pctx.Done():
				}
			}()
		}
		q := url.Values{"wait": {a.pollWait.String()}}
		if hasCursor {
			q.Set("cursor", strconv.FormatInt(from, 10))
		}
		var p pollPage
		err := a.c.do(pctx, http.MethodGet, "/api/v1/agents/me/events?"+q.Encode(), nil, &p)
		interrupted := pctx.Err() != nil
		stopPoll()
		if f.ctx.Err() != nil {
			return f.ctx.Err()
		}
		if err != nil && interrupted {
			continue // a handler returned: poll again, for invocations
		}
		if err != nil {
			var ae *APIError
			if errors.As(err, &ae) {
				switch {
				case ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden:
					return fmt.Errorf("client: poll: %w: %w", ErrAuthenticationFailed, err)
				case ae.Code == "cursor_invalid" || ae.Code == "resync_required": // resync_required: behind retention
					return fmt.Errorf("client: poll: %w: %w", ErrResyncRequired, err)
				case ae.Status < 500 && ae.Status != http.StatusTooManyRequests && ae.Status != http.StatusRequestTimeout:
					return fmt.Errorf("client: poll: %w", err)
				}
			}
			failures++
			delay := a.c.jitter(a.c.backoffCeiling(failures))
			if ae != nil && ae.RetryAfter > delay {
				delay = ae.RetryAfter
			}
			a.c.log.Info("bothy consumer: polling again", "cause", err, "after", delay, "attempt", failures, "cursor", from)
			if !sleepCtx(f.ctx, delay) {
				return f.ctx.Err()
			}
			continue
		}
		failures = 0
		held := !roomy // an invocation is left for a later poll
		for _, ev := range p.Events {
			if ev.Seq <= 0 || (hasCursor && ev.Seq <= from) {
				continue
			}
			if !a.handles(ev.Type) {
				a.peek(ev)
			} else if !held && !f.offer(ev) {
				held, cursor = true, ev.Seq-1
			}
			if !held {
				cursor = ev.Seq
			}
		}
		if !held {
			cursor = max(cursor, p.NextCursor)
		}
		hasCursor = true
		ahead = max(ahead, p.NextCursor)
		f.delivered(cursor)
	}
	return f.ctx.Err()
}

// ackLoop acknowledges the low-water mark once per ackInterval when it moved, until the
// flight stops, and a last time when its handlers are all done. acked is the cursor the poll
// started from: nothing below it is acknowledged.
func (a *Agent) ackLoop(f *flight, acked int64) {
	tick := time.NewTicker(ackInterval)
	defer tick.Stop()
	ack := func(ctx context.Context) {
		mark, ok := f.lowWater()
		if !ok || mark <= acked {
			return
		}
		if err := a.c.do(ctx, http.MethodPost, "/api/v1/agents/me/ack", map[string]int64{"seq": mark}, nil); err != nil {
			a.c.log.Info("bothy consumer: ack failed", "seq", mark, "err", err)
			return
		}
		acked = mark
		// The next RunLongPoll (or Run) continues from what the server holds.
		a.c.mu.Lock()
		a.c.cursor, a.c.hasCursor = mark, true
		a.c.mu.Unlock()
	}
	for f.ctx.Err() == nil {
		select {
		case <-f.ctx.Done():
		case <-tick.C:
			ack(f.ctx)
		}
	}
	// The Run stops: ack what its handlers finished, with a context of its own.
	f.wg.Wait()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(f.ctx), 5*time.Second)
	defer cancel()
	ack(ctx)
}

// sleepCtx sleeps d, or less when ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
