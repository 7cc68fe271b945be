package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// fakeTransport is a connection without a network: the test is the client.
type fakeTransport struct {
	in     chan []byte // client → server; closeFromClient closes it
	out    chan []byte // server → client
	closed chan struct{}

	mu     sync.Mutex
	once   sync.Once
	code   CloseCode // 0 while open; -1 when aborted
	reason string
	stall  chan struct{} // while set, Write blocks until it is closed or the deadline passes
	delay  time.Duration // each Write takes this long (a slow but steady reader)
	kept   [][]byte      // frames a Write did not send before its deadline
}

var _ Transport = (*fakeTransport)(nil)

var errTransportClosed = errors.New("fake transport closed")

func newFakeTransport() *fakeTransport {
	return &fakeTransport{in: make(chan []byte, 64), out: make(chan []byte, 100000), closed: make(chan struct{})}
}

func (t *fakeTransport) Read(ctx context.Context) ([]byte, error) {
	select {
	case m, ok := <-t.in:
		if !ok {
			return nil, errTransportClosed
		}
		switch string(m) {
		case "":
			return nil, ErrBinary
		case "TOO BIG":
			return nil, ErrTooBig
		}
		return m, nil
	case <-t.closed:
		return nil, errTransportClosed
	}
}

func (t *fakeTransport) Write(deadline time.Time, msgs [][]byte) error {
	t.mu.Lock()
	kept := t.kept
	t.kept = nil
	t.mu.Unlock()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for i, m := range append(kept, msgs...) {
		if err := t.write(ctx, m); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.mu.Lock()
				t.kept = append([][]byte(nil), append(kept, msgs...)[i:]...)
				t.mu.Unlock()
				return ErrWouldBlock
			}
			return err
		}
	}
	return nil
}

func (t *fakeTransport) write(ctx context.Context, msg []byte) error {
	t.mu.Lock()
	stall, delay := t.stall, t.delay
	t.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if stall != nil {
		select {
		case <-stall:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.closed:
			return errTransportClosed
		}
	}
	select {
	case <-t.closed:
		return errTransportClosed
	default:
	}
	t.out <- append([]byte(nil), msg...)
	return nil
}

func (t *fakeTransport) Close(code CloseCode, reason string) error {
	t.once.Do(func() {
		t.mu.Lock()
		if len(t.kept) > 0 {
			// As the real transport: the close frame would wait behind what is unsent.
			code, reason = -1, ""
		}
		t.code, t.reason = code, reason
		t.mu.Unlock()
		close(t.closed)
	})
	return nil
}

func (t *fakeTransport) Abort() { t.Close(-1, "") }

func (t *fakeTransport) closeCode() CloseCode {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.code
}

func (t *fakeTransport) setStall(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case on && t.stall == nil:
		t.stall = make(chan struct{})
	case !on && t.stall != nil:
		close(t.stall)
		t.stall = nil
	}
}

// fakeLog is an event log in memory, seq = index + 1.
type fakeLog struct {
	mu      sync.Mutex
	events  []kernel.LoggedEvent
	changed chan struct{}
	failing error // EventsAfter fails with it while set
	pruned  int64 // the events up to here were removed by retention
}

var (
	_ Log         = (*fakeLog)(nil)
	_ catchup.Log = (*fakeLog)(nil)
	_ retainedLog = (*fakeLog)(nil)
)

func newFakeLog() *fakeLog { return &fakeLog{changed: make(chan struct{})} }

func (l *fakeLog) EventsAfter(ctx context.Context, after int64, limit int) ([]kernel.LoggedEvent, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing != nil {
		return nil, l.failing
	}
	var out []kernel.LoggedEvent
	for _, e := range l.events {
		if e.Seq > after && e.Seq > l.pruned && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (l *fakeLog) Head() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.events))
}

func (l *fakeLog) ReadHead(ctx context.Context) (int64, error) { return l.Head(), nil }

func (l *fakeLog) RetainedAfter(ctx context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pruned, nil
}

// prune removes the events up to seq from what EventsAfter reads, as retention would.
func (l *fakeLog) prune(seq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruned = seq
}

func (l *fakeLog) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// append logs an event and returns its seq.
func (l *fakeLog) append(typ string, sc kernel.Scope, subject kernel.ID, payload any) int64 {
	b, _ := json.Marshal(payload)
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := int64(len(l.events) + 1)
	l.events = append(l.events, kernel.LoggedEvent{Seq: seq, Type: typ, Scope: sc, SubjectID: subject, Payload: b,
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	close(l.changed)
	l.changed = make(chan struct{})
	return seq
}

// fakeAuthz decides from sets: owners read every non-DM channel; others the channels they were
// granted (a grant on a space covers its non-DM channels). It implements Authorizer and Scoper.
type fakeAuthz struct {
	mu       sync.Mutex
	owners   map[kernel.ID]bool
	channels map[kernel.ID]map[kernel.ID]bool // principal → channel
	spaces   map[kernel.ID]map[kernel.ID]bool // principal → space
	spaceOf  map[kernel.ID]kernel.ID          // channel → space
	dms      map[kernel.ID]bool
	calls    int
	failFor  kernel.ID // Authorize fails with an internal error for this principal
}

var (
	_ kernel.Authorizer = (*fakeAuthz)(nil)
	_ kernel.Scoper     = (*fakeAuthz)(nil)
)

func newFakeAuthz() *fakeAuthz {
	return &fakeAuthz{owners: map[kernel.ID]bool{}, channels: map[kernel.ID]map[kernel.ID]bool{},
		spaces: map[kernel.ID]map[kernel.ID]bool{}, spaceOf: map[kernel.ID]kernel.ID{}, dms: map[kernel.ID]bool{}}
}

func (a *fakeAuthz) grant(p, ch kernel.ID, on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.channels[p] == nil {
		a.channels[p] = map[kernel.ID]bool{}
	}
	a.channels[p][ch] = on
}

func (a *fakeAuthz) canRead(actor kernel.Actor, ch kernel.ID) bool {
	if a.dms[ch] {
		return a.channels[actor.ID][ch]
	}
	return actor.IsOwner || a.channels[actor.ID][ch] || a.spaces[actor.ID][a.spaceOf[ch]]
}

func (a *fakeAuthz) Authorize(ctx context.Context, actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
	kernel.RecordCheck(ctx, action)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if !a.failFor.IsZero() && actor.ID == a.failFor {
		return errors.New("cache exploded")
	}
	ch := r.ChannelID
	if r.Kind == kernel.ResSpace {
		if actor.IsOwner || a.spaces[actor.ID][r.ID] {
			return nil
		}
		for c, ok := range a.channels[actor.ID] {
			if ok && a.spaceOf[c] == r.ID {
				return nil
			}
		}
		return kernel.ErrNotFound
	}
	if !a.canRead(actor, ch) {
		return kernel.ErrNotFound
	}
	return nil
}

func (a *fakeAuthz) Visible(ctx context.Context, actor kernel.Actor, action kernel.Action) (kernel.Visibility, error) {
	kernel.RecordCheck(ctx, action)
	if !actor.Authenticated() {
		return nil, kernel.Errorf(kernel.CodeUnauthenticated, "no principal")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	v := fakeVis{all: actor.IsOwner, channels: map[kernel.ID]bool{}, spaces: map[kernel.ID]bool{}, hidden: map[kernel.ID]bool{}}
	for ch := range a.spaceOf {
		if a.canRead(actor, ch) {
			v.channels[ch] = true
			v.spaces[a.spaceOf[ch]] = true
		} else if actor.IsOwner {
			v.hidden[ch] = true
		}
	}
	for sp, ok := range a.spaces[actor.ID] {
		v.spaces[sp] = v.spaces[sp] || ok
	}
	return v, nil
}

type fakeVis struct {
	all                      bool
	channels, spaces, hidden map[kernel.ID]bool
}

func (v fakeVis) All() bool                 { return v.all }
func (v fakeVis) Space(id kernel.ID) bool   { return v.all || v.spaces[id] }
func (v fakeVis) Channel(id kernel.ID) bool { return v.all && !v.hidden[id] || v.channels[id] }

// fakeAuth knows tokens.
type fakeAuth struct {
	mu     sync.Mutex
	tokens map[string]kernel.Actor
}

func (a *fakeAuth) Authenticate(ctx context.Context, token string) (kernel.Actor, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if act, ok := a.tokens[token]; ok {
		return act, nil
	}
	return kernel.Anonymous, kernel.Errorf(kernel.CodeUnauthenticated, "invalid or expired credentials")
}

func (a *fakeAuth) revoke(token string) {
	a.mu.Lock()
	delete(a.tokens, token)
	a.mu.Unlock()
}

// fakeStructure holds channels and threads.
type fakeStructure struct {
	mu       sync.Mutex
	channels map[kernel.ID]chat.Channel
	threads  map[kernel.ID]chat.Thread
}

func (s *fakeStructure) Channel(ctx context.Context, id kernel.ID) (chat.Channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.channels[id]; ok {
		return c, nil
	}
	return chat.Channel{}, kernel.ErrNotFound
}

func (s *fakeStructure) Thread(ctx context.Context, id kernel.ID) (chat.Thread, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.threads[id]; ok {
		return t, nil
	}
	return chat.Thread{}, kernel.ErrNotFound
}

// fakeObserver records the seqs it saw and, through seen, what the hub had passed meanwhile.
type fakeObserver struct {
	mu   sync.Mutex
	seqs []int64
	hub  *hub
	lag  []int64 // hub position when each event was observed
}

func (o *fakeObserver) Observe(e kernel.LoggedEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seqs = append(o.seqs, e.Seq)
	if o.hub != nil {
		o.lag = append(o.lag, o.hub.Position())
	}
}

// world is a gateway on fakes: an owner, Ada and Bob (people), a bot (agent), one space with an
// open channel (everyone but the bot) and a closed one (Ada only), a DM nobody but Bob is in.
type world struct {
	t        *testing.T
	g        *Gateway
	log      *fakeLog
	az       *fakeAuthz
	auth     *fakeAuth
	st       *fakeStructure
	obs      *fakeObserver
	clock    *kernel.ManualClock
	owner    kernel.Actor
	ada, bob kernel.Actor
	bot      kernel.Actor
	space    kernel.ID
	open     kernel.ID // channel
	shut     kernel.ID // channel
	dm       kernel.ID // channel
	openTh   kernel.ID // thread in open
	shutTh   kernel.ID // thread in shut
	tailCtx  context.Context
	stopTail context.CancelFunc
	tailDone chan error
}

// testConfig is the gateway's defaults with a heartbeat of a second, as tune changes them.
func testConfig(tune ...func(*Config)) Config {
	c := DefaultConfig()
	c.HeartbeatInterval = time.Second
	for _, f := range tune {
		if f != nil {
			f(&c)
		}
	}
	return c
}

func newWorld(t *testing.T, tune ...func(*Config)) *world {
	t.Helper()
	w := &world{t: t, log: newFakeLog(), az: newFakeAuthz(), clock: kernel.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	w.owner = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "olga", IsOwner: true, SessionID: kernel.NewID()}
	w.ada = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "ada", SessionID: kernel.NewID()}
	w.bob = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "bob", SessionID: kernel.NewID()}
	w.bot = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindAgent, Handle: "bot", TokenID: kernel.NewID()}
	w.auth = &fakeAuth{tokens: map[string]kernel.Actor{"owner": w.owner, "ada": w.ada, "bob": w.bob, "bot": w.bot}}
	w.space, w.open, w.shut, w.dm = kernel.NewID(), kernel.NewID(), kernel.NewID(), kernel.NewID()
	w.openTh, w.shutTh = kernel.NewID(), kernel.NewID()
	w.az.owners[w.owner.ID] = true
	for _, ch := range []kernel.ID{w.open, w.shut, w.dm} {
		w.az.spaceOf[ch] = w.space
	}
	w.az.dms[w.dm] = true
	w.az.grant(w.ada.ID, w.open, true)
	w.az.grant(w.bob.ID, w.open, true)
	w.az.grant(w.ada.ID, w.shut, true)
	w.az.grant(w.bob.ID, w.dm, true)
	w.st = &fakeStructure{
		channels: map[kernel.ID]chat.Channel{
			w.open: {ID: w.open, SpaceID: w.space, Kind: chat.KindChannel},
			w.shut: {ID: w.shut, SpaceID: w.space, Kind: chat.KindChannel},
			w.dm:   {ID: w.dm, SpaceID: w.space, Kind: chat.KindDM},
		},
		threads: map[kernel.ID]chat.Thread{
			w.openTh: {ID: w.openTh, ChannelID: w.open, SpaceID: w.space, ChannelKind: chat.KindChannel},
			w.shutTh: {ID: w.shutTh, ChannelID: w.shut, SpaceID: w.space, ChannelKind: chat.KindChannel},
		},
	}
	w.obs = &fakeObserver{}
	cfg := testConfig(tune...)
	w.g = New(Deps{Auth: w.auth, Authz: w.az, Scoper: w.az, CatchUp: catchup.New(catchup.Deps{Log: w.log, Scoper: w.az}), Log: w.log,
		Structure: w.st, Observer: w.obs, Clock: w.clock}, cfg)
	w.obs.hub = w.g.hub
	t.Cleanup(func() {
		w.g.Shutdown(ctxTimeout(t, 5*time.Second))
		w.stopTailIfRunning()
	})
	return w
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// runTail starts the log tail until the test ends.
func (w *world) runTail() {
	w.tailCtx, w.stopTail = context.WithCancel(context.Background())
	w.tailDone = make(chan error, 1)
	go func() { w.tailDone <- w.g.Tail(w.tailCtx) }()
}

func (w *world) stopTailIfRunning() {
	if w.stopTail != nil {
		w.stopTail()
		<-w.tailDone
		w.stopTail = nil
	}
}

// post logs a message in a channel's thread.
func (w *world) post(ch, th kernel.ID, text string) int64 {
	return w.log.append(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: w.space, ChannelID: ch, ThreadID: th}, kernel.NewID(),
		map[string]string{"content": text})
}

// waitHub waits until the hub has passed seq.
func (w *world) waitHub(seq int64) {
	w.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for w.g.hub.Position() < seq {
		if time.Now().After(deadline) {
			w.t.Fatalf("the hub is at %d, want %d", w.g.hub.Position(), seq)
		}
		time.Sleep(time.Millisecond)
	}
}

// client is the test's end of a fake connection.
type client struct {
	t  *testing.T
	w  *world
	tr *fakeTransport
	// presence makes next return presence.updated frames like any other; without it, next and
	// quiet set them aside in aside (most tests are about something else).
	presence bool
	aside    []presenceD
}

// presenceD is the data of a presence.updated.
type presenceD struct {
	PrincipalID kernel.ID `json:"principal_id"`
	Status      string    `json:"status"`
}

// setAside keeps f in aside and reports true when it is a presence.updated.
func (c *client) setAside(f gotFrame) bool {
	if f.Op != OpEvent {
		return false
	}
	var e struct {
		Type string    `json:"type"`
		Data presenceD `json:"data"`
	}
	if json.Unmarshal(f.D, &e) != nil || e.Type != EvPresenceUpdated.Name {
		return false
	}
	c.aside = append(c.aside, e.Data)
	return true
}

func (w *world) connect() *client {
	tr := newFakeTransport()
	w.g.Serve(tr, ConnInfo{RemoteAddr: "test"})
	c := &client{t: w.t, w: w, tr: tr}
	c.expect(OpHello)
	return c
}

func (c *client) send(frame string) { c.tr.in <- []byte(frame) }

func (c *client) sendBinary() { c.tr.in <- []byte{} }

func (t *fakeTransport) tooBig() { t.in <- []byte("TOO BIG") }

// hangUp is the client going away without a close frame.
func (c *client) hangUp() { close(c.tr.in) }

type gotFrame struct {
	Op string          `json:"op"`
	D  json.RawMessage `json:"d"`
}

// next returns the next frame from the server, or fails the test after a while.
func (c *client) next() gotFrame {
	c.t.Helper()
	for {
		f := c.nextFrame()
		if c.presence || !c.setAside(f) {
			return f
		}
	}
}

func (c *client) nextFrame() gotFrame {
	c.t.Helper()
	select {
	case b := <-c.tr.out:
		var f gotFrame
		if err := json.Unmarshal(b, &f); err != nil {
			c.t.Fatalf("the server sent %q: %v", b, err)
		}
		return f
	case <-c.tr.closed:
		select {
		case b := <-c.tr.out:
			var f gotFrame
			_ = json.Unmarshal(b, &f)
			return f
		default:
		}
		c.t.Fatalf("closed with %d while waiting for a frame", c.tr.closeCode())
	case <-time.After(5 * time.Second):
		c.t.Fatal("no frame within 5s")
	}
	return gotFrame{}
}

func (c *client) expect(op string) json.RawMessage {
	c.t.Helper()
	f := c.next()
	if f.Op != op {
		c.t.Fatalf("got %s %s, want %s", f.Op, f.D, op)
	}
	return f.D
}

// expectClose waits for the close and checks its code.
func (c *client) expectClose(want CloseCode) {
	c.t.Helper()
	select {
	case <-c.tr.closed:
	case <-time.After(5 * time.Second):
		c.t.Fatalf("not closed within 5s, want %d", want)
	}
	if got := c.tr.closeCode(); got != want {
		c.t.Fatalf("closed with %d, want %d", got, want)
	}
}

// quiet checks that nothing arrives for a moment.
func (c *client) quiet() {
	c.t.Helper()
	deadline := time.After(30 * time.Millisecond)
	for {
		select {
		case b := <-c.tr.out:
			var f gotFrame
			_ = json.Unmarshal(b, &f)
			if !c.presence && c.setAside(f) {
				continue
			}
			c.t.Fatalf("unexpected frame %s", b)
		case <-deadline:
			return
		}
	}
}

type eventD struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func (c *client) expectEvent() eventD {
	c.t.Helper()
	var e eventD
	if err := json.Unmarshal(c.expect(OpEvent), &e); err != nil {
		c.t.Fatal(err)
	}
	return e
}

type readyD struct {
	SessionID string        `json:"session_id"`
	Principal PrincipalJSON `json:"principal"`
	HeadSeq   int64         `json:"head_seq"`
}

// identify sends identify and reads ready; cursor < 0 sends none.
func (c *client) identify(token string, cursor int64) readyD {
	c.t.Helper()
	if cursor < 0 {
		c.send(`{"op":"identify","d":{"token":"` + token + `"}}`)
	} else {
		b, _ := json.Marshal(map[string]any{"op": "identify", "d": map[string]any{"token": token, "cursor": cursor}})
		c.send(string(b))
	}
	var r readyD
	if err := json.Unmarshal(c.expect(OpReady), &r); err != nil {
		c.t.Fatal(err)
	}
	return r
}

// events reads event frames up to and including catchup.complete and returns their seqs and the
// complete's head_seq.
func (c *client) catchUp() (seqs []int64, head int64) {
	c.t.Helper()
	for {
		f := c.next()
		switch f.Op {
		case OpEvent:
			var e eventD
			_ = json.Unmarshal(f.D, &e)
			seqs = append(seqs, e.Seq)
		case OpCatchupComplete:
			var d struct {
				HeadSeq int64 `json:"head_seq"`
			}
			_ = json.Unmarshal(f.D, &d)
			return seqs, d.HeadSeq
		default:
			c.t.Fatalf("got %s during the catch-up", f.Op)
		}
	}
}
