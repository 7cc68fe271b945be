// Package gateway is the realtime gateway (see docs/architecture.md, The write path, and docs/gateway.md): the
// sessions of the WebSocket protocol, the hub that fans the event log out to them with a
// permission check per delivery, the one log tail per process that feeds the hub, the presence of
// people online, the signals between the nodes of a cluster, and the close codes.
// docs/gateway.md describes the protocol for client authors.
//
// It must not import net/http or a WebSocket library: the transport (appliance/wstransport) hands it
// each connection as a Transport and it speaks only frames. It writes nothing to the store but
// its node's presence rows (several nodes only), and it never blocks the hub on a connection:
// each connection has a bounded queue, and one that cannot keep up is closed (4014) rather than
// waited for.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// Transport is one WebSocket connection as the adapter hands it over. The gateway calls Read from
// one goroutine and Write, Close and Abort from others; Write is never called concurrently with
// itself.
type Transport interface {
	// Read blocks until the next message and returns it. It returns ErrBinary for a binary
	// message, ErrTooBig for one above the size limit, and any other error once the connection
	// is gone (closed by either side, or broken).
	Read(ctx context.Context) ([]byte, error)
	// Write frames msgs, each as one text message, after the bytes an earlier Write left unsent,
	// and sends them in as few writes to the network as it can. When deadline passes first it
	// returns ErrWouldBlock and keeps what is unsent for the next Write (msgs may be nil, to
	// finish only that); any other error means the connection is gone.
	Write(deadline time.Time, msgs [][]byte) error
	// Close sends a close frame with code and reason, waits briefly for the peer's and releases
	// the connection.
	Close(code CloseCode, reason string) error
	// Abort drops the connection at once, without a close frame.
	Abort()
}

// Errors of Transport.Read that leave the connection to the gateway to close.
var (
	// ErrBinary is a binary message: the protocol is JSON text.
	ErrBinary = errors.New("gateway: binary message")
	// ErrTooBig is a message above the size limit; the transport has sent the close frame 1009.
	ErrTooBig = errors.New("gateway: message too big")
	// ErrWouldBlock is a Write whose deadline passed before everything was sent: the client
	// does not read fast enough. The connection still works.
	ErrWouldBlock = errors.New("gateway: write deadline passed")
)

// Authenticator resolves a bearer token (a session token or an API token) to its actor;
// *identity.Service implements it.
type Authenticator interface {
	// Authenticate returns the actor of token. Errors: unauthenticated.
	Authenticate(ctx context.Context, token string) (kernel.Actor, error)
}

// Preparer is the last step before a personal agent.invocation or interaction.created reaches
// its agent's connection (both get a token signed for that delivery); every other frame is
// shared as it is. *runs.Service implements it.
type Preparer interface {
	// Prepare returns the payload to deliver e with to agent, or deliver false (the run ended,
	// or the agent may no longer read its thread). Errors: internal.
	Prepare(ctx context.Context, agent kernel.Actor, e kernel.LoggedEvent) (payload []byte, deliver bool, err error)
}

// needsPrepare reports whether an event of type typ in scope sc goes through the Preparer on its
// way to actor.
func needsPrepare(p Preparer, actor kernel.Actor, typ string, sc kernel.Scope) bool {
	return p != nil && actor.Kind == kernel.KindAgent && (typ == runs.EvAgentInvocation.Name || typ == runs.EvInteractionCreated.Name) &&
		sc.PrincipalID == actor.ID
}

// preparedFrame is the frame of e for actor after the Preparer, or deliver false.
func preparedFrame(ctx context.Context, p Preparer, actor kernel.Actor, e kernel.LoggedEvent) ([]byte, bool, error) {
	payload, deliver, err := p.Prepare(ctx, actor, e)
	if err != nil || !deliver {
		return nil, false, err
	}
	e.Payload = payload
	return EventFrame(e), true, nil
}

// Log is the read side of the event log; *storage.DB implements it.
type Log interface {
	// EventsAfter reads up to limit committed events with seq > after, in seq order.
	EventsAfter(ctx context.Context, after int64, limit int) ([]kernel.LoggedEvent, error)
	// Head returns the highest committed seq this process knows of, without I/O.
	Head() int64
	// ReadHead returns the highest committed seq as the database has it (another node's
	// commits included).
	ReadHead(ctx context.Context) (int64, error)
	// Changed returns a channel that is closed when the head next advances: after a local
	// commit, or (PostgreSQL) when another node's commit is notified or polled.
	Changed() <-chan struct{}
}

// CatchUp replays the events after a cursor that an actor may see; *catchup.Service implements it
// and its filtering rules are the ones the gateway's catch-up follows.
type CatchUp interface {
	// CatchUp returns up to limit visible events after after. Errors: unauthenticated,
	// cursor_invalid, validation_failed.
	CatchUp(ctx context.Context, actor kernel.Actor, after int64, limit int) (catchup.Page, error)
}

var _ CatchUp = (*catchup.Service)(nil)

// Structure reads channels and threads without authorizing; *chat.Service implements it.
type Structure interface {
	// Channel returns the channel with id. Errors: not_found.
	Channel(ctx context.Context, id kernel.ID) (chat.Channel, error)
	// Thread returns the thread with id (with its channel's kind). Errors: not_found.
	Thread(ctx context.Context, id kernel.ID) (chat.Thread, error)
}

var _ Structure = (*chat.Service)(nil)

// Observer follows the log one event ahead of the hub: the permission cache of authz, which must
// know of a revoke before the hub authorizes the next delivery (see docs/architecture.md, Authorization).
type Observer interface {
	Observe(e kernel.LoggedEvent)
}

// Deps are the ports the gateway uses. Observer may be nil. Signals and Presence connect the
// nodes of a cluster (cluster.mode multi): both or neither; nil on one node, where nothing is
// published and presence stays in memory.
type Deps struct {
	Auth      Authenticator
	Authz     kernel.Authorizer
	Scoper    kernel.Scoper
	CatchUp   CatchUp
	Log       Log
	Structure Structure
	Observer  Observer
	// Consumers keeps the agents' durable cursors; nil: an agent's connection is like a
	// person's (no durable cursor, no ack, no takeover).
	Consumers Consumers
	// Preparer sees each agent.invocation before it reaches its agent (live and in a
	// catch-up): runs adds the invocation token, or holds the event back. nil: none.
	Preparer Preparer
	// Runs reads a run that another node signals a patch of (run.updated); nil: this node's
	// clients see only the patches made on it.
	Runs     RunReader
	Signals  Signals
	Presence PresenceStore
	Clock    kernel.Clock
	Logger   *slog.Logger
	// Watcher is told of each connection, for traces and metrics; nil: none.
	Watcher ConnWatcher
}

// ConnWatcher watches the gateway's connections (appliance/telemetry implements it).
type ConnWatcher interface {
	// Connected is called as a connection is taken over, before hello; ended is called once,
	// when the connection is gone, with the code it was closed with.
	Connected(info ConnInfo) (ended func(code CloseCode))
}

// Config tunes the gateway. DefaultConfig holds the defaults, which the configuration schema shows
// for the settings named in parentheses. A zero value
// turns off what can be off (ReplayBufferEvents, PresenceGrace, RunPatchCoalesce, the connection
// bounds); every other value must be positive, and New refuses the gateway otherwise.
type Config struct {
	// HeartbeatInterval is announced in hello (gateway.heartbeat_interval). A connection
	// silent for one interval gets a heartbeat; silent for 1.5 intervals it is closed (4009).
	HeartbeatInterval time.Duration
	// WriteTimeout bounds each write to a connection (gateway.write_timeout).
	WriteTimeout time.Duration
	// IdentifyTimeout is how long a connection may stay without identify (gateway.identify_timeout).
	IdentifyTimeout time.Duration
	// OutboundQueueMax bounds a connection's queue of frames (sync.outbound_queue_max).
	OutboundQueueMax int
	// ResumeWindow is how long a session outlives its connection for resume.
	ResumeWindow time.Duration
	// TailBatch is how many events the tail reads at once; TailPoll how often it reads
	// without a wake-up.
	TailBatch int
	TailPoll  time.Duration
	// ReplayBufferEvents is how many of the last events the gateway keeps as frames in memory
	// for catch-ups (gateway.replay_buffer_events; 0: none), within
	// replayBufferBytes of frames.
	ReplayBufferEvents int
	// PresenceGrace is how long a person whose last connection went stays online for the
	// others (0: none): a reload or a reconnect does not flap offline → online.
	PresenceGrace time.Duration
	// ConsumerSeenInterval is how often the agents holding a connection are marked seen, in one
	// small write for all of them: well within agent.stall_timeout, so that runs' stall
	// check finds a connected agent alive, and rare enough that an idle instance does not keep
	// its disk awake.
	ConsumerSeenInterval time.Duration
	// RunPatchCoalesce is the window in which a run's patches are merged into one run.updated
	// frame (sync.run_patch_coalesce_interval; 0: none, every patch is a frame).
	RunPatchCoalesce time.Duration
	// Node is this process's id in a cluster (a UUIDv7 new at every start), required with
	// Deps.Signals. PresenceFlushInterval is how often it writes its presence rows
	// (cluster.presence_flush_interval); PresenceTTL how old another node's rows may get
	// before they count as gone (cluster.presence_ttl).
	Node                  kernel.ID
	PresenceFlushInterval time.Duration
	PresenceTTL           time.Duration
	// MaxConnectionsPerPrincipal bounds the identified connections of one principal
	// (gateway.max_connections_per_principal; 0: none); MaxConnectionsPerAddress
	// bounds the connections from one peer address, identified or not
	// (gateway.max_connections_per_address; 0: none). The next one is closed with
	// 4018 (limits.go).
	MaxConnectionsPerPrincipal int
	MaxConnectionsPerAddress   int
}

// DefaultConfig returns the gateway's defaults; the configuration schema takes its defaults
// of the gateway.*, sync.* and cluster.* keys from here.
func DefaultConfig() Config {
	return Config{
		HeartbeatInterval:          30 * time.Second,
		WriteTimeout:               10 * time.Second,
		IdentifyTimeout:            10 * time.Second,
		OutboundQueueMax:           1024,
		ResumeWindow:               5 * time.Minute,
		TailBatch:                  500,
		TailPoll:                   time.Second,
		ReplayBufferEvents:         10000,
		PresenceGrace:              5 * time.Second,
		ConsumerSeenInterval:       30 * time.Second,
		RunPatchCoalesce:           50 * time.Millisecond,
		PresenceFlushInterval:      2 * time.Second,
		PresenceTTL:                10 * time.Second,
		MaxConnectionsPerPrincipal: 32,
		MaxConnectionsPerAddress:   256,
	}
}

// problems lists the values of c that New refuses: one that must be positive and is not, or one
// that may be off and is negative.
func (c Config) problems(cluster bool) []string {
	var out []string
	positive := func(name string, v int64) {
		if v <= 0 {
			out = append(out, name+" must be positive")
		}
	}
	positive("HeartbeatInterval", int64(c.HeartbeatInterval))
	positive("WriteTimeout", int64(c.WriteTimeout))
	positive("IdentifyTimeout", int64(c.IdentifyTimeout))
	positive("OutboundQueueMax", int64(c.OutboundQueueMax))
	positive("ResumeWindow", int64(c.ResumeWindow))
	positive("TailBatch", int64(c.TailBatch))
	positive("TailPoll", int64(c.TailPoll))
	positive("ConsumerSeenInterval", int64(c.ConsumerSeenInterval))
	if cluster {
		positive("PresenceFlushInterval", int64(c.PresenceFlushInterval))
		positive("PresenceTTL", int64(c.PresenceTTL))
	}
	for name, v := range map[string]int64{"ReplayBufferEvents": int64(c.ReplayBufferEvents), "PresenceGrace": int64(c.PresenceGrace),
		"RunPatchCoalesce": int64(c.RunPatchCoalesce), "MaxConnectionsPerPrincipal": int64(c.MaxConnectionsPerPrincipal),
		"MaxConnectionsPerAddress": int64(c.MaxConnectionsPerAddress)} {
		if v < 0 {
			out = append(out, name+" must not be negative (0 turns it off)")
		}
	}
	slices.Sort(out)
	return out
}

// Rate limit of client frames per connection (4008), as Discord's: 120 per 60 seconds, plus the
// heartbeats the configured interval asks for (a client's heartbeat and its answer to the
// server's), so that a short gateway.heartbeat_interval never closes a well-behaved client.
const (
	rateWindow = time.Minute
	rateMax    = 120
)

// ackAllowance is what an agent's consumer may send on top of the limit: its acks, up to two a
// second (the Go client acks once a second at most).
const ackAllowance = 2 * int(rateWindow/time.Second)

func (c Config) frameLimit() int {
	return rateMax + int(2*rateWindow/max(c.HeartbeatInterval, time.Millisecond))
}

// ConnInfo describes a connection for the log, and what the transport learnt with it.
type ConnInfo struct {
	RemoteAddr    string
	CorrelationID string
	// Address is the peer's IP address, by which gateway.max_connections_per_address counts;
	// "" is not counted.
	Address string
	// Credential is a token the upgrade request carried (the console's session cookie, which
	// its script cannot read): an identify without a token identifies with it. "" when none.
	Credential string
}

// Gateway holds the connections and sessions of one process and its hub.
type Gateway struct {
	cfg    Config
	deps   Deps
	log    *slog.Logger
	clock  kernel.Clock
	hub    *hub
	tailer tailState
	runs   *runFanout

	presence *presence
	cluster  *cluster // nil on one node

	mu       sync.Mutex
	conns    map[*conn]struct{}
	sessions map[string]*session
	closing  bool
	drained  chan struct{} // closed when closing and conns is empty
	// perAddress and perPrincipal count the connections under their bounds (limits.go).
	perAddress   map[string]int
	perPrincipal map[kernel.ID]int

	flush     *flusher
	devices   devices
	consumers consumers
}

// session is what resume restores: the principal and its credential, and the focus. It lives in
// this process only (sessions are not stored): a resume that reaches another node or a restarted one gets 4006.
type session struct {
	id    string
	actor kernel.Actor
	// token is the credential the session identified with, kept in memory only, so that a
	// resume re-authenticates: a revoked token or a disabled person cannot resume.
	token string
	focus kernel.ID
	// device is the device_id of identify ("" when none), bound again at every resume.
	device string
	// conn is the connection that holds the session, nil while it waits for a resume since
	// detachedAt.
	conn       *conn
	detachedAt time.Time
}

// New builds the gateway. The hub starts at the log's current head: a client identifying before
// the tail runs replays up to it from the log, and the tail delivers everything after it.
func New(d Deps, cfg Config) *Gateway {
	if d.Auth == nil || d.Authz == nil || d.Scoper == nil || d.CatchUp == nil || d.Log == nil || d.Structure == nil {
		panic("gateway: missing dependency")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if p := cfg.problems(d.Signals != nil || d.Presence != nil); len(p) > 0 {
		panic("gateway: Config: " + strings.Join(p, "; "))
	}
	g := &Gateway{cfg: cfg, deps: d, log: d.Logger, clock: d.Clock,
		conns: map[*conn]struct{}{}, sessions: map[string]*session{}, drained: make(chan struct{}), flush: newFlusher(),
		perAddress: map[string]int{}, perPrincipal: map[kernel.ID]int{}}
	g.hub = newHub(d.Authz, d.Scoper, d.Structure, d.Logger, d.Log.Head())
	g.hub.prepare = d.Preparer
	g.hub.recent = newRecent(g.cfg.ReplayBufferEvents, replayBufferBytes)
	g.presence = newPresence(g.cfg.PresenceGrace)
	g.runs = newRunFanout(g.hub, d.Authz, g.cfg.RunPatchCoalesce)
	if d.Signals != nil || d.Presence != nil {
		if d.Signals == nil || d.Presence == nil || g.cfg.Node.IsZero() {
			panic("gateway: several nodes need Signals, Presence and a Node")
		}
		g.cluster = newCluster(g.cfg.Node, d.Signals, d.Presence, g.cfg.PresenceFlushInterval, g.cfg.PresenceTTL)
		g.presence.onLocal = g.cluster.markDirty
	}
	return g
}

// Serve takes over a freshly upgraded connection: it sends hello and returns at once, leaving the
// connection to a reader goroutine (and a writer goroutine while there is something to write).
// During shutdown the connection is closed with 4013 instead, and one past the bound of its
// address with 4018, before hello.
func (g *Gateway) Serve(t Transport, info ConnInfo) {
	c := newConn(g, t, info)
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		go t.Close(CloseServerRestart, Info(CloseServerRestart).Name)
		return
	}
	if !g.addAddressLocked(c) {
		g.mu.Unlock()
		g.log.Info("gateway: connection refused: too many from its address", "address", info.Address,
			"limit", g.cfg.MaxConnectionsPerAddress, "correlation_id", info.CorrelationID)
		go t.Close(CloseTooManyConnections, "too many connections from this address")
		return
	}
	g.conns[c] = struct{}{}
	g.mu.Unlock()
	if g.deps.Watcher != nil {
		c.watched = g.deps.Watcher.Connected(info)
	}
	c.enqueueControl(helloFrame(g.cfg.HeartbeatInterval))
	go c.readLoop()
}

// Shutdown closes every connection with 4013 (a step of the graceful shutdown, after the HTTP requests) and waits, until ctx ends, for
// them to go; what is left then is dropped. New connections are refused from the first moment.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	if !g.closing {
		g.closing = true
		if len(g.conns) == 0 {
			close(g.drained)
		}
	}
	conns := make([]*conn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		c.closeWith(CloseServerRestart, "")
	}
	// The acks come last: a consumer that acknowledged while its connection closed keeps them.
	defer g.saveAcks(context.WithoutCancel(ctx))
	select {
	case <-g.drained:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	left := len(g.conns)
	for c := range g.conns {
		c.t.Abort()
	}
	g.mu.Unlock()
	if left > 0 {
		g.log.Warn("gateway: connections dropped at the shutdown deadline", "connections", left)
	}
	return nil
}

// PrincipalDisabled closes the connections of a principal that was disabled (4004) and keeps it
// out of the hub. authz's permission cache calls it (OnPrincipalDisabled) when an event or a
// reload disables someone; the hub does the same when it passes the user.updated.
func (g *Gateway) PrincipalDisabled(id kernel.ID) {
	for _, c := range g.hub.expel(id) {
		c.closeWith(CloseAuthFailed, "")
	}
}

// Stats is a snapshot for tests and metrics.
type Stats struct {
	Connections int   // open connections
	Sessions    int   // sessions, attached or waiting for a resume
	Members     int   // principals with an identified connection in the hub
	Position    int64 // the seq the hub has passed
	// PayloadErrors counts the logged events whose payload the hub could not read as their
	// type's (each is logged with its seq and type).
	PayloadErrors int64
	// QueuedFrames is how many frames wait in the connections' queues for their writers.
	QueuedFrames int
}

// Stats returns a snapshot of the gateway's counts.
func (g *Gateway) Stats() Stats {
	g.mu.Lock()
	s := Stats{Connections: len(g.conns), Sessions: len(g.sessions)}
	conns := make([]*conn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		s.QueuedFrames += len(c.queue)
		c.mu.Unlock()
	}
	g.hub.mu.Lock()
	s.Members, s.Position = len(g.hub.members), g.hub.pos
	g.hub.mu.Unlock()
	s.PayloadErrors = g.hub.payloadErrors.Load()
	return s
}

// Heartbeats runs the clock of the connections until ctx ends: it nudges a connection silent for
// one heartbeat interval with a heartbeat, closes one silent for 1.5 intervals (4009) or still
// not identified after gateway.identify_timeout (4003), and forgets sessions whose resume window
// has passed.
func (g *Gateway) Heartbeats(ctx context.Context) error {
	tick := min(max(g.cfg.HeartbeatInterval/4, 10*time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			g.sweep(g.clock.Now())
			g.saveAcks(ctx)
		}
	}
}

func (g *Gateway) sweep(now time.Time) {
	interval := g.cfg.HeartbeatInterval
	g.mu.Lock()
	conns := make([]*conn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	for id, s := range g.sessions {
		if s.conn == nil && now.Sub(s.detachedAt) > g.cfg.ResumeWindow {
			delete(g.sessions, id)
		}
	}
	g.mu.Unlock()
	g.presence.expire(now)
	for _, c := range conns {
		silent := now.Sub(time.Unix(0, c.lastSeen.Load()))
		switch {
		case !c.identified.Load() && now.Sub(c.connectedAt) > g.cfg.IdentifyTimeout:
			c.closeWith(CloseNotAuthenticated, "identify timeout")
		case silent > interval+interval/2:
			c.closeWith(CloseHeartbeatTimeout, "")
		case silent > interval && !c.nudged.Swap(true):
			c.enqueueControl(heartbeatFrame)
		}
	}
}

// newSession registers a session for a freshly identified connection.
func (g *Gateway) newSession(c *conn, actor kernel.Actor, token string) *session {
	s := &session{id: newSessionID(), actor: actor, token: token, conn: c}
	g.mu.Lock()
	g.sessions[s.id] = s
	g.mu.Unlock()
	return s
}

// takeSession hands session id to c for a resume; a connection that still holds it is closed
// with 4006 (the newer connection wins), and took reports that there was one. It returns nil
// when this process holds no such session.
func (g *Gateway) takeSession(id string, c *conn) (s *session, took bool) {
	g.mu.Lock()
	s = g.sessions[id]
	if s == nil {
		g.mu.Unlock()
		return nil, false
	}
	old := s.conn
	s.conn, s.detachedAt = c, time.Time{}
	g.mu.Unlock()
	if old != nil && old != c {
		old.closeWith(CloseSessionInvalid, "session resumed by a newer connection")
	}
	return s, old != nil && old != c
}

// tooMany logs the refusal of c, past the bound of actor's connections, and returns its code.
func (g *Gateway) tooMany(c *conn, actor kernel.Actor) CloseCode {
	g.log.Info("gateway: connection refused: too many of its principal", "principal", actor.ID,
		"limit", g.cfg.MaxConnectionsPerPrincipal, "correlation_id", c.info.CorrelationID)
	return CloseTooManyConnections
}

// dropSession forgets s (a resume whose credential no longer holds).
func (g *Gateway) dropSession(s *session) {
	g.mu.Lock()
	if g.sessions[s.id] == s {
		delete(g.sessions, s.id)
	}
	g.mu.Unlock()
}

// Focused reports whether principal has a connection to this node focused on thread (the
// notifier's Focus: one looking at a thread is not notified of it). Connections to other nodes
// are not known here.
func (g *Gateway) Focused(principal, thread kernel.ID) bool {
	if thread.IsZero() {
		return false
	}
	return g.hub.focusedBy(principal, thread)
}

func (g *Gateway) setFocus(s *session, thread kernel.ID) {
	g.mu.Lock()
	s.focus = thread
	g.mu.Unlock()
}

func (g *Gateway) sessionFocus(s *session) kernel.ID {
	g.mu.Lock()
	defer g.mu.Unlock()
	return s.focus
}

// forget removes c once its reader has ended: from the gateway, from its session (which waits for
// a resume unless code ends it) and from the hub.
func (g *Gateway) forget(c *conn, code CloseCode) {
	g.hub.detach(c)
	g.unbindDevice(c)
	g.unbindConsumer(c)
	g.presence.leave(c, g.clock.Now())
	g.mu.Lock()
	delete(g.conns, c)
	g.releaseLocked(c)
	if s := c.sess; s != nil && s.conn == c {
		if code == 0 || Info(code).KeepsSession {
			s.conn, s.detachedAt = nil, g.clock.Now()
		} else {
			delete(g.sessions, s.id)
		}
	}
	if g.closing && len(g.conns) == 0 {
		select {
		case <-g.drained:
		default:
			close(g.drained)
		}
	}
	g.mu.Unlock()
}

// newSessionID returns an unguessable session id: resume trusts it, together with the credential
// kept in the session.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
