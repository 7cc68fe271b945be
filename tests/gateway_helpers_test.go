package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	botclient "bothy.dev/bothy/client"
)

// Helpers of the gateway tests: well-behaved clients are bots of the client package; the
// misbehaving ones are raw WebSocket connections that send what a test tells them to.

// gatewayURL is the WebSocket address of a base URL such as http://127.0.0.1:1234.
func gatewayURL(base string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/api/v1/gateway"
}

// bot is a client of the client package running in the background, recording what it hands.
type bot struct {
	name   string
	cl     *botclient.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	events    []botclient.Event
	ephemeral []botclient.Event
	readies   int
	err       error // what Run returned
}

// botOptions are the options of every test bot: a short backoff ceiling keeps the reconnect
// tests quick (the defaults, 250 ms to 30 s, are the client's own unit tests' business).
var botOptions = []botclient.Option{botclient.WithBackoff(50*time.Millisecond, 500*time.Millisecond)}

// mustStartBot runs a bot for token against base until the test ends.
func mustStartBot(tb testing.TB, name, base, token string, opts ...botclient.Option) *bot {
	tb.Helper()
	b := &bot{name: name, done: make(chan struct{})}
	opts = append(append(slices.Clone(botOptions),
		botclient.WithEphemeralHandler(func(ev botclient.Event) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.ephemeral = append(b.ephemeral, ev)
			return nil
		}),
		botclient.WithReadyHandler(func(botclient.Ready) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.readies++
		})), opts...)
	b.cl = botclient.New(base, token, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() {
		defer close(b.done)
		err := b.cl.Run(ctx, func(ev botclient.Event) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.events = append(b.events, ev)
			return nil
		})
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
	}()
	tb.Cleanup(func() { b.stop(tb) })
	b.mustBeReady(tb)
	return b
}

// stop ends the bot's Run and returns what it returned.
func (b *bot) stop(tb testing.TB) error {
	tb.Helper()
	b.cancel()
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		tb.Errorf("bot %s: Run did not return within 10 s of its cancel", b.name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// mustBeReady waits for the bot's first ready.
func (b *bot) mustBeReady(tb testing.TB) {
	tb.Helper()
	b.waitFor(tb, "its first ready", 10*time.Second, func() bool { return b.readies > 0 })
}

// waitFor polls cond, under the bot's lock, until it holds or the deadline passes (rule 21).
func (b *bot) waitFor(tb testing.TB, what string, d time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for {
		b.mu.Lock()
		ok, done, err := cond(), b.isDone(), b.err
		n := len(b.events)
		b.mu.Unlock()
		if ok {
			return
		}
		if done {
			tb.Fatalf("bot %s: Run ended (%v) before %s", b.name, err, what)
		}
		if time.Now().After(deadline) {
			tb.Fatalf("bot %s: no %s within %s (it has %d events, cursor %d)", b.name, what, d, n, b.cl.Cursor())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *bot) isDone() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// waitSeq waits until the bot has handed the event seq.
func (b *bot) waitSeq(tb testing.TB, seq int64, d time.Duration) {
	tb.Helper()
	b.waitFor(tb, fmt.Sprintf("event at seq %d", seq), d, func() bool {
		return len(b.events) > 0 && b.events[len(b.events)-1].Seq >= seq
	})
}

// handed is a copy of the events handed so far.
func (b *bot) handed() []botclient.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.events)
}

// between is the events handed with after < seq < before, without the notifier's
// (notifierEvent).
func (b *bot) between(after, before int64) []botclient.Event {
	var out []botclient.Event
	for _, e := range b.handed() {
		if e.Seq > after && e.Seq < before && !notifierEvent(e.Type) {
			out = append(out, e)
		}
	}
	return out
}

func (b *bot) readyCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readies
}

// ephemerals is a copy of the ephemeral events of type typ handed so far.
func (b *bot) ephemerals(typ string) []botclient.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ephemeralsLocked(typ)
}

func (b *bot) ephemeralsLocked(typ string) []botclient.Event {
	var out []botclient.Event
	for _, e := range b.ephemeral {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// checkOncePerSeq fails unless the seqs of evs strictly increase: each event once, in order.
func checkOncePerSeq(tb testing.TB, who string, evs []botclient.Event) {
	tb.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq {
			tb.Errorf("%s was handed seq %d after seq %d", who, evs[i].Seq, evs[i-1].Seq)
			return
		}
	}
}

// mustMatchCatchUp checks that the bot was handed, after seq after, exactly the events that the
// REST catch-up of its principal (c) answers: the same seqs, once each, in order. The notifier's
// events are left out on both sides: one may come after the bot's last event and before the
// catch-up's read (tests/notify_test.go holds them).
func mustMatchCatchUp(tb testing.TB, b *bot, c *client, after int64) {
	tb.Helper()
	want, _ := c.mustAllEvents(tb, after)
	want = slices.DeleteFunc(want, func(e event) bool { return notifierEvent(e.Type) })
	var got []botclient.Event
	for _, e := range b.handed() {
		if e.Seq > after && !notifierEvent(e.Type) {
			got = append(got, e)
		}
	}
	checkOncePerSeq(tb, b.name, got)
	gs, ws := make([]int64, len(got)), make([]int64, len(want))
	for i, e := range got {
		gs[i] = e.Seq
	}
	for i, e := range want {
		ws[i] = e.Seq
	}
	if !slices.Equal(gs, ws) {
		missing, extra := diffSeqs(ws, gs), diffSeqs(gs, ws)
		tb.Errorf("bot %s was handed %d events after %d, the REST catch-up has %d; missing %s; extra %s",
			b.name, len(gs), after, len(ws), brief(missing), brief(extra))
		return
	}
	// The same events with the same members: the gateway is the push side of the catch-up.
	for i, g := range got {
		if d := eventDiff(g, want[i]); d != "" {
			tb.Errorf("bot %s: the event at seq %d differs from the REST catch-up's: %s", b.name, g.Seq, d)
			return
		}
	}
}

// eventDiff says how an event of the gateway differs from the same event of the REST catch-up.
func eventDiff(g botclient.Event, r event) string {
	var data any
	if err := json.Unmarshal(g.Data, &data); err != nil {
		return "data: " + err.Error()
	}
	created, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
	switch {
	case g.Type != r.Type:
		return fmt.Sprintf("type %q, REST %q", g.Type, r.Type)
	case g.SpaceID != r.SpaceID || g.ChannelID != r.ChannelID || g.ThreadID != r.ThreadID:
		return fmt.Sprintf("scope %s/%s/%s, REST %s/%s/%s", g.SpaceID, g.ChannelID, g.ThreadID, r.SpaceID, r.ChannelID, r.ThreadID)
	case err != nil || !g.CreatedAt.Equal(created):
		return fmt.Sprintf("created_at %s, REST %s", g.CreatedAt.Format(time.RFC3339Nano), r.CreatedAt)
	case !sameJSON(data, any(r.Data)):
		return fmt.Sprintf("data %s, REST %s", truncate(jsonText(data), 200), truncate(jsonText(r.Data), 200))
	}
	return ""
}

// diffSeqs is the seqs of a that b lacks.
func diffSeqs(a, b []int64) []int64 {
	in := make(map[int64]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	var out []int64
	for _, s := range a {
		if !in[s] {
			out = append(out, s)
		}
	}
	return out
}

func brief(seqs []int64) string {
	if len(seqs) > 10 {
		return fmt.Sprintf("%v… (%d)", seqs[:10], len(seqs))
	}
	return fmt.Sprint(seqs)
}

// wsFrame is one gateway frame as a raw connection reads it.
type wsFrame struct {
	Op string          `json:"op"`
	D  json.RawMessage `json:"d"`
}

// rawConn is a gateway connection that does only what the test says.
type rawConn struct {
	ws *websocket.Conn
	// err is what ended the last read.
	err error
	// presence makes next return presence.updated events; by default it skips them, as it
	// skips heartbeat.ack: people come and go while a test looks at something else.
	presence bool
}

// dialOptions shape a raw connection.
type dialOptions struct {
	header http.Header
	// rcvbuf sets the socket's receive buffer before it connects, so that a connection that
	// stops reading fills up after kilobytes, not megabytes.
	rcvbuf int
}

// dialGateway opens a raw connection; the answer of a refused handshake comes back with the
// error.
func dialGateway(tb testing.TB, base string, o dialOptions) (*rawConn, *http.Response, error) {
	tb.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	if o.rcvbuf > 0 {
		d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, o.rcvbuf)
			})
			return errors.Join(err, serr)
		}}
		hc.Transport = &http.Transport{DialContext: d.DialContext}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, gatewayURL(base), &websocket.DialOptions{HTTPClient: hc, HTTPHeader: o.header})
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(8 << 20)
	tb.Cleanup(func() { ws.CloseNow() })
	return &rawConn{ws: ws}, resp, nil
}

// mustDialGateway opens a raw connection and reads its hello.
func mustDialGateway(tb testing.TB, base string, o dialOptions) *rawConn {
	tb.Helper()
	rc, resp, err := dialGateway(tb, base, o)
	if err != nil {
		status := "no answer"
		if resp != nil {
			status = resp.Status
		}
		tb.Fatalf("dial the gateway at %s: %v (%s)", base, err, status)
	}
	rc.mustExpect(tb, "hello")
	return rc
}

// mustIdentifyRaw opens a raw connection, identifies with token (and the cursor when given) and
// reads up to catchup.complete; it returns the connection and the frames of the catch-up.
func mustIdentifyRaw(tb testing.TB, base, token string, cursor *int64, o dialOptions) (*rawConn, []wsFrame) {
	tb.Helper()
	rc := mustDialGateway(tb, base, o)
	d := map[string]any{"token": token}
	if cursor != nil {
		d["cursor"] = *cursor
	}
	rc.mustSend(tb, "identify", d)
	rc.mustExpect(tb, "ready")
	var replay []wsFrame
	for {
		f := rc.mustNext(tb, 10*time.Second)
		if f.Op == "catchup.complete" {
			return rc, replay
		}
		replay = append(replay, f)
	}
}

func (rc *rawConn) mustSend(tb testing.TB, op string, d any) {
	tb.Helper()
	m := map[string]any{"op": op}
	if d != nil {
		m["d"] = d
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	rc.mustWrite(tb, websocket.MessageText, b)
}

func (rc *rawConn) mustWrite(tb testing.TB, typ websocket.MessageType, b []byte) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rc.ws.Write(ctx, typ, b); err != nil {
		tb.Fatalf("write a %d-byte frame: %v", len(b), err)
	}
}

// next reads one frame that is not a heartbeat.ack within d.
func (rc *rawConn) next(d time.Duration) (wsFrame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		_, b, err := rc.ws.Read(ctx)
		if err != nil {
			rc.err = err
			return wsFrame{}, err
		}
		var f wsFrame
		if err := json.Unmarshal(b, &f); err != nil {
			return wsFrame{}, fmt.Errorf("the server sent %q, not a frame", truncate(string(b), 200))
		}
		if f.Op != "heartbeat.ack" && (rc.presence || !isPresence(f)) {
			return f, nil
		}
	}
}

// isPresence reports whether f is a presence.updated event.
func isPresence(f wsFrame) bool {
	var e struct {
		Type string `json:"type"`
	}
	return f.Op == "event" && json.Unmarshal(f.D, &e) == nil && e.Type == "presence.updated"
}

func (rc *rawConn) mustNext(tb testing.TB, d time.Duration) wsFrame {
	tb.Helper()
	f, err := rc.next(d)
	if err != nil {
		tb.Fatalf("read a frame: %v", err)
	}
	return f
}

func (rc *rawConn) mustExpect(tb testing.TB, op string) json.RawMessage {
	tb.Helper()
	f := rc.mustNext(tb, 10*time.Second)
	if f.Op != op {
		tb.Fatalf("the server sent %s %s, want %s", f.Op, truncate(string(f.D), 300), op)
	}
	return f.D
}

// closeCode reads until the server closes the connection and returns its close code (-1 when
// it sent none) and the frames read on the way.
func (rc *rawConn) closeCode(d time.Duration) (int, []wsFrame) {
	var frames []wsFrame
	deadline := time.Now().Add(d)
	for {
		f, err := rc.next(time.Until(deadline))
		if err != nil {
			return int(websocket.CloseStatus(err)), frames
		}
		frames = append(frames, f)
	}
}

// tcpProxy forwards TCP connections to a target that can change (a restarted server listens on
// a new port) and can cut every connection at once, as a network drop does.
type tcpProxy struct {
	ln net.Listener

	mu     sync.Mutex
	target string
	conns  map[net.Conn]bool
	cuts   int
}

// mustProxy starts a proxy to the server's public listener.
func mustProxy(tb testing.TB, srv *server) *tcpProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &tcpProxy{ln: ln, conns: map[net.Conn]bool{}}
	p.retarget(srv)
	go p.serve()
	tb.Cleanup(func() {
		ln.Close()
		p.cut()
	})
	return p
}

// url is the proxy's base URL.
func (p *tcpProxy) url() string { return "http://" + p.ln.Addr().String() }

// retarget sends new connections to the server's current public address.
func (p *tcpProxy) retarget(srv *server) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = strings.TrimPrefix(srv.public, "http://")
}

// cut closes every connection open through the proxy, both sides.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	p.cuts++
}

func (p *tcpProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(in)
	}
}

func (p *tcpProxy) forward(in net.Conn) {
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	out, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		in.Close()
		return
	}
	p.mu.Lock()
	p.conns[in], p.conns[out] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	in.Close()
	out.Close()
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}
