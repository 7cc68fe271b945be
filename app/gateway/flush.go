package gateway

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// flusher writes the connections' outbound queues with a few goroutines shared by all of them,
// rather than one goroutine per connection woken for every frame. An event for 200 clients then
// readies one or two goroutines, not 200: the storage writer and the HTTP handlers, which the
// scheduler would otherwise queue behind every connection's writer, keep their latency, and a
// connection whose queue grew while it waited is written in one batch, one system call.
//
// A write that cannot finish within quickWrite (the client's socket buffer is full) is not waited
// for: the connection gets a goroutine of its own that finishes it under gateway.write_timeout
// (conn.writeSlow) and then returns it to the flusher.
type flusher struct {
	mu      sync.Mutex
	ready   []*conn // connections to write, from head on
	head    int
	running int
	max     int
}

// quickWrite bounds a flusher's write to one connection: far more than a socket with room in its
// buffer takes, far less than a client that stopped reading would hold a flusher.
const quickWrite = 2 * time.Millisecond

// flushChunk is how many connections a flusher takes at once; it yields the processor between
// chunks so that a long fan-out does not keep others off it for a whole time slice.
const flushChunk = 16

func newFlusher() *flusher {
	return &flusher{max: max(2, runtime.GOMAXPROCS(0))}
}

// push adds c to the connections to write, and starts a flusher when fewer than max run.
func (f *flusher) push(c *conn) {
	f.mu.Lock()
	f.ready = append(f.ready, c)
	start := f.running < f.max
	if start {
		f.running++
	}
	f.mu.Unlock()
	if start {
		go f.run()
	}
}

// run writes connections until none is ready, then ends.
func (f *flusher) run() {
	var chunk [flushChunk]*conn
	for {
		f.mu.Lock()
		n := copy(chunk[:], f.ready[f.head:])
		clear(f.ready[f.head : f.head+n])
		f.head += n
		if f.head == len(f.ready) {
			f.ready, f.head = f.ready[:0], 0
		}
		if n == 0 {
			f.running--
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		for i, c := range chunk[:n] {
			c.flushGuarded()
			chunk[i] = nil
		}
		runtime.Gosched()
	}
}

// flushGuarded runs flush and turns a panic into the end of that connection alone.
func (c *conn) flushGuarded() {
	defer func() {
		if p := recover(); p != nil {
			c.g.log.Error("gateway: panic in a connection's writer", "panic", fmt.Sprint(p), "stack", string(debug.Stack()),
				"correlation_id", c.info.CorrelationID)
			c.t.Abort()
		}
	}()
	c.flush()
}

// flush writes up to framesPerDeadline frames of the queue with the quick deadline. The
// connection stays scheduled while it has frames (it goes to the back of the list), while its
// own writer finishes a write that would block, and once it is closing.
func (c *conn) flush() {
	c.mu.Lock()
	if c.code != 0 {
		c.mu.Unlock()
		go c.release()
		return
	}
	batch := c.takeLocked()
	c.mu.Unlock()
	if len(batch) == 0 {
		c.unschedule()
		return
	}
	err := c.t.Write(time.Now().Add(quickWrite), batch)
	clear(batch)
	c.mu.Lock()
	c.spare = batch[:0]
	switch {
	case errors.Is(err, ErrWouldBlock):
		c.mu.Unlock()
		go c.writeSlow()
		return
	case err != nil:
		c.closeLocked(closeGone, "")
	}
	c.mu.Unlock()
	c.unschedule()
}

// unschedule takes the connection off the flusher's hands, or gives it back when there is more.
func (c *conn) unschedule() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.code != 0 || len(c.queue) > 0 {
		c.g.flush.push(c)
		return
	}
	c.scheduled = false
	if cap(c.spare) > 64 {
		c.spare = nil // an idle connection keeps no big queue
	}
}

// takeLocked takes up to framesPerDeadline frames from the front of the queue.
func (c *conn) takeLocked() [][]byte {
	n := min(len(c.queue), framesPerDeadline)
	if n == 0 {
		return nil
	}
	batch := append(c.spare[:0], c.queue[:n]...)
	c.spare = nil
	m := copy(c.queue, c.queue[n:])
	clear(c.queue[m:])
	c.queue = c.queue[:m]
	c.cond.Broadcast()
	return batch
}

// writeSlow is the connection's own writer while its client reads slowly: it finishes the write
// the flusher left and writes the queue with the whole gateway.write_timeout per batch; a batch
// that misses it closes the connection with 4014. It returns the connection to the flusher when
// the queue is empty.
func (c *conn) writeSlow() {
	defer func() {
		if p := recover(); p != nil {
			c.g.log.Error("gateway: panic in a connection's writer", "panic", fmt.Sprint(p), "stack", string(debug.Stack()),
				"correlation_id", c.info.CorrelationID)
			c.t.Abort()
		}
	}()
	var batch [][]byte // nil: only finish what the transport kept
	for {
		err := c.t.Write(time.Now().Add(c.g.cfg.WriteTimeout), batch)
		clear(batch)
		c.mu.Lock()
		if batch != nil {
			c.spare = batch[:0]
		}
		switch {
		case errors.Is(err, ErrWouldBlock):
			c.closeLocked(CloseSlowConsumer, "write timeout")
		case err != nil:
			c.closeLocked(closeGone, "")
		}
		if c.code != 0 {
			c.mu.Unlock()
			c.release()
			return
		}
		if len(c.queue) == 0 {
			c.scheduled = false
			c.mu.Unlock()
			return
		}
		batch = c.takeLocked()
		c.mu.Unlock()
	}
}

// release ends the transport of a closing connection: the close frame with its code, or an abort
// when the transport failed. It runs once: a closing connection stays scheduled.
func (c *conn) release() {
	c.mu.Lock()
	code, reason := c.code, c.reason
	c.mu.Unlock()
	if code == closeGone {
		c.t.Abort()
	} else {
		c.t.Close(code, reason)
	}
}
