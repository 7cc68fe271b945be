package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// Signals carries the ephemeral signals between the nodes of a cluster (cluster.mode multi):
// on PostgreSQL, NOTIFY and LISTEN on the channel ephemeral. A signal is an id-only wake-up:
// the receiver reads the state it points to from the database or from its own memory. Delivery is
// at most once; a signal lost while a listener reconnects stays lost, and the next presence flush
// repairs what it would have changed.
type Signals interface {
	// Publish sends payload, one small JSON object of ids (never a text), to every node, this
	// one included. Errors: internal (the signal is lost).
	Publish(ctx context.Context, payload []byte) error
	// Received is where the payloads that every node published arrive, this node's own
	// included, in the order the database delivered them. It is never closed.
	Received() <-chan []byte
}

// PresenceRow is one row of the shared presence table: Principal has Connections identified
// gateway connections on Node, as of UpdatedAt.
type PresenceRow struct {
	Node        kernel.ID
	Principal   kernel.ID
	Connections int
	UpdatedAt   time.Time
}

// PresenceStore is the table of the live people connections of every node (gateway_presence);
// *storage.PresenceStore implements it. Only several nodes use it.
type PresenceStore interface {
	// WritePresence sets node's row of principal: connections > 0 upserts it, updated at at;
	// 0 deletes it. Errors: internal.
	WritePresence(ctx context.Context, node, principal kernel.ID, connections int, at time.Time) error
	// FlushPresence makes node's rows exactly counts (principal → connections > 0), all
	// updated at at, and deletes the rows of every node updated before stale. Errors: internal.
	FlushPresence(ctx context.Context, node kernel.ID, counts map[kernel.ID]int, at, stale time.Time) error
	// PresenceRows returns the rows updated at or after since: those of principal, or every
	// one when principal is NilID. Errors: internal.
	PresenceRows(ctx context.Context, principal kernel.ID, since time.Time) ([]PresenceRow, error)
	// DeleteNodePresence deletes node's rows (an orderly shutdown). Errors: internal.
	DeleteNodePresence(ctx context.Context, node kernel.ID) error
}

// Kinds of the gateway's signals; other modules' kinds have other prefixes and are left alone.
const (
	signalPrefix   = "gateway."
	signalTyping   = "gateway.typing"   // thread_id, principal_id: typing.started on the thread
	signalPresence = "gateway.presence" // principal_id: their connections on the sender changed
	signalDevice   = "gateway.device"   // principal_id, device_id, binding_id: a newer binding
	signalConsumer = "gateway.consumer" // principal_id, binding_id: an agent's newer consumer
	signalRun      = "gateway.run"      // run_id, version: a patch of the run is stored
)

// signal is the payload of a gateway signal: its kind, the node that sent it and the ids of its
// kind, never content: the receiving node reads the state from the database.
type signal struct {
	Kind        string    `json:"kind"`
	Node        kernel.ID `json:"node"`
	ThreadID    kernel.ID `json:"thread_id,omitempty"`
	PrincipalID kernel.ID `json:"principal_id,omitempty"`
	DeviceID    string    `json:"device_id,omitempty"`
	BindingID   kernel.ID `json:"binding_id,omitempty"`
	RunID       kernel.ID `json:"run_id,omitempty"`
	Version     int       `json:"version,omitempty"`
}

// cluster is the gateway's side of several nodes: it publishes typing and the local presence
// transitions, writes the node's presence rows, reads the others', and acts on their signals.
// One goroutine (Gateway.Cluster) does all of it, so nothing here ever blocks a connection.
type cluster struct {
	node  kernel.ID
	sig   Signals
	store PresenceStore
	flush time.Duration
	ttl   time.Duration

	mu    sync.Mutex
	dirty map[kernel.ID]bool // people whose row must be written at once
	wake  chan struct{}      // one token: dirty has entries
	out   chan []byte        // signals to publish; full: dropped (at most once)

	failing bool // the last write or read of the table failed (logged once per outage)
}

// publishQueue bounds the signals waiting to be published.
const publishQueue = 256

func newCluster(node kernel.ID, sig Signals, store PresenceStore, flush, ttl time.Duration) *cluster {
	return &cluster{node: node, sig: sig, store: store, flush: flush, ttl: ttl,
		dirty: map[kernel.ID]bool{}, wake: make(chan struct{}, 1), out: make(chan []byte, publishQueue)}
}

// markDirty asks for person id's row to be written; the presence calls it under its lock.
func (cl *cluster) markDirty(id kernel.ID) {
	cl.mu.Lock()
	cl.dirty[id] = true
	cl.mu.Unlock()
	select {
	case cl.wake <- struct{}{}:
	default:
	}
}

func (cl *cluster) takeDirty() []kernel.ID {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	out := make([]kernel.ID, 0, len(cl.dirty))
	for id := range cl.dirty {
		out = append(out, id)
	}
	clear(cl.dirty)
	return out
}

// publish queues a signal of this node for the cluster goroutine; it never blocks (a full
// queue drops it: signals are at most once).
func (cl *cluster) publish(s signal) {
	s.Node = cl.node
	b, err := json.Marshal(s)
	if err != nil {
		panic("gateway: encode a signal: " + err.Error())
	}
	select {
	case cl.out <- b:
	default:
	}
}

// Cluster runs the gateway's side of several nodes until ctx ends (cluster.mode multi; the
// appliance starts it only then): every PresenceFlushInterval it writes this node's presence
// rows and reads the whole table again (a crashed node's rows age out after PresenceTTL, and its
// people go offline); it writes a person's row at once when their first connection on this node
// comes or their last one goes, and publishes gateway.presence; it publishes typing; and it acts
// on the other nodes' signals. A failed write or read is logged and never blocks a connection. At
// the end it deletes this node's rows. Without Signals it waits for ctx.
func (g *Gateway) Cluster(ctx context.Context) (err error) {
	cl := g.cluster
	if cl == nil {
		<-ctx.Done()
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("gateway cluster: panic: %v\n%s", p, debug.Stack())
		}
	}()
	g.log.Info("gateway: several nodes", "node", cl.node, "presence_flush_interval", cl.flush, "presence_ttl", cl.ttl)
	t := time.NewTicker(cl.flush)
	defer t.Stop()
	g.flushPresence(ctx)
	for {
		select {
		case <-ctx.Done():
			g.leaveCluster(ctx)
			return nil
		case <-t.C:
			g.flushPresence(ctx)
		case <-cl.wake:
			g.writeDirty(ctx)
		case b := <-cl.out:
			pctx, cancel := context.WithTimeout(ctx, storeTimeout)
			if err := cl.sig.Publish(pctx, b); err != nil && ctx.Err() == nil {
				g.log.Warn("gateway: a signal to the other nodes was lost", "err", err)
			}
			cancel()
		case b := <-cl.sig.Received():
			g.onSignal(ctx, b)
		}
	}
}

// storeTimeout bounds one write or read of the presence table.
const storeTimeout = 5 * time.Second

// flushPresence writes every row of this node with a fresh time, deletes the rows that aged out,
// and takes the people online on other nodes from what is left.
func (g *Gateway) flushPresence(ctx context.Context) {
	cl := g.cluster
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	now := g.clock.Now()
	stale := now.Add(-cl.ttl)
	if !g.isClosing() {
		if err := cl.store.FlushPresence(sctx, cl.node, g.presence.localCounts(), now, stale); err != nil {
			g.storeFailed(ctx, "write this node's presence", err)
			return
		}
	}
	rows, err := cl.store.PresenceRows(sctx, kernel.NilID, stale)
	if err != nil {
		g.storeFailed(ctx, "read the presence of the other nodes", err)
		return
	}
	g.storeAnswered()
	online := map[kernel.ID]bool{}
	for _, r := range rows {
		if r.Node != cl.node && r.Connections > 0 {
			online[r.Principal] = true
		}
	}
	g.presence.reconcile(online, g.clock.Now())
}

// writeDirty writes the rows of the people whose first connection came or last one went, and
// tells the other nodes. Many at once (a node that just started, a burst of reconnects) are
// written by one flush of all the node's rows rather than a transaction each. During the
// shutdown it writes nothing: the node's rows go at once at the end, and the others learn it at
// their next flush, after which their grace period gives the people time to reconnect elsewhere
// without going offline.
func (g *Gateway) writeDirty(ctx context.Context) {
	cl := g.cluster
	ids := cl.takeDirty()
	if g.isClosing() || len(ids) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if len(ids) > dirtyOneByOne {
		now := g.clock.Now()
		if err := cl.store.FlushPresence(wctx, cl.node, g.presence.localCounts(), now, now.Add(-cl.ttl)); err != nil {
			g.storeFailed(ctx, "write this node's presence", err)
			return
		}
	} else {
		written := ids[:0]
		for _, id := range ids {
			if err := cl.store.WritePresence(wctx, cl.node, id, g.presence.localCount(id), g.clock.Now()); err != nil {
				g.storeFailed(ctx, "write a presence", err)
				continue
			}
			written = append(written, id)
		}
		ids = written
	}
	if len(ids) > 0 {
		g.storeAnswered()
	}
	for _, id := range ids {
		g.publish(wctx, signal{Kind: signalPresence, PrincipalID: id})
	}
}

// dirtyOneByOne is how many people's rows writeDirty writes one by one; more take a flush.
const dirtyOneByOne = 8

// publish sends a signal of this node at once (the cluster goroutine's own signals).
func (g *Gateway) publish(ctx context.Context, s signal) {
	s.Node = g.cluster.node
	b, err := json.Marshal(s)
	if err != nil {
		panic("gateway: encode a signal: " + err.Error())
	}
	if err := g.cluster.sig.Publish(ctx, b); err != nil && ctx.Err() == nil {
		g.log.Warn("gateway: a signal to the other nodes was lost", "kind", s.Kind, "err", err)
	}
}

// leaveCluster deletes this node's rows at the end of an orderly shutdown.
func (g *Gateway) leaveCluster(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := g.cluster.store.DeleteNodePresence(ctx, g.cluster.node); err != nil {
		g.log.Warn("gateway: could not delete this node's presence; it ages out", "err", err)
	}
}

// storeFailed logs the first failure of an outage of the presence table; ctx is the cluster
// goroutine's, whose end (the shutdown) is no failure.
func (g *Gateway) storeFailed(ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	if !g.cluster.failing {
		g.cluster.failing = true
		g.log.Warn("gateway: "+what+" failed; presence across nodes may lag until it works again", "err", err)
	}
}

func (g *Gateway) storeAnswered() {
	if g.cluster.failing {
		g.cluster.failing = false
		g.log.Info("gateway: the presence table answers again")
	}
}

// onSignal acts on one payload of the channel: the gateway's kinds from other nodes; its own
// node's are ignored, as are other modules' kinds. A payload that is not a signal is dropped with
// one log record.
func (g *Gateway) onSignal(ctx context.Context, b []byte) {
	var s signal
	if err := json.Unmarshal(b, &s); err != nil || s.Kind == "" {
		g.malformedSignal(b, "not a JSON object with a kind")
		return
	}
	if !strings.HasPrefix(s.Kind, signalPrefix) {
		return
	}
	node, err := kernel.ParseID(string(s.Node))
	if err != nil {
		g.malformedSignal(b, "node is not an id")
		return
	}
	if node == g.cluster.node {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	switch s.Kind {
	case signalTyping:
		thread, err1 := kernel.ParseID(string(s.ThreadID))
		from, err2 := kernel.ParseID(string(s.PrincipalID))
		if err1 != nil || err2 != nil {
			g.malformedSignal(b, "thread_id and principal_id must be ids")
			return
		}
		th, err := g.deps.Structure.Thread(sctx, thread)
		if err != nil {
			if kernel.CodeOf(err) != kernel.CodeNotFound {
				g.log.Warn("gateway: typing from another node: read the thread", "thread", thread, "err", err)
			}
			return
		}
		g.hub.typing(sctx, th, from)
	case signalPresence:
		id, err := kernel.ParseID(string(s.PrincipalID))
		if err != nil {
			g.malformedSignal(b, "principal_id must be an id")
			return
		}
		rows, err := g.cluster.store.PresenceRows(sctx, id, g.clock.Now().Add(-g.cluster.ttl))
		if err != nil {
			g.storeFailed(ctx, "read a presence", err)
			return
		}
		on := false
		for _, r := range rows {
			on = on || (r.Node != g.cluster.node && r.Principal == id && r.Connections > 0)
		}
		g.presence.setRemote(id, on, g.clock.Now())
	case signalDevice:
		id, err1 := kernel.ParseID(string(s.PrincipalID))
		bound, err2 := kernel.ParseID(string(s.BindingID))
		if err1 != nil || err2 != nil || !validDeviceID(s.DeviceID) {
			g.malformedSignal(b, "principal_id, device_id and binding_id must be ids")
			return
		}
		g.replacedElsewhere(id, s.DeviceID, bound)
	case signalConsumer:
		id, err1 := kernel.ParseID(string(s.PrincipalID))
		bound, err2 := kernel.ParseID(string(s.BindingID))
		if err1 != nil || err2 != nil {
			g.malformedSignal(b, "principal_id and binding_id must be ids")
			return
		}
		g.consumerTakenElsewhere(id, bound)
	case signalRun:
		id, err := kernel.ParseID(string(s.RunID))
		if err != nil || s.Version < 1 {
			g.malformedSignal(b, "run_id must be an id and version positive")
			return
		}
		g.runSignalled(sctx, id, s.Version)
	default:
		// A kind of a newer node: nothing to do here.
	}
}

func (g *Gateway) malformedSignal(b []byte, why string) {
	g.log.Warn("gateway: dropped a malformed signal from the channel ephemeral", "why", why, "bytes", len(b))
}

func (g *Gateway) isClosing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closing
}
