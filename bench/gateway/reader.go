package gatewaybench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Reader runs the reader of one connection on a goroutine of its own and keeps what it
// returned, for the fleet's members and bench/agents' consumer and focused clients.
type Reader struct {
	complete chan struct{} // closed by Completed
	done     chan struct{} // closed when the reader returned
	err      error         // what it returned, once done is closed
}

// ErrClosed is what Failed says of a reader that returned nil: its connection was closed.
var ErrClosed = errors.New("the connection was closed")

// NewReader is a Reader not started yet.
func NewReader() *Reader {
	return &Reader{complete: make(chan struct{}), done: make(chan struct{})}
}

// Start runs read on a goroutine of its own; read calls Completed once catchup.complete
// arrived.
func (r *Reader) Start(read func() error) {
	go func() {
		defer close(r.done)
		r.err = read()
	}()
}

// Completed notes catchup.complete; call it once, from the reader.
func (r *Reader) Completed() { close(r.complete) }

// Done is closed once the reader has returned.
func (r *Reader) Done() <-chan struct{} { return r.done }

// Err is what the reader returned, once Done is closed.
func (r *Reader) Err() error { return r.err }

// Failed is nil while the reader runs; once it has returned, what it returned, or ErrClosed
// for nil.
func (r *Reader) Failed() error {
	select {
	case <-r.done:
		if r.err == nil {
			return ErrClosed
		}
		return r.err
	default:
		return nil
	}
}

// WaitComplete waits for catchup.complete. It fails when the reader returns before it, when
// it has not come within completeDeadline, and when ctx ends.
func (r *Reader) WaitComplete(ctx context.Context) error {
	t := time.NewTimer(completeDeadline)
	defer t.Stop()
	select {
	case <-r.complete:
		return nil
	case <-r.done:
		select {
		case <-r.complete: // and ended after it: the caller's next wait tells
			return nil
		default:
		}
		return fmt.Errorf("connection ended before catchup.complete: %w", r.Failed())
	case <-t.C:
		return fmt.Errorf("no catchup.complete within %s", completeDeadline)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait waits for the reader to return after its connection was closed, at most stopDeadline,
// and returns what it returned.
func (r *Reader) Wait() error {
	t := time.NewTimer(stopDeadline)
	defer t.Stop()
	select {
	case <-r.done:
		return r.err
	case <-t.C:
		return fmt.Errorf("still reading %s after the stop", stopDeadline)
	}
}
