package gateway

import (
	"context"
	"maps"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// Consumers stores the durable cursors of the agents' consumers (agent_consumers; see
// docs/architecture.md, The log as the outbox); *storage.ConsumerStore implements it.
type Consumers interface {
	// AckedSeq returns the agent's cursor: the seq it acknowledged last, or, before its first
	// acknowledgement, the seq just before its creation, so that nothing addressed to it is
	// lost. ok is false when the cursor is not stored yet (an agent created by an older version
	// that never consumed); seq is where it starts all the same. Errors: internal.
	AckedSeq(ctx context.Context, agent kernel.ID) (seq int64, ok bool, err error)
	// SaveAcks raises the cursors of the agents to the seqs given (a lower one is left as it
	// is), in one Unit of Work. Errors: internal.
	SaveAcks(ctx context.Context, acks map[kernel.ID]int64, at time.Time) error
	// SeeConsumers marks the consumers of agents as seen at at (their connection is alive),
	// for runs' stall check. Errors: internal.
	SeeConsumers(ctx context.Context, agents []kernel.ID, at time.Time) error
}

// consumers are the agents' consumers on this node (see docs/gateway.md, Agents: consumers): an agent's gateway connection
// is its consumer. Its replay starts after the seq it acknowledged last, whatever cursor it
// sends, so that an event it received but did not acknowledge (it crashed while working on it)
// comes again: at least once, in order. The agent acknowledges with ack {seq}; the acks are
// saved together every tick of the heartbeat loop and at shutdown, so a crash of the server
// repeats at most the last second's events. One connection per agent consumes: a newer one, on
// any node, closes the older with 4015.
type consumers struct {
	mu    sync.Mutex
	held  map[kernel.ID]binding // agent → its consuming connection
	acked map[kernel.ID]int64   // acks not saved yet
	// seenAt is when the connected agents were last marked seen (SeeConsumers).
	seenAt time.Time
}

// consumerStart returns the cursor an agent's connection replays from, whatever cursor it sent:
// the acknowledged seq, or for an agent that never acknowledged, the seq before its creation (a
// mention made before its first connection is not lost). It notes that cursor for the next
// save, which stores it when it was not yet and marks the agent seen within a tick: a
// connection is a sign of life.
func (g *Gateway) consumerStart(ctx context.Context, agent kernel.ID, head int64) (int64, error) {
	seq, _, err := g.deps.Consumers.AckedSeq(ctx, agent)
	if err != nil {
		return 0, err
	}
	g.consumers.mu.Lock()
	if noted, has := g.consumers.acked[agent]; has {
		seq = max(seq, noted) // acknowledged here, not saved yet
	}
	g.consumers.mu.Unlock()
	seq = min(seq, head)
	g.noteAck(agent, seq)
	return seq, nil
}

// bindConsumer makes c the consumer of agent, closes the connection it takes over on this node
// with 4015, and tells the other nodes.
func (g *Gateway) bindConsumer(c *conn, agent kernel.ID) {
	b := binding{kernel.NewID(), c}
	g.consumers.mu.Lock()
	if g.consumers.held == nil {
		g.consumers.held = map[kernel.ID]binding{}
	}
	old, had := g.consumers.held[agent]
	g.consumers.held[agent] = b
	g.consumers.mu.Unlock()
	c.consumer.Store(true)
	if had && old.c != c {
		old.c.closeWith(CloseConsumerTakenOver, "")
	}
	if g.cluster != nil {
		g.cluster.publish(signal{Kind: signalConsumer, PrincipalID: agent, BindingID: b.id})
	}
}

// unbindConsumer forgets c as its agent's consumer when it still is.
func (g *Gateway) unbindConsumer(c *conn) {
	if !c.consumer.Load() {
		return
	}
	c.mu.Lock()
	agent := c.actor.ID
	c.mu.Unlock()
	g.consumers.mu.Lock()
	if b, ok := g.consumers.held[agent]; ok && b.c == c {
		delete(g.consumers.held, agent)
	}
	g.consumers.mu.Unlock()
	// Save at once: the agent may come back through another node, which reads the table.
	go g.saveAcks(context.Background())
}

// consumerTakenElsewhere closes this node's consumer of agent when another node bound a newer
// one.
func (g *Gateway) consumerTakenElsewhere(agent, newer kernel.ID) {
	g.consumers.mu.Lock()
	b, ok := g.consumers.held[agent]
	if ok && b.id < newer {
		delete(g.consumers.held, agent)
	} else {
		ok = false
	}
	g.consumers.mu.Unlock()
	if ok {
		b.c.closeWith(CloseConsumerTakenOver, "")
	}
}

// noteAck records that agent acknowledged up to seq, for the next save.
func (g *Gateway) noteAck(agent kernel.ID, seq int64) {
	g.consumers.mu.Lock()
	if g.consumers.acked == nil {
		g.consumers.acked = map[kernel.ID]int64{}
	}
	g.consumers.acked[agent] = max(g.consumers.acked[agent], seq)
	g.consumers.mu.Unlock()
}

// saveAcks writes the acks noted since the last save; a failed save keeps them for the next.
func (g *Gateway) saveAcks(ctx context.Context) {
	if g.deps.Consumers == nil {
		return
	}
	// The acks stay noted until they are saved: a consumer that reconnects meanwhile reads the
	// table and the noted ones, and must find them in one of the two.
	g.consumers.mu.Lock()
	acks := maps.Clone(g.consumers.acked)
	now := g.clock.Now()
	var seen []kernel.ID
	if now.Sub(g.consumers.seenAt) >= g.cfg.ConsumerSeenInterval {
		for agent := range g.consumers.held {
			seen = append(seen, agent)
		}
		g.consumers.seenAt = now
	}
	g.consumers.mu.Unlock()
	if len(seen) > 0 {
		if err := g.deps.Consumers.SeeConsumers(ctx, seen, now); err != nil {
			g.log.Warn("gateway: could not mark the connected agents as seen", "agents", len(seen), "err", err)
		}
	}
	if len(acks) == 0 {
		return
	}
	if err := g.deps.Consumers.SaveAcks(ctx, acks, g.clock.Now()); err != nil {
		g.log.Warn("gateway: could not save the agents' acks; they are kept for the next try", "agents", len(acks), "err", err)
		return
	}
	g.consumers.mu.Lock()
	for agent, seq := range acks {
		if g.consumers.acked[agent] <= seq {
			delete(g.consumers.acked, agent)
		}
	}
	g.consumers.mu.Unlock()
}

// ack is the op ack {seq} of an agent's consumer: it acknowledges every event up to seq. A seq
// beyond what the connection was sent is a decode error; a lower one than before changes
// nothing. Other connections may not send it (4001: the op is the consumers').
func (c *conn) ack(ctx context.Context, f Frame) (bool, CloseCode, string) {
	if !c.consumer.Load() {
		return false, CloseUnknownOp, "ack is for an agent's consumer"
	}
	var d ackD
	if err := decodeD(f.D, &d); err != nil || d.Seq == nil || *d.Seq < 0 {
		return false, CloseDecodeError, "ack needs a seq of 0 or more"
	}
	c.mu.Lock()
	sent, agent := max(c.lastSent, c.replayed.Load()), c.actor.ID
	c.mu.Unlock()
	if *d.Seq > sent {
		return false, CloseDecodeError, "ack beyond what was delivered"
	}
	c.g.noteAck(agent, *d.Seq)
	return false, 0, ""
}
