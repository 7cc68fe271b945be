package gateway

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// conn is one client connection and its state machine:
//
//	hello sent → identify or resume → catching up (ready, replay, catchup.complete) → live → closed
//
// One goroutine reads (readLoop) and runs the ops; the gateway's flushers write the outbound
// queue (flush.go), so an idle connection costs one goroutine; a catch-up runs in a goroutine of
// its own so that heartbeats are answered meanwhile.
type conn struct {
	g           *Gateway
	t           Transport
	info        ConnInfo
	connectedAt time.Time

	lastSeen   atomic.Int64 // unix nanoseconds of the last frame from the client
	nudged     atomic.Bool  // a heartbeat was sent for the current silence
	identified atomic.Bool  // identify or resume was accepted
	consumer   atomic.Bool  // an agent's consuming connection (consumer.go)
	replayed   atomic.Int64 // the seq of the last event the replay queued

	// Read by the reader goroutine only.
	rateStart time.Time
	rateCount int

	mu   sync.Mutex
	cond sync.Cond // signalled when the queue shrinks or the connection ends

	sess  *session     // set at identify or resume; then fixed
	actor kernel.Actor // the credential's actor (its SessionID, TokenID)

	catchingUp bool
	buf        []pending // live events held while catching up
	overflow   bool      // buf overflowed: the catch-up pins again

	// prep holds, in seq order, the live events behind an agent.invocation whose Preparer call
	// (a read and a signature) runs on the connection's own goroutine, not the hub's (prepare.go);
	// preparing: that goroutine runs.
	prep      []pending
	preparing bool

	queue     [][]byte // frames for the writer
	spare     [][]byte
	lastSent  int64 // the highest seq queued once live
	scheduled bool  // with the flusher (queued, being written, or with its own slow writer)
	code      CloseCode
	reason    string
	gone      bool // the reader ended: the transport is closed or closing

	focusThread kernel.ID // guarded by c.mu, indexed by the hub
	device      deviceKey // the device c is bound to (device.go), guarded by c.mu

	// What c counts under the connection bounds (limits.go), guarded by g.mu.
	countedAddress   string
	countedPrincipal kernel.ID

	// watched is the Watcher's end of c (nil without one), called once its reader has ended.
	watched func(code CloseCode)
}

type pending struct {
	seq   int64
	frame []byte
	// ev is set instead of frame for an event that goes through the Preparer first.
	ev *kernel.LoggedEvent
}

func newConn(g *Gateway, t Transport, info ConnInfo) *conn {
	c := &conn{g: g, t: t, info: info, connectedAt: g.clock.Now()}
	c.cond.L = &c.mu
	c.lastSeen.Store(c.connectedAt.UnixNano())
	return c
}

// closeWith ends the connection with code: queued frames are dropped, the writer sends the close
// frame. The first code wins.
func (c *conn) closeWith(code CloseCode, reason string) {
	c.mu.Lock()
	c.closeLocked(code, reason)
	c.mu.Unlock()
}

func (c *conn) closeLocked(code CloseCode, reason string) {
	if c.code != 0 {
		return
	}
	if reason == "" {
		reason = Info(code).Name
	}
	c.code, c.reason = code, reason
	c.queue, c.buf, c.prep = nil, nil, nil
	c.cond.Broadcast()
	c.kickLocked()
}

// ended reports whether the connection is closing or gone; the caller holds c.mu.
func (c *conn) endedLocked() bool { return c.code != 0 || c.gone }

// enqueueControl queues a frame of the protocol itself (hello, heartbeats, acks): it does not
// count against the bound, which is for events.
func (c *conn) enqueueControl(f []byte) {
	c.mu.Lock()
	if !c.endedLocked() {
		c.queue = append(c.queue, f)
		c.kickLocked()
	}
	c.mu.Unlock()
}

// enqueueWait queues a frame of the catch-up, waiting while the queue is half full: the replay
// goes as fast as the client reads, leaves the other half to the live events that follow it, and
// a client that stops reading is closed by the write deadline. It reports false when the
// connection ended.
func (c *conn) enqueueWait(f []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queue) >= c.catchUpRoom() && !c.endedLocked() {
		c.cond.Wait()
	}
	if c.endedLocked() {
		return false
	}
	c.queue = append(c.queue, f)
	c.kickLocked()
	return true
}

// catchUpRoom is how much of the queue the catch-up may fill.
func (c *conn) catchUpRoom() int { return max(1, c.g.cfg.OutboundQueueMax/2) }

// offer hands the connection a live event from the hub; it never blocks. While catching up the
// event is held; once live it is queued, and a full queue closes the connection with 4014.
func (c *conn) offer(seq int64, f []byte) { c.offerPending(pending{seq: seq, frame: f}) }

// offerUnprepared hands the connection a live event that goes through the Preparer before it is
// queued; like offer it never blocks: the preparation runs on the connection's goroutine.
func (c *conn) offerUnprepared(e kernel.LoggedEvent) { c.offerPending(pending{seq: e.Seq, ev: &e}) }

func (c *conn) offerPending(p pending) {
	seq, f := p.seq, p.frame
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.endedLocked():
	case c.catchingUp:
		if c.overflow {
			return
		}
		if len(c.buf) >= c.g.cfg.OutboundQueueMax {
			c.overflow, c.buf = true, nil
			return
		}
		c.buf = append(c.buf, p)
	case seq <= c.lastSent:
		// Queued by the catch-up already: the hub pinned its position before this event.
	case p.ev != nil || len(c.prep) > 0:
		// To be prepared, or behind one that is: in order, after it.
		c.lastSent = seq
		c.pushPrepLocked(p)
	case len(c.queue) >= c.g.cfg.OutboundQueueMax:
		c.closeLocked(CloseSlowConsumer, "")
	default:
		c.queue = append(c.queue, f)
		c.lastSent = seq
		c.kickLocked()
	}
}

// offerEphemeral hands the connection an event without seq (typing.started): dropped when the
// queue is full or the connection is still catching up (an ephemeral event has nothing to replay), never a reason to close.
func (c *conn) offerEphemeral(f []byte) {
	c.mu.Lock()
	if !c.endedLocked() && !c.catchingUp && len(c.queue) < c.g.cfg.OutboundQueueMax {
		c.queue = append(c.queue, f)
		c.kickLocked()
	}
	c.mu.Unlock()
}

// offerPresence hands the connection a presence.updated (the presence calls it under its lock).
// Unlike typing it is state, not a hint: it is queued during the catch-up too (ready went
// first), and a full queue closes the connection with 4014 as an event would, since a dropped
// one would leave the client with a wrong online set.
func (c *conn) offerPresence(f []byte) {
	c.mu.Lock()
	switch {
	case c.endedLocked():
	case len(c.queue) >= c.g.cfg.OutboundQueueMax:
		c.closeLocked(CloseSlowConsumer, "")
	default:
		c.queue = append(c.queue, f)
		c.kickLocked()
	}
	c.mu.Unlock()
}

// kickLocked hands the connection to the flusher when it has frames or a close code and is not
// in the flusher's hands already.
func (c *conn) kickLocked() {
	if !c.scheduled && (len(c.queue) > 0 || c.code != 0) {
		c.scheduled = true
		c.g.flush.push(c)
	}
}

// framesPerDeadline is how many frames share one write deadline and one write to the network: a
// client that reads slowly but steadily is not closed because a long batch took longer than
// gateway.write_timeout in all.
const framesPerDeadline = 64

// closeGone marks a connection whose transport failed: there is nobody to send a close frame to.
const closeGone CloseCode = -1

// readLoop reads and runs the client's frames until the connection ends, then removes it.
func (c *conn) readLoop() {
	defer func() {
		if p := recover(); p != nil {
			c.g.log.Error("gateway: panic in a connection", "panic", fmt.Sprint(p), "stack", string(debug.Stack()),
				"correlation_id", c.info.CorrelationID)
			c.closeWith(CloseUnknownError, "")
		}
		c.mu.Lock()
		c.gone = true
		if c.code == 0 {
			c.code = closeGone
		}
		code := c.code
		c.cond.Broadcast()
		c.kickLocked() // the writer releases the transport: a close frame, or an abort
		c.mu.Unlock()
		c.g.forget(c, code)
		if c.watched != nil {
			c.watched(code)
		}
	}()
	for {
		msg, err := c.t.Read(context.Background())
		switch {
		case errors.Is(err, ErrBinary):
			c.closeWith(CloseDecodeError, "binary frame")
			return
		case errors.Is(err, ErrTooBig):
			// The transport has sent 1009; closing with it drains the rest of the frame, so
			// that a client still writing it gets to read the close.
			c.closeWith(CloseTooBig, "")
			return
		}
		if err != nil {
			return
		}
		now := c.g.clock.Now()
		c.lastSeen.Store(now.UnixNano())
		c.nudged.Store(false)
		if now.Sub(c.rateStart) >= rateWindow {
			c.rateStart, c.rateCount = now, 0
		}
		limit := c.g.cfg.frameLimit()
		if c.consumer.Load() {
			limit += ackAllowance // an agent acknowledging what it handles is no flood
		}
		if c.rateCount++; c.rateCount > limit {
			c.closeWith(CloseRateLimited, "")
			return
		}
		if code, reason := c.handleAside(msg); code != 0 {
			c.closeWith(code, reason)
			return
		}
	}
}

type handled struct {
	code   CloseCode
	reason string
}

// handleAside runs a frame on a goroutine of its own and waits for it. The reader's goroutine
// lives as long as the connection and is parked in Read nearly all that time; decoding and the
// ops (authentication, SQL, authorization) need deep stacks, which would stay with it: an idle
// connection would keep an 8 KiB stack instead of a 4 KiB one (measured).
func (c *conn) handleAside(msg []byte) (CloseCode, string) {
	done := make(chan handled, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				c.g.log.Error("gateway: panic in an op", "panic", fmt.Sprint(p), "stack", string(debug.Stack()),
					"correlation_id", c.info.CorrelationID)
				done <- handled{CloseUnknownError, ""}
			}
		}()
		code, reason := c.handle(msg)
		done <- handled{code, reason}
	}()
	h := <-done
	return h.code, h.reason
}

// op is how one client op is run: whether it needs an identified connection, the action its
// handler must have authorized when it acts (the proof of the check, per op: see docs/architecture.md, Authorization), and the handler. A handler
// returns acted (it did its effect, so the action must be in the check log) or a close code.
type op struct {
	needsIdentify bool
	action        kernel.Action
	run           func(c *conn, ctx context.Context, f Frame) (acted bool, code CloseCode, reason string)
}

var ops = map[string]op{
	OpHeartbeat:    {run: (*conn).heartbeat},
	OpHeartbeatAck: {run: func(*conn, context.Context, Frame) (bool, CloseCode, string) { return false, 0, "" }},
	OpIdentify:     {action: catchup.ActEventsCatchUp, run: (*conn).identify},
	OpResume:       {action: catchup.ActEventsCatchUp, run: (*conn).resume},
	OpTypingStart:  {needsIdentify: true, action: messaging.ActMessageCreate, run: (*conn).typingStart},
	OpFocus:        {needsIdentify: true, action: chat.ActThreadRead, run: (*conn).focus},
	OpAck:          {needsIdentify: true, run: (*conn).ack},
}

// opTimeout bounds the database work of one op (authenticate, authorize, read the head).
const opTimeout = 10 * time.Second

func (c *conn) handle(msg []byte) (CloseCode, string) {
	f, err := DecodeFrame(msg)
	if err != nil {
		return CloseDecodeError, ""
	}
	o, ok := ops[f.Op]
	if !ok {
		return CloseUnknownOp, ""
	}
	if o.needsIdentify && !c.identified.Load() {
		return CloseNotAuthenticated, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	ctx, checks := kernel.WithCheckLog(ctx)
	acted, code, reason := o.run(c, ctx, f)
	if code == 0 && acted && o.action != "" && !checks.Checked(o.action) {
		c.g.log.Error("gateway: op acted without checking its action", "op", f.Op, "action", o.action, "cause", "authz_not_checked")
		return CloseUnknownError, ""
	}
	return code, reason
}

func (c *conn) heartbeat(ctx context.Context, f Frame) (bool, CloseCode, string) {
	c.enqueueControl(heartbeatAckFrame)
	return false, 0, ""
}

// identify authenticates the token, checks the cursor and starts the session's catch-up.
func (c *conn) identify(ctx context.Context, f Frame) (bool, CloseCode, string) {
	if c.identified.Load() {
		return false, CloseAlreadyAuth, ""
	}
	var d identifyD
	if err := decodeD(f.D, &d); err != nil {
		return false, CloseDecodeError, ""
	}
	if d.Cursor != nil && *d.Cursor < 0 {
		return false, CloseDecodeError, "cursor must be 0 or more"
	}
	if d.DeviceID != "" && !validDeviceID(d.DeviceID) {
		return false, CloseDecodeError, "device_id must be a UUID in lower case"
	}
	if d.Token == "" {
		d.Token = c.info.Credential
	}
	if d.Token == "" {
		return false, CloseAuthFailed, ""
	}
	actor, err := c.g.deps.Auth.Authenticate(ctx, d.Token)
	if err != nil {
		return false, c.g.failed("identify", err), ""
	}
	if !c.g.admitPrincipal(c, actor.ID, c.g.replacesAnother(actor, d.DeviceID)) {
		return false, c.g.tooMany(c, actor), ""
	}
	sess := c.g.newSession(c, actor, d.Token)
	sess.device = d.DeviceID
	return c.start(ctx, sess, actor, d.Cursor)
}

// resume re-authenticates the session's credential and catches up from seq, with the focus the
// session had.
func (c *conn) resume(ctx context.Context, f Frame) (bool, CloseCode, string) {
	if c.identified.Load() {
		return false, CloseAlreadyAuth, ""
	}
	var d resumeD
	if err := decodeD(f.D, &d); err != nil {
		return false, CloseDecodeError, ""
	}
	if d.Seq == nil || *d.Seq < 0 {
		return false, CloseDecodeError, "seq must be 0 or more"
	}
	sess, took := c.g.takeSession(d.SessionID, c)
	if sess == nil {
		return false, CloseSessionInvalid, ""
	}
	actor, err := c.g.deps.Auth.Authenticate(ctx, sess.token)
	if err != nil {
		c.g.dropSession(sess)
		return false, c.g.failed("resume", err), ""
	}
	if !c.g.admitPrincipal(c, actor.ID, took || c.g.replacesAnother(actor, sess.device)) {
		// The session waits for a later resume, as after a drop.
		return false, c.g.tooMany(c, actor), ""
	}
	return c.start(ctx, sess, actor, d.Seq)
}

// start checks the cursor, computes what the principal may read (the check of events.catch_up)
// and hands the rest to a catch-up goroutine.
//
// It first waits for the hub to pass the head as the database has it now: the permission cache
// then knows everything the credential's check saw (a principal created a moment ago, a grant
// given before the login), and the replay ends at or after the client's cursor.
func (c *conn) start(ctx context.Context, sess *session, actor kernel.Actor, cursor *int64) (bool, CloseCode, string) {
	head, err := c.g.deps.Log.ReadHead(ctx)
	if err != nil {
		return false, c.g.failed("read the head", err), ""
	}
	if cursor != nil && *cursor > head {
		return false, CloseResyncRequired, "cursor beyond the head of the log"
	}
	consuming := actor.Kind == kernel.KindAgent && c.g.deps.Consumers != nil
	if consuming {
		start, err := c.g.consumerStart(ctx, actor.ID, head)
		if err != nil {
			return false, c.g.failed("read the consumer's cursor", err), ""
		}
		cursor = &start
	}
	if err := c.g.hub.waitPosition(ctx, head); err != nil {
		return false, c.g.failed("wait for the log tail", err), ""
	}
	gen := c.g.hub.rightsGeneration()
	vis, err := c.g.deps.Scoper.Visible(ctx, actor, catchup.ActEventsCatchUp)
	if err != nil {
		return false, c.g.failed("visibility", err), ""
	}
	c.mu.Lock()
	c.sess, c.actor = sess, actor
	c.catchingUp = true
	c.mu.Unlock()
	c.identified.Store(true)
	c.g.bindDevice(c, actor.ID, sess.device)
	if consuming {
		c.g.bindConsumer(c, actor.ID)
	}
	go c.catchUp(sess, actor, cursor, vis, gen)
	return true, 0, ""
}

// failed maps an error of an op to its close code, logging what is internal.
func (g *Gateway) failed(what string, err error) CloseCode {
	code := closeFor(err)
	if code == CloseUnknownError {
		g.log.Error("gateway: "+what+" failed", "err", err)
	}
	return code
}

// typingStart fans typing.started out to the others who may read the thread, if the sender may
// post in it. A thread the sender may not see is ignored, as if it did not exist.
func (c *conn) typingStart(ctx context.Context, f Frame) (bool, CloseCode, string) {
	var d threadD
	if err := decodeD(f.D, &d); err != nil {
		return false, CloseDecodeError, ""
	}
	id, err := d.threadID()
	if err != nil || id.IsZero() {
		return false, CloseDecodeError, "thread_id is required"
	}
	th, err := c.g.deps.Structure.Thread(ctx, id)
	if err != nil {
		return false, c.ignored("typing.start", err), ""
	}
	if err := c.g.deps.Authz.Authorize(ctx, c.actor, messaging.ActMessageCreate, th.Resource()); err != nil {
		return false, c.ignored("typing.start", err), ""
	}
	c.g.hub.typing(ctx, th, c.actor.ID)
	if cl := c.g.cluster; cl != nil {
		cl.publish(signal{Kind: signalTyping, ThreadID: th.ID, PrincipalID: c.actor.ID})
	}
	return true, 0, ""
}

// focus sets the thread the client looks at (run updates will follow it); null clears it. A
// thread the principal may not read is ignored.
func (c *conn) focus(ctx context.Context, f Frame) (bool, CloseCode, string) {
	var d threadD
	if err := decodeD(f.D, &d); err != nil {
		return false, CloseDecodeError, ""
	}
	id, err := d.threadID()
	if err != nil {
		return false, CloseDecodeError, ""
	}
	if id.IsZero() {
		c.g.hub.setFocus(c, kernel.NilID)
		c.g.setFocus(c.sess, kernel.NilID)
		return false, 0, ""
	}
	th, err := c.g.deps.Structure.Thread(ctx, id)
	if err != nil {
		return false, c.ignored("focus", err), ""
	}
	if err := c.g.deps.Authz.Authorize(ctx, c.actor, chat.ActThreadRead, th.Resource()); err != nil {
		return false, c.ignored("focus", err), ""
	}
	c.g.hub.setFocus(c, th.ID)
	c.g.setFocus(c.sess, th.ID)
	return true, 0, ""
}

// ignored is the answer to an op on something the principal may not see or that does not exist:
// nothing. Only an internal failure closes the connection.
func (c *conn) ignored(what string, err error) CloseCode {
	switch kernel.CodeOf(err) {
	case kernel.CodeNotFound, kernel.CodeForbidden:
		return 0
	}
	return c.g.failed(what, err)
}
