package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// The close codes of the gateway (docs/gateway.md). Run reconnects after every close but
// CloseAuthenticationFailed, CloseConsumerTakenOver, CloseResyncRequired and CloseDeviceReplaced,
// which end it with a *CloseError; it identifies again with its cursor after
// CloseNotAuthenticated, CloseSessionInvalid and CloseServerRestart, and resumes its session
// after the others (and after a network error). After CloseTooManyConnections it never
// reconnects at once: it sleeps at least the backoff's current ceiling first.
const (
	CloseMessageTooBig        = 1009 // RFC 6455: a frame above the server's limit
	CloseUnknownError         = 4000
	CloseUnknownOp            = 4001
	CloseDecodeError          = 4002
	CloseNotAuthenticated     = 4003
	CloseAuthenticationFailed = 4004
	CloseAlreadyAuthenticated = 4005
	CloseSessionInvalid       = 4006
	CloseRateLimited          = 4008
	CloseHeartbeatTimeout     = 4009
	CloseServerRestart        = 4013
	CloseSlowConsumer         = 4014
	CloseConsumerTakenOver    = 4015
	CloseResyncRequired       = 4016
	CloseDeviceReplaced       = 4017
	CloseTooManyConnections   = 4018 // the principal's or the address's bound of connections
)

var (
	// ErrAuthenticationFailed: the server refused the token (close 4004). Run does not retry
	// it; the token is wrong, expired or revoked, the login session ended, or the principal was
	// disabled.
	ErrAuthenticationFailed = errors.New("bothy gateway: authentication failed")
	// ErrResyncRequired: the server cannot continue from the cursor (close 4016: it is older
	// than the log the server keeps, or beyond its head). Reload the state from the REST API,
	// then either SetCursor to the head_seq that Events answered before the reload, or
	// ResetCursor to start at the head, and Run again.
	ErrResyncRequired = errors.New("bothy gateway: resync required")
	// ErrReplaced: a newer connection of the same agent or device took over (closes 4015 and
	// 4017). Reconnecting would take it back, and so on: Run stops.
	ErrReplaced = errors.New("bothy gateway: replaced by a newer connection")
)

// CloseError is the close of the gateway that ended Run. errors.Is matches it with
// ErrAuthenticationFailed (4004), ErrResyncRequired (4016) and ErrReplaced (4015, 4017).
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("bothy gateway: closed with %d %q", e.Code, e.Reason)
}

// Is matches the sentinel of the code.
func (e *CloseError) Is(target error) bool {
	switch target {
	case ErrAuthenticationFailed:
		return e.Code == CloseAuthenticationFailed
	case ErrResyncRequired:
		return e.Code == CloseResyncRequired
	case ErrReplaced:
		return e.Code == CloseConsumerTakenOver || e.Code == CloseDeviceReplaced
	}
	return false
}

// Principal is who a gateway session acts as.
type Principal struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"` // person, agent or app
	Handle  string `json:"handle"`
	IsOwner bool   `json:"is_owner"`
}

// Ready is what the server answers an identify or a resume with.
type Ready struct {
	SessionID string    `json:"session_id"`
	Principal Principal `json:"principal"`
	// HeadSeq is the newest seq of the log when the session started.
	HeadSeq int64 `json:"head_seq"`
	// Online lists the ids of the people online when the session started, the principal
	// included (people only; nil for an agent). presence.updated events, handed to the
	// ephemeral handler, tell each change after it.
	Online []string `json:"online,omitempty"`
	// AckedSeq is set for an agent's connection, its consumer: the seq the agent acknowledged
	// last, after which the server replays (at least once).
	AckedSeq *int64 `json:"acked_seq,omitempty"`
	// Resumed is true when the server took the session back (a resume) rather than starting
	// one (an identify).
	Resumed bool `json:"-"`
}

// frame is one gateway message, both ways.
type frame struct {
	Op string          `json:"op"`
	D  json.RawMessage `json:"d,omitempty"`
	ev *Event          // an event frame's d, when readFrame decoded it already
}

// Ops the client sends and reads.
const (
	opHello           = "hello"
	opIdentify        = "identify"
	opResume          = "resume"
	opReady           = "ready"
	opResumed         = "resumed"
	opEvent           = "event"
	opCatchupComplete = "catchup.complete"
	opHeartbeat       = "heartbeat"
	opHeartbeatAck    = "heartbeat.ack"
	opAck             = "ack"
)

// ackInterval is how often an agent's client acknowledges what its handler has done.
const ackInterval = time.Second

// writeTimeout bounds every write of the client; a server that does not read for this long is
// as good as gone.
const writeTimeout = 10 * time.Second

// gatewayConn is one connection, as Send uses it.
type gatewayConn struct {
	ws *websocket.Conn
}

func (g *gatewayConn) send(ctx context.Context, op string, d any) error {
	f := frame{Op: op}
	if d != nil {
		b, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("client: encode %s: %w", op, err)
		}
		f.D = b
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("client: encode %s: %w", op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return g.ws.Write(ctx, websocket.MessageText, b)
}

// Send writes one frame on the current connection (for example "typing.start" with
// {"thread_id": …}); it fails when Run is between connections. It may be called from any
// goroutine, also from a handler.
func (c *Client) Send(ctx context.Context, op string, d any) error {
	c.mu.Lock()
	g := c.conn
	c.mu.Unlock()
	if g == nil {
		return errNotConnected
	}
	return g.send(ctx, op, d)
}

// StartTyping tells the others who may read the thread that the principal is typing. Send it
// again every few seconds while typing, not more: the server closes a connection that sends more
// than 120 frames a minute (4008), heartbeats aside.
func (c *Client) StartTyping(ctx context.Context, threadID string) error {
	return c.Send(ctx, "typing.start", map[string]string{"thread_id": threadID})
}

// Focus tells the server which thread the client is looking at.
func (c *Client) Focus(ctx context.Context, threadID string) error {
	return c.Send(ctx, "focus", map[string]string{"thread_id": threadID})
}

// gatewayURL is the WebSocket address of the gateway.
func (c *Client) gatewayURL() string {
	u := *c.base
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	u.Path += "/api/v1/gateway"
	return u.String()
}

// Run follows the gateway until ctx ends or the server refuses the client for good, and hands
// every event of the log the token may see to handle, exactly once and in seq order, from one
// goroutine. The first connection starts at the cursor of WithCursor, or else at the head of
// the log; every later one continues after the last event handed.
//
// Run returns ctx's error when ctx ends, a *CloseError for 4004 (ErrAuthenticationFailed), 4016
// (ErrResyncRequired), 4015 and 4017 (ErrReplaced), and the handler's error, wrapped, when the handler fails: the event
// it failed on is not counted as handed, so the next Run hands it again. After any other close
// or network error it reconnects, sleeping a random time up to base·2ⁿ (full jitter, capped;
// see WithBackoff; after 4018, too many connections, that ceiling plus such a random time), and
// resumes its session or identifies with its cursor.
func (c *Client) Run(ctx context.Context, handle func(Event) error) error {
	if handle == nil {
		return errors.New("client: Run needs a handler")
	}
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("client: Run is already running")
	}
	defer c.running.Store(false)
	if c.base.Scheme == "invalid" {
		return fmt.Errorf("client: base URL %q is not an http or https URL", c.base.Opaque)
	}
	failures := 0
	for {
		out := c.connect(ctx, handle)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if out.fatal != nil {
			return out.fatal
		}
		if out.stable {
			failures = 0
		}
		failures++
		var delay time.Duration
		switch ceiling := c.backoffCeiling(failures); {
		case out.patient:
			delay = ceiling + c.jitter(ceiling)
		case !out.now:
			delay = c.jitter(ceiling)
		}
		c.log.Info("bothy gateway: reconnecting", "code", out.code, "cause", out.cause,
			"after", delay, "attempt", failures, "cursor", c.Cursor())
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
}

// backoffCeiling is min(cap, base·2ⁿ⁻¹) for the n-th reconnect in a row.
func (c *Client) backoffCeiling(n int) time.Duration {
	d := c.backoffBase
	for i := 1; i < n && d < c.backoffCap; i++ {
		d *= 2
	}
	return min(d, c.backoffCap)
}

// outcome is how one connection ended.
type outcome struct {
	fatal  error // ends Run
	code   int   // the server's close code, -1 when it sent none
	cause  error // what ended the connection, for the log
	stable bool  // it was ready for at least stableAfter
	now    bool  // reconnect without sleeping
	// patient: sleep at least the backoff's ceiling; a slot frees only when another connection
	// closes, so an early retry would be refused again.
	patient bool
}

// connect runs one connection from the dial to its end.
func (c *Client) connect(ctx context.Context, handle func(Event) error) outcome {
	dctx, cancel := context.WithTimeout(ctx, c.helloTimeout)
	ws, resp, err := websocket.Dial(dctx, c.gatewayURL(), &websocket.DialOptions{
		HTTPClient: c.http,
		HTTPHeader: http.Header{"User-Agent": {"bothy-go-client"}},
	})
	cancel()
	if err != nil {
		if resp != nil {
			err = fmt.Errorf("handshake answered %s: %w", resp.Status, err)
		}
		return outcome{code: -1, cause: err}
	}
	defer ws.CloseNow()
	ws.SetReadLimit(c.readLimit)
	// The connection's own context: cancelling Run's ctx closes the socket with a close frame
	// (below), not by cutting the reads.
	connCtx, stopConn := context.WithCancel(context.Background())
	defer stopConn()

	hctx, cancel := context.WithTimeout(connCtx, c.helloTimeout)
	var buf bytes.Buffer
	hello, err := readFrame(hctx, ws, &buf)
	cancel()
	if err != nil {
		return c.ended(ctx, err, "", false, time.Time{})
	}
	var h struct {
		HeartbeatIntervalMS int64 `json:"heartbeat_interval_ms"`
	}
	if hello.Op != opHello || json.Unmarshal(hello.D, &h) != nil || h.HeartbeatIntervalMS <= 0 {
		_ = ws.Close(websocket.StatusProtocolError, "expected hello")
		return outcome{code: -1, cause: fmt.Errorf("the server sent %q first, not a hello with an interval", hello.Op)}
	}
	interval := time.Duration(h.HeartbeatIntervalMS) * time.Millisecond

	g := &gatewayConn{ws: ws}
	c.mu.Lock()
	sessionID, cursor, hasCursor := c.sessionID, c.cursor, c.hasCursor
	c.mu.Unlock()
	resuming := sessionID != "" && hasCursor
	if resuming {
		err = g.send(ctx, opResume, map[string]any{"session_id": sessionID, "seq": cursor})
	} else {
		d := map[string]any{"token": c.token}
		if hasCursor {
			d["cursor"] = cursor
		}
		if c.deviceID != "" {
			d["device_id"] = c.deviceID
		}
		err = g.send(ctx, opIdentify, d)
	}
	if err != nil {
		return c.ended(ctx, err, "", resuming, time.Time{})
	}

	// The reader answers heartbeats itself and queues the rest, so that a slow handler
	// neither blocks the heartbeats nor loses their acks. When the queue is full the reader
	// waits, the server's queue fills, and the server decides (4014).
	frames := make(chan frame, 256)
	var (
		readErr     error
		handing     atomic.Bool // the reader waits for the handler
		unacked     atomic.Bool // a heartbeat is out and nothing came since
		localReason atomic.Pointer[string]
	)
	go func() {
		defer close(frames)
		for {
			// No context on the read: coder/websocket arms a timer per read for a context
			// that can end, a cost on every frame; the deferred CloseNow ends the read.
			f, err := readFrame(context.Background(), ws, &buf)
			if err != nil {
				readErr = err
				return
			}
			// Any frame shows the connection alive, not only the ack, which may wait behind a
			// long replay on a slow link.
			unacked.Store(false)
			switch f.Op {
			case opHeartbeatAck:
			case opHeartbeat:
				// The server asks for one now.
				_ = g.send(connCtx, opHeartbeat, struct{}{})
			default:
				if c.peek != nil && f.Op == opEvent {
					ev := f.ev
					if ev == nil {
						ev = new(Event)
						if json.Unmarshal(f.D, ev) != nil {
							ev = nil
						}
					}
					if ev != nil && ev.Seq > 0 {
						c.peek(*ev)
					}
				}
				handing.Store(true)
				select {
				case frames <- f:
				case <-connCtx.Done():
					return
				}
				handing.Store(false)
			}
		}
	}()
	go func() {
		// The first beat comes after a random part of the interval, so that clients that
		// reconnect together do not beat together.
		t := time.NewTimer(time.Duration(float64(interval) * (0.1 + 0.9*rand.Float64())))
		defer t.Stop()
		for {
			select {
			case <-connCtx.Done():
				return
			case <-t.C:
			}
			if unacked.Load() && !handing.Load() {
				// Nothing came for a whole interval after the last beat: the connection is a
				// zombie (a dead NAT entry, a frozen server). Drop it and reconnect.
				r := "heartbeat not acknowledged"
				localReason.Store(&r)
				_ = ws.Close(CloseHeartbeatTimeout, r)
				return
			}
			unacked.Store(true)
			if err := g.send(connCtx, opHeartbeat, struct{}{}); err != nil {
				return
			}
			t.Reset(interval)
		}
	}()

	var readyAt time.Time
	defer func() {
		c.mu.Lock()
		if c.conn == g {
			c.conn = nil
		}
		c.mu.Unlock()
	}()
	// An agent's connection is its consumer: the server replays from what the agent
	// acknowledged. The client acknowledges what its handler returned from, at most once per
	// ackInterval (an ack per event would run into the server's frame rate limit).
	var consumer bool
	var acked, seen int64 // seen: the highest seq this connection was sent, the bound of an ack
	ackTick := time.NewTicker(ackInterval)
	defer ackTick.Stop()
	ack := func() {
		if cur := min(c.Cursor(), seen); consumer && cur > acked {
			if g.send(connCtx, opAck, map[string]int64{"seq": cur}) == nil {
				acked = cur
			}
		}
	}
	defer ack()
	for {
		var f frame
		var ok bool
		select {
		case <-ctx.Done():
			ack()
			c.stop(ws)
			return outcome{fatal: ctx.Err()}
		case <-ackTick.C:
			ack()
			continue
		case f, ok = <-frames:
		}
		if !ok {
			reason := ""
			if r := localReason.Load(); r != nil {
				reason = *r
			}
			return c.ended(ctx, readErr, reason, resuming, readyAt)
		}
		switch f.Op {
		case opReady, opResumed:
			var r Ready
			if err := json.Unmarshal(f.D, &r); err != nil {
				stopClose(ws, websocket.StatusProtocolError, "bad ready")
				return outcome{code: -1, cause: fmt.Errorf("decode %s: %w", f.Op, err)}
			}
			r.Resumed = f.Op == opResumed || (resuming && r.SessionID == sessionID)
			c.mu.Lock()
			if r.SessionID != "" {
				c.sessionID = r.SessionID
			}
			switch {
			case !c.hasCursor && r.AckedSeq != nil:
				// An agent's consumer started without a cursor: from what it acknowledged,
				// which the server replays after.
				c.cursor, c.hasCursor = *r.AckedSeq, true
			case !c.hasCursor:
				// Started without a cursor: live from the head the server names.
				c.cursor, c.hasCursor = r.HeadSeq, true
			}
			c.conn = g
			c.mu.Unlock()
			readyAt = time.Now()
			consumer = r.Principal.Kind == "agent"
			if c.onReady != nil {
				c.onReady(r)
			}
		case opEvent:
			var ev Event
			var err error
			if f.ev != nil {
				ev = *f.ev
			} else {
				err = json.Unmarshal(f.D, &ev)
			}
			if err != nil || ev.Seq < 0 || ev.Type == "" {
				stopClose(ws, websocket.StatusProtocolError, "bad event")
				return outcome{code: -1, cause: fmt.Errorf("the server sent an event that does not decode (%v): %.200s", err, f.D)}
			}
			if ev.Seq == 0 {
				if c.onEphemeral != nil {
					if err := c.onEphemeral(ev); err != nil {
						ack()
						c.stop(ws)
						return outcome{fatal: fmt.Errorf("client: ephemeral handler: %w", err)}
					}
				}
				continue
			}
			seen = max(seen, ev.Seq)
			if ev.Seq <= c.Cursor() {
				// Already handed: a replay that overlaps what came before.
				continue
			}
			if err := handle(ev); err != nil {
				ack() // what came before is handled; this event is not, and comes again
				c.stop(ws)
				return outcome{fatal: fmt.Errorf("client: handler at seq %d: %w", ev.Seq, err)}
			}
			c.mu.Lock()
			c.cursor = ev.Seq
			c.mu.Unlock()
		case opCatchupComplete:
			var d struct {
				HeadSeq int64 `json:"head_seq"`
			}
			if json.Unmarshal(f.D, &d) == nil {
				// Everything up to head_seq that the principal may see has been sent: move the
				// cursor there, so that a quiet client does not keep an old cursor (which
				// would make each reconnect scan, and one day be refused with 4016).
				c.mu.Lock()
				c.cursor = max(c.cursor, d.HeadSeq)
				c.mu.Unlock()
				seen = max(seen, d.HeadSeq)
			}
		default:
			// An op this client does not know yet: newer servers may add some.
		}
	}
}

// ended turns the error that ended a connection into what Run does next.
func (c *Client) ended(ctx context.Context, err error, localReason string, resumed bool, readyAt time.Time) outcome {
	if ctx.Err() != nil {
		return outcome{fatal: ctx.Err()}
	}
	out := outcome{code: int(websocket.CloseStatus(err)), cause: err}
	if localReason != "" {
		out.code, out.cause = -1, errors.New(localReason)
	}
	out.stable = !readyAt.IsZero() && time.Since(readyAt) >= c.stableAfter
	var ce websocket.CloseError
	errors.As(err, &ce)
	switch out.code {
	case CloseAuthenticationFailed, CloseResyncRequired, CloseConsumerTakenOver, CloseDeviceReplaced:
		out.fatal = &CloseError{Code: out.code, Reason: ce.Reason}
	case CloseSessionInvalid:
		// The session is gone (another node, a restart): identify with the cursor, at once if
		// this was a resume.
		c.forgetSession()
		out.now = resumed
	case CloseNotAuthenticated:
		// The connection never identified (too slow, or an op before identify).
		c.forgetSession()
	case CloseServerRestart:
		// Sessions live in the memory of the process that is going away: the new one would
		// answer a resume with 4006, so identify with the cursor straight away.
		c.forgetSession()
	case CloseTooManyConnections:
		out.patient = true
	}
	return out
}

func (c *Client) forgetSession() {
	c.mu.Lock()
	c.sessionID = ""
	c.mu.Unlock()
}

// stop closes the connection because Run ends: a normal closure, after which the server
// forgets the session, and so does the client (the next Run identifies with the cursor).
func (c *Client) stop(ws *websocket.Conn) {
	c.forgetSession()
	stopClose(ws, websocket.StatusNormalClosure, "client stopped")
}

var eventPrefix = []byte(`{"op":"event","d":`)

// readFrame reads one text frame and decodes its envelope.
//
// buf is the reader's own buffer, used again for every frame (ws.Read would allocate a new,
// growing slice per frame): nothing returned refers to it.
func readFrame(ctx context.Context, ws *websocket.Conn, buf *bytes.Buffer) (frame, error) {
	typ, r, err := ws.Reader(ctx)
	if err != nil {
		return frame{}, err
	}
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		return frame{}, err
	}
	b := buf.Bytes()
	var f frame
	if typ != websocket.MessageText {
		return frame{}, errors.New("the server sent a binary frame")
	}
	// The fast path of the frame the server sends most, in the member order it writes: the
	// event is decoded from d without decoding the envelope first, which saves two of the four
	// passes of encoding/json over every event. When d is one valid value the frame is exactly
	// {"op":"event","d":d}; anything else takes the general path.
	if rest, ok := bytes.CutPrefix(b, eventPrefix); ok && len(rest) > 1 && rest[len(rest)-1] == '}' {
		ev := new(Event)
		if d := rest[:len(rest)-1]; json.Unmarshal(d, ev) == nil {
			return frame{Op: opEvent, ev: ev}, nil
		}
	}
	if err := json.Unmarshal(b, &f); err != nil || f.Op == "" {
		return frame{}, fmt.Errorf("the server sent a frame that is not {op, d}: %.200s", b)
	}
	return f, nil
}

// stopClose closes with a close frame, but waits at most a second for the server to answer it.
func stopClose(ws *websocket.Conn, code websocket.StatusCode, reason string) {
	done := make(chan struct{})
	go func() {
		_ = ws.Close(code, reason)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		_ = ws.CloseNow()
	}
}
