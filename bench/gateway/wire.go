package gatewaybench

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The client package hands its caller ready and the events, but not when hello and
// catchup.complete arrived, nor when it sent identify. A probe learns them from the bytes of the
// connection itself: the client dials through an http.Transport whose connections a probe wraps.
// Server frames are neither masked nor compressed (the gateway refuses per-message deflate), so
// their JSON is in the TCP stream as the server wrote it; a JSON string cannot hold an unescaped
// `"op":"hello"`, so no message content can fake one.
var (
	helloOp    = []byte(`"op":"hello"`)
	completeOp = []byte(`"op":"catchup.complete"`)
)

// matcher finds a fixed pattern in a stream fed chunk by chunk, also across two chunks.
type matcher struct {
	pat   []byte
	tail  []byte // the last len(pat)-1 bytes fed
	found bool
}

func newMatcher(pat []byte) *matcher { return &matcher{pat: pat} }

// feed reports whether the pattern has occurred in the stream up to and including b.
func (m *matcher) feed(b []byte) bool {
	if m.found {
		return true
	}
	n := len(m.pat) - 1
	if len(m.tail) > 0 {
		// Only a pattern that starts in the tail: the rest of b is searched below.
		seam := append(append(make([]byte, 0, len(m.tail)+n), m.tail...), b[:min(len(b), n)]...)
		if bytes.Contains(seam, m.pat) {
			m.found = true
			return true
		}
	}
	if bytes.Contains(b, m.pat) {
		m.found = true
		return true
	}
	if len(b) >= n {
		m.tail = append(m.tail[:0], b[len(b)-n:]...)
	} else {
		m.tail = append(m.tail, b...)
		if len(m.tail) > n {
			m.tail = m.tail[len(m.tail)-n:]
		}
	}
	return false
}

// probe watches the first connection of one client: when hello arrived, when the client wrote
// its next frame (identify, which it sends right after reading hello) and when catchup.complete
// arrived. Later connections of the same client (reconnects) pass through unwatched.
type probe struct {
	helloAt, identifyAt, completeAt atomic.Int64  // unix nanoseconds, 0 until seen
	complete                        chan struct{} // closed when catchup.complete arrived
	dialed                          atomic.Bool
	once                            sync.Once
}

func newProbe() *probe { return &probe{complete: make(chan struct{})} }

// httpClient is the HTTP client a probed client dials the gateway with.
func (p *probe) httpClient() *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	return &http.Client{Transport: &http.Transport{
		DisableCompression: true,
		MaxIdleConns:       1,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil || p.dialed.Swap(true) {
				return c, err
			}
			return &probedConn{Conn: c, p: p, hello: newMatcher(helloOp), done: newMatcher(completeOp)}, nil
		},
	}}
}

// at returns the moment stored in v, or the zero time.
func at(v *atomic.Int64) time.Time {
	if n := v.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// IdentifyToComplete is the time from the write of identify to the read of catchup.complete,
// and false while either is unknown.
func (p *probe) identifyToComplete() (time.Duration, bool) {
	i, c := at(&p.identifyAt), at(&p.completeAt)
	if i.IsZero() || c.IsZero() {
		return 0, false
	}
	return c.Sub(i), true
}

// probedConn is one watched connection. Reads come from one goroutine at a time (the
// transport's, then the client's reader); writes may come from several.
type probedConn struct {
	net.Conn
	p           *probe
	hello, done *matcher
	passing     atomic.Bool // catchup.complete seen: nothing more to watch
}

func (c *probedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.passing.Load() {
		now := time.Now().UnixNano()
		chunk := b[:n]
		if !c.hello.found && c.hello.feed(chunk) {
			c.p.helloAt.Store(now)
		}
		if c.hello.found && c.done.feed(chunk) {
			c.p.completeAt.Store(now)
			c.passing.Store(true)
			c.p.once.Do(func() { close(c.p.complete) })
		}
	}
	return n, err
}

func (c *probedConn) Write(b []byte) (int, error) {
	if !c.passing.Load() && c.p.helloAt.Load() != 0 && c.p.identifyAt.Load() == 0 {
		c.p.identifyAt.CompareAndSwap(0, time.Now().UnixNano())
	}
	return c.Conn.Write(b)
}
