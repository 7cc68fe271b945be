package gatewaybench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// The load generator's gateway clients are lean on purpose: the project's client package
// decodes every frame with encoding/json and reads each into a new slice, about 12 µs per
// delivered event against the server's 5, so that a benchmark of it measured the load
// generator. A conn reads each frame into one buffer it reuses and reads only what the
// benchmark needs by its bytes, in the member order the server writes (app/gateway's
// EventFrame and encodeServer): every frame starts with {"op":"…", an event of the log with
// {"op":"event","d":{"seq":N,"type":"…","data":…,"created_at":"…"…. A frame of another shape
// is an error, never something skipped.

var (
	opPrefix        = []byte(`{"op":"`)
	loggedPrefix    = []byte(`{"op":"event","d":{"seq":`)
	ephemeralPrefix = []byte(`{"op":"event","d":{"type":`)
	typeKey         = []byte(`,"type":"`)
	dataKey         = []byte(`","data":`)
	createdAtKey    = []byte(`,"created_at":"`)
	intervalKey     = []byte(`"heartbeat_interval_ms":`)
	heartbeatFrame  = []byte(`{"op":"heartbeat","d":{}}`)
)

// Timing of a conn: the handshake and hello, and every frame it writes.
const (
	helloTimeout = 10 * time.Second
	writeTimeout = 10 * time.Second
	// readLimit is the largest frame a conn takes (a ready with many people online is the
	// largest the benchmarks see).
	readLimit = 1 << 20
)

// handshakeClient makes the WebSocket handshakes, never through a proxy (the server is on
// loopback).
var handshakeClient = &http.Client{Transport: &http.Transport{
	DialContext:        (&net.Dialer{Timeout: helloTimeout}).DialContext,
	DisableCompression: true,
}}

// conn is one gateway connection of the load generator. One goroutine reads it (read); writes
// may come from any goroutine (coder/websocket's Write is safe for that).
type conn struct {
	ws       *websocket.Conn
	buf      []byte        // the last frame read, overwritten by the next
	interval time.Duration // hello's heartbeat interval
	beat     *time.Timer   // sends a heartbeat every interval once identify is sent
	closing  atomic.Bool   // close was called: the read's error is the close
}

// dial opens a connection to base's gateway and reads hello.
func dial(ctx context.Context, base string) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	url := "ws" + strings.TrimPrefix(base, "http") + "/api/v1/gateway"
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: handshakeClient})
	if err != nil {
		if resp != nil {
			err = fmt.Errorf("handshake answered %s: %w", resp.Status, err)
		}
		return nil, err
	}
	ws.SetReadLimit(readLimit)
	c := &conn{ws: ws}
	// A context that can end costs a timer per read in coder/websocket: only hello has one.
	hello, err := c.readWith(ctx)
	if err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("hello: %w", err)
	}
	if op, _ := frameOp(hello); string(op) != "hello" {
		ws.CloseNow()
		return nil, fmt.Errorf("the server sent %.200s first, not hello", hello)
	}
	if k := bytes.Index(hello, intervalKey); k >= 0 {
		if ms, _, ok := leadingInt(hello[k+len(intervalKey):]); ok && ms > 0 {
			c.interval = time.Duration(ms) * time.Millisecond
		}
	}
	if c.interval == 0 {
		ws.CloseNow()
		return nil, fmt.Errorf("hello without a heartbeat interval: %.200s", hello)
	}
	return c, nil
}

// identify sends identify with token, and with cursor unless it is negative (live from the
// head), and returns the moment just before the write. From then on the conn beats every
// interval, the first time after a random part of it so that a fleet does not beat at once.
func (c *conn) identify(token string, cursor int64) (time.Time, error) {
	tok, err := json.Marshal(token)
	if err != nil {
		return time.Time{}, err
	}
	b := append([]byte(`{"op":"identify","d":{"token":`), tok...)
	if cursor >= 0 {
		b = fmt.Appendf(b, `,"cursor":%d`, cursor)
	}
	b = append(b, "}}"...)
	sent := time.Now()
	if err := c.write(b); err != nil {
		return time.Time{}, fmt.Errorf("identify: %w", err)
	}
	c.beat = time.AfterFunc(time.Duration(float64(c.interval)*(0.1+0.9*rand.Float64())), func() {
		if c.closing.Load() || c.write(heartbeatFrame) != nil {
			return
		}
		c.beat.Reset(c.interval)
	})
	return sent, nil
}

func (c *conn) write(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// read returns the next frame other than a heartbeat or its ack (it answers the server's
// heartbeat itself) and the moment it had read it. The frame is valid until the next read.
// Close ends a read in progress.
func (c *conn) read() (frame []byte, at time.Time, err error) {
	for {
		f, err := c.readWith(context.Background())
		if err != nil {
			return nil, time.Time{}, err
		}
		at := time.Now()
		op, ok := frameOp(f)
		switch {
		case !ok:
			return nil, at, fmt.Errorf("the server sent a frame that does not start with its op: %.200s", f)
		case string(op) == "heartbeat":
			if err := c.write(heartbeatFrame); err != nil {
				return nil, at, fmt.Errorf("answer the server's heartbeat: %w", err)
			}
		case string(op) == "heartbeat.ack":
		default:
			return f, at, nil
		}
	}
}

// readWith reads one text message into c.buf, without coder/websocket's Conn.Read, which
// reads each message into a new slice.
func (c *conn) readWith(ctx context.Context) ([]byte, error) {
	typ, r, err := c.ws.Reader(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, errors.New("the server sent a binary frame")
	}
	b := c.buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			c.buf = b
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// close stops the heartbeats and closes with a normal closure, waiting at most a second for
// the server to answer the close frame before dropping the connection.
func (c *conn) close() {
	if c.closing.Swap(true) {
		return
	}
	if c.beat != nil {
		c.beat.Stop()
	}
	done := make(chan struct{})
	go func() {
		_ = c.ws.Close(websocket.StatusNormalClosure, "benchmark over")
		close(done)
	}()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		_ = c.ws.CloseNow()
	}
}

// abort drops the connection without a close frame (a deadline passed).
func (c *conn) abort() {
	if !c.closing.Swap(true) && c.beat != nil {
		c.beat.Stop()
	}
	_ = c.ws.CloseNow()
}

// frameOp returns the op of a server frame, which the server writes first.
func frameOp(f []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(f, opPrefix)
	if !ok {
		return nil, false
	}
	k := bytes.IndexByte(rest, '"')
	if k < 0 {
		return nil, false
	}
	return rest[:k], true
}

// event is what the load generator reads of an event frame. Its slices point into the frame.
type event struct {
	seq       int64 // 0: an ephemeral event (typing, presence), which has none
	typ, data []byte
	createdAt time.Time // when the writer appended it to the log (the server's clock)
}

// parseEvent reads an event frame. Only the seq, the type, the data and the event's own
// created_at are read; a logged event whose members are not where the server writes them is
// an error.
func parseEvent(f []byte) (event, error) {
	rest, ok := bytes.CutPrefix(f, loggedPrefix)
	if !ok {
		if bytes.HasPrefix(f, ephemeralPrefix) {
			return event{}, nil
		}
		return event{}, fmt.Errorf("an event frame not as the server writes them: %.200s", f)
	}
	var e event
	if e.seq, rest, ok = leadingInt(rest); !ok || e.seq <= 0 {
		return event{}, fmt.Errorf("an event frame without a positive seq: %.200s", f)
	}
	if rest, ok = bytes.CutPrefix(rest, typeKey); !ok {
		return event{}, fmt.Errorf("event %d: no type after the seq: %.200s", e.seq, f)
	}
	k := bytes.Index(rest, dataKey)
	if k < 0 {
		return event{}, fmt.Errorf("event %d: no data after the type: %.200s", e.seq, f)
	}
	e.typ, rest = rest[:k], rest[k+len(dataKey):]
	// The data may hold a created_at of its own (a message's); the event's follows the data,
	// and only ids (quoted, without quotes inside) follow it, so it is the last one.
	k = lastIndex(rest, createdAtKey)
	if k < 0 {
		return event{}, fmt.Errorf("event %d: no created_at after the data", e.seq)
	}
	e.data = rest[:k]
	stamp := rest[k+len(createdAtKey):]
	if end := bytes.IndexByte(stamp, '"'); end >= 0 {
		e.createdAt, ok = parseUTC(stamp[:end])
	} else {
		ok = false
	}
	if !ok {
		return event{}, fmt.Errorf("event %d: a created_at that is not RFC 3339: %.80s", e.seq, stamp)
	}
	return e, nil
}

// lastIndex is bytes.LastIndex by forward searches, which are vectorized where LastIndex's
// Rabin-Karp is not: on a message.created frame, where the pattern occurs twice, parseEvent
// takes 155 ns instead of 230.
func lastIndex(b, pat []byte) int {
	last := -1
	for from := 0; ; {
		k := bytes.Index(b[from:], pat)
		if k < 0 {
			return last
		}
		last = from + k
		from = last + 1
	}
}

// parseUTC reads the time the server writes, time.RFC3339Nano of a UTC time
// ("2006-01-02T15:04:05.999999999Z"), without the string time.Parse needs; any other form goes
// to time.Parse.
func parseUTC(b []byte) (time.Time, bool) {
	if len(b) >= 20 && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' && b[16] == ':' && b[len(b)-1] == 'Z' {
		y, ok1 := digits(b[0:4])
		mo, ok2 := digits(b[5:7])
		d, ok3 := digits(b[8:10])
		h, ok4 := digits(b[11:13])
		mi, ok5 := digits(b[14:16])
		s, ok6 := digits(b[17:19])
		ns, ok7 := 0, true
		if frac := b[19 : len(b)-1]; len(frac) > 0 {
			ok7 = frac[0] == '.' && len(frac) >= 2 && len(frac) <= 10
			if ok7 {
				ns, ok7 = digits(frac[1:])
				for range 10 - len(frac) {
					ns *= 10
				}
			}
		}
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 {
			return time.Date(y, time.Month(mo), d, h, mi, s, ns, time.UTC), true
		}
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	return t, err == nil
}

// digits reads a non-empty run of ASCII digits.
func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(b) > 0
}
