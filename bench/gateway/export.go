package gatewaybench

import (
	"context"
	"time"
)

// Conn is the lean gateway connection of conn.go for the other benchmarks of the gateway
// (bench/agents: an agent's consumer, clients focused on a thread). One goroutine reads it;
// Send may be called from any.
type Conn struct{ c *conn }

// Dial opens a connection to base's gateway and reads hello.
func Dial(ctx context.Context, base string) (*Conn, error) {
	c, err := dial(ctx, base)
	if err != nil {
		return nil, err
	}
	return &Conn{c}, nil
}

// Identify sends identify with token (and cursor unless it is negative) and returns the moment
// just before the write; from then on the connection beats every heartbeat interval.
func (c *Conn) Identify(token string, cursor int64) (time.Time, error) {
	return c.c.identify(token, cursor)
}

// Send writes one frame, such as {"op":"focus",…} or {"op":"ack",…}.
func (c *Conn) Send(frame []byte) error { return c.c.write(frame) }

// Read returns the next frame other than a heartbeat or its ack, and the moment it was read.
// The frame is valid until the next Read.
func (c *Conn) Read() ([]byte, time.Time, error) { return c.c.read() }

// Closing reports whether Close or Abort was called (a Read's error is then the close).
func (c *Conn) Closing() bool { return c.c.closing.Load() }

// Close closes with a normal closure; Abort drops the connection.
func (c *Conn) Close() { c.c.close() }

// Abort drops the connection without a close frame.
func (c *Conn) Abort() { c.c.abort() }

// FrameOp returns the op of a server frame.
func FrameOp(f []byte) ([]byte, bool) { return frameOp(f) }

// Event is what ParseEvent reads of an event frame; its slices point into the frame. Seq is 0
// for an ephemeral event (typing, presence, run.updated), of which nothing else is read.
type Event struct {
	Seq       int64
	Type      []byte
	Data      []byte
	CreatedAt time.Time
}

// ParseEvent reads an event frame as the clients of this package do.
func ParseEvent(f []byte) (Event, error) {
	e, err := parseEvent(f)
	return Event{Seq: e.seq, Type: e.typ, Data: e.data, CreatedAt: e.createdAt}, err
}
