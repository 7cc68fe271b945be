package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fakeGateway is a scripted gateway server: the n-th connection (from 0) runs script(n, conn).
// When the script returns, the connection is cut without a close frame unless the script
// closed it.
type fakeGateway struct {
	t      *testing.T
	srv    *httptest.Server
	script func(n int, fc *fakeConn)
	// refuse answers the first refuse handshakes 503, as a server that is starting does.
	refuse int

	mu    sync.Mutex
	dials []time.Time
}

func newFakeGateway(t *testing.T, script func(n int, fc *fakeConn)) *fakeGateway {
	t.Helper()
	fg := &fakeGateway{t: t, script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/gateway", func(w http.ResponseWriter, r *http.Request) {
		fg.mu.Lock()
		n := len(fg.dials)
		fg.dials = append(fg.dials, time.Now())
		fg.mu.Unlock()
		if n < fg.refuse {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(1 << 20)
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		fg.script(n, &fakeConn{t: t, ws: ws, ctx: ctx, n: n, autoAck: true})
	})
	fg.srv = httptest.NewServer(mux)
	t.Cleanup(fg.srv.Close)
	return fg
}

// dialTimes is when each connection arrived.
func (fg *fakeGateway) dialTimes() []time.Time {
	fg.mu.Lock()
	defer fg.mu.Unlock()
	return append([]time.Time(nil), fg.dials...)
}

// client returns a client of the fake with fast test settings and opts.
func (fg *fakeGateway) client(opts ...Option) *Client {
	base := []Option{WithHTTPClient(fg.srv.Client()), WithBackoff(time.Millisecond, 5*time.Millisecond)}
	return New(fg.srv.URL, "secret-token", append(base, opts...)...)
}

// fakeConn is the server side of one connection.
type fakeConn struct {
	t   *testing.T
	ws  *websocket.Conn
	ctx context.Context
	n   int
	// autoAck answers the client's heartbeats while the script reads.
	autoAck bool
	beats   int
	// err is what ended the last read.
	err error
}

func (fc *fakeConn) send(op string, d any) bool {
	b, _ := json.Marshal(map[string]any{"op": op, "d": d})
	if err := fc.ws.Write(fc.ctx, websocket.MessageText, b); err != nil {
		fc.t.Errorf("connection %d: write %s: %v", fc.n, op, err)
		return false
	}
	return true
}

func (fc *fakeConn) hello(intervalMS int) bool {
	return fc.send("hello", map[string]any{"heartbeat_interval_ms": intervalMS})
}

func (fc *fakeConn) ready(session string, head int64) bool {
	return fc.send("ready", map[string]any{"session_id": session, "principal": map[string]any{"id": "p1"}, "head_seq": head})
}

func (fc *fakeConn) events(seqs ...int64) bool {
	for _, s := range seqs {
		if !fc.send("event", map[string]any{"seq": s, "type": "message.created", "data": map[string]any{"n": s}}) {
			return false
		}
	}
	return true
}

func (fc *fakeConn) close(code int, reason string) {
	_ = fc.ws.Close(websocket.StatusCode(code), reason)
}

// read returns the next frame that is not a heartbeat (those it counts, and acknowledges
// when autoAck), or ok false when the connection ended.
func (fc *fakeConn) read() (f frame, ok bool) {
	for {
		_, b, err := fc.ws.Read(fc.ctx)
		if err != nil {
			fc.err = err
			return frame{}, false
		}
		if err := json.Unmarshal(b, &f); err != nil {
			fc.t.Errorf("connection %d: the client sent %q, not a frame", fc.n, b)
			return frame{}, false
		}
		if f.Op == opHeartbeat {
			fc.beats++
			if fc.autoAck && !fc.send(opHeartbeatAck, struct{}{}) {
				return frame{}, false
			}
			continue
		}
		return f, true
	}
}

// expect reads the next frame and decodes its d, failing unless its op is op.
func (fc *fakeConn) expect(op string) (map[string]any, bool) {
	f, ok := fc.read()
	if !ok {
		fc.t.Errorf("connection %d: ended, want %s", fc.n, op)
		return nil, false
	}
	if f.Op != op {
		fc.t.Errorf("connection %d: the client sent %s %s, want %s", fc.n, f.Op, f.D, op)
		return nil, false
	}
	var d map[string]any
	_ = json.Unmarshal(f.D, &d)
	return d, true
}

// waitClosed reads until the client goes away and returns its close code (-1 without one).
func (fc *fakeConn) waitClosed() int {
	for {
		if _, ok := fc.read(); !ok {
			return int(websocket.CloseStatus(fc.err))
		}
	}
}

// collector is a handler that records what it is handed and stops Run after stopAt events.
type collector struct {
	mu     sync.Mutex
	seqs   []int64
	cancel context.CancelFunc
	stopAt int
}

func (c *collector) handle(ev Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seqs = append(c.seqs, ev.Seq)
	if len(c.seqs) == c.stopAt {
		c.cancel()
	}
	return nil
}

func (c *collector) got() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.seqs...)
}

// runFor runs cl until the handler has seen stopAt events or the deadline passes, and returns
// the seqs handed and Run's error.
func runFor(t *testing.T, cl *Client, stopAt int, deadline time.Duration) ([]int64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	col := &collector{cancel: cancel, stopAt: stopAt}
	err := cl.Run(ctx, col.handle)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run did not end within %s; it handed %v", deadline, col.got())
	}
	return col.got(), err
}

func decodeFrame(b []byte) (frame, error) {
	var f frame
	err := json.Unmarshal(b, &f)
	return f, err
}

func decodeD(f frame) (map[string]any, error) {
	var d map[string]any
	err := json.Unmarshal(f.D, &d)
	return d, err
}
