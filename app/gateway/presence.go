package gateway

import (
	"slices"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// presence knows which people are online: a person is online while at least one
// identified gateway connection of theirs is open, on this node or, with several nodes, on
// another (remote, learned from gateway_presence by the cluster). It tells the connections of
// every other person when someone goes online or offline (presence.updated), hands ready the
// online set, and holds an offline back for the grace period, so that a reload or a reconnect to
// another node does not flap offline → online. Agents are neither counted nor told (agent
// presence comes with the agents).
//
// The told set is what every connection was told: a transition is sent when the person's state
// differs from it, once. Locks: presence.mu before a conn's mu, never the other way round.
type presence struct {
	grace time.Duration
	// onLocal, when set (several nodes), hears of a person's first connection on this node and
	// of their last one gone, under mu: it must not block.
	onLocal func(id kernel.ID)

	mu      sync.Mutex
	conns   map[*conn]kernel.ID     // identified people connections of this node, told of changes
	local   map[kernel.ID]int       // person → connections on this node
	remote  map[kernel.ID]bool      // people online on another node (several nodes only)
	told    map[kernel.ID]bool      // the online set as told to the connections
	leaving map[kernel.ID]time.Time // told online, offline since: told offline after grace
}

func newPresence(grace time.Duration) *presence {
	return &presence{grace: grace, conns: map[*conn]kernel.ID{}, local: map[kernel.ID]int{},
		remote: map[kernel.ID]bool{}, told: map[kernel.ID]bool{}, leaving: map[kernel.ID]time.Time{}}
}

// join counts c, an identified connection of person id, and sends its ready with the online set
// (ready is called under the lock, so that no transition falls between the set and the frames
// that follow it). A connection whose reader has already ended is not counted: its leave has
// passed or will find nothing.
func (p *presence) join(c *conn, id kernel.ID, now time.Time, ready func(online []kernel.ID)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.mu.Lock()
	gone := c.gone
	c.mu.Unlock()
	if !gone {
		if _, dup := p.conns[c]; !dup {
			p.conns[c] = id
			if p.local[id]++; p.local[id] == 1 && p.onLocal != nil {
				p.onLocal(id)
			}
			p.settleLocked(id, now)
		}
	}
	ready(p.onlineLocked())
}

// leave uncounts c; the last connection of a person on this node makes them offline here, told
// after the grace period unless they come back (or are online on another node).
func (p *presence) leave(c *conn, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.conns[c]
	if !ok {
		return
	}
	delete(p.conns, c)
	if p.local[id]--; p.local[id] > 0 {
		return
	}
	delete(p.local, id)
	if p.onLocal != nil {
		p.onLocal(id)
	}
	p.settleLocked(id, now)
}

// setRemote records whether person id is online on another node.
func (p *presence) setRemote(id kernel.ID, on bool, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setRemoteLocked(id, on, now)
}

func (p *presence) setRemoteLocked(id kernel.ID, on bool, now time.Time) {
	if p.remote[id] == on {
		return
	}
	if on {
		p.remote[id] = true
	} else {
		delete(p.remote, id)
	}
	p.settleLocked(id, now)
}

// reconcile replaces the people online on other nodes by online (a flush read the whole table).
func (p *presence) reconcile(online map[kernel.ID]bool, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range p.remote {
		if !online[id] {
			p.setRemoteLocked(id, false, now)
		}
	}
	for id := range online {
		p.setRemoteLocked(id, true, now)
	}
}

// expire tells the offline of the people whose grace period has passed (the heartbeat sweep).
func (p *presence) expire(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range p.leaving {
		p.expireLocked(id, now)
	}
}

// settleLocked compares person id's state with what was told and tells the difference: online at
// once, offline after the grace period.
func (p *presence) settleLocked(id kernel.ID, now time.Time) {
	switch {
	case p.local[id] > 0 || p.remote[id]:
		delete(p.leaving, id)
		if !p.told[id] {
			p.told[id] = true
			p.tellLocked(id, true)
		}
	case p.told[id]:
		if _, ok := p.leaving[id]; !ok {
			p.leaving[id] = now
		}
		p.expireLocked(id, now)
	}
}

func (p *presence) expireLocked(id kernel.ID, now time.Time) {
	since, ok := p.leaving[id]
	if !ok || now.Sub(since) < p.grace {
		return
	}
	delete(p.leaving, id)
	delete(p.told, id)
	p.tellLocked(id, false)
}

// tellLocked sends presence.updated about id to every counted connection but id's own: while a
// person has a connection, they are online, and their ready said so.
func (p *presence) tellLocked(id kernel.ID, online bool) {
	if len(p.conns) == 0 {
		return
	}
	frame := presenceFrame(id, online)
	for c, who := range p.conns {
		if who != id {
			c.offerPresence(frame)
		}
	}
}

// onlineLocked is the online set in id order.
func (p *presence) onlineLocked() []kernel.ID {
	out := make([]kernel.ID, 0, len(p.told))
	for id := range p.told {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// online returns the online set as told, in id order.
func (p *presence) online() []kernel.ID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.onlineLocked()
}

// localCount is how many connections person id has on this node.
func (p *presence) localCount(id kernel.ID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.local[id]
}

// localCounts is a copy of the connections per person on this node.
func (p *presence) localCounts() map[kernel.ID]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[kernel.ID]int, len(p.local))
	for id, n := range p.local {
		out[id] = n
	}
	return out
}
