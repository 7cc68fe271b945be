package catchup

import (
	"context"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// Cursors keeps the durable cursors of the agents' consumers (agent_consumers); the gateway uses
// the same table, so an agent may acknowledge over REST what the gateway sent and the other way
// round. *storage.ConsumerStore implements it.
type Cursors interface {
	// AckedSeq returns the agent's cursor: the seq it acknowledged last, or, before its first
	// acknowledgement, the seq just before its creation, so that nothing addressed to it is
	// lost. ok is false when the cursor is not stored yet (an agent created by an older
	// version that never consumed); seq is where it starts all the same.
	AckedSeq(ctx context.Context, agent kernel.ID) (seq int64, ok bool, err error)
	// SaveAcks raises the agents' cursors to the seqs given; a lower seq changes nothing.
	SaveAcks(ctx context.Context, acks map[kernel.ID]int64, at time.Time) error
	// SeeConsumers marks the agents' consumers as seen at at, without moving a cursor.
	SeeConsumers(ctx context.Context, agents []kernel.ID, at time.Time) error
}

// Waker tells when the log's head next advances; *storage.DB implements it.
type Waker interface {
	Changed() <-chan struct{}
}

// Preparer is the last step before an event reaches an agent's consumer: it may rewrite the
// payload (runs adds the invocation token to agent.invocation) or hold the event back (deliver
// false: the run ended, or the agent may no longer read its thread). *runs.Service implements
// it.
type Preparer interface {
	// Prepare returns the payload to deliver e with to agent, or deliver false. Errors: internal.
	Prepare(ctx context.Context, agent kernel.Actor, e kernel.LoggedEvent) (payload []byte, deliver bool, err error)
}

// MaxWait bounds a long poll: below the HTTP request timeout (30 s by default), so that a
// poll ends with an answer rather than a timeout.
const MaxWait = 25 * time.Second

// Consumer is an agent's consumer over REST: a long poll of the events after its cursor and an
// acknowledgement that moves the durable cursor. It delivers what CatchUp would (the events the
// agent may see), at least once: a poll without a cursor starts after what the agent
// acknowledged, and a new agent's cursor starts at its creation.
type Consumer struct {
	sync    *Service
	authz   kernel.Authorizer
	cursors Cursors
	wake    Waker
	clock   kernel.Clock
	prepare Preparer
}

// ConsumerDeps is what the REST consumer needs. Prepare (nil: none) sees each event before
// the agent does.
type ConsumerDeps struct {
	Service *Service
	Authz   kernel.Authorizer
	Cursors Cursors
	Wake    Waker
	Clock   kernel.Clock
	Prepare Preparer
}

// NewConsumer returns the REST consumer on the catch-up service.
func NewConsumer(d ConsumerDeps) *Consumer {
	if d.Service == nil || d.Authz == nil || d.Cursors == nil || d.Wake == nil || d.Clock == nil {
		panic("catchup: NewConsumer needs Service, Authz, Cursors, Wake and Clock")
	}
	return &Consumer{sync: d.Service, authz: d.Authz, cursors: d.Cursors, wake: d.Wake, clock: d.Clock, prepare: d.Prepare}
}

// prepared is p with each event passed through the Preparer: rewritten, or left out.
func (c *Consumer) prepared(ctx context.Context, actor kernel.Actor, p Page) (Page, error) {
	if c.prepare == nil {
		return p, nil
	}
	kept := p.Events[:0]
	for _, e := range p.Events {
		payload, deliver, err := c.prepare.Prepare(ctx, actor, e)
		if err != nil {
			return Page{}, err
		}
		if deliver {
			e.Payload = payload
			kept = append(kept, e)
		}
	}
	p.Events = kept
	return p, nil
}

func (c *Consumer) authorize(ctx context.Context, actor kernel.Actor) error {
	return c.authz.Authorize(ctx, actor, ActAgentConsume,
		kernel.Resource{Kind: kernel.ResPrincipal, ID: actor.ID, OwnerID: actor.ID})
}

// Poll returns up to limit events after cursor (nil: after the acknowledged seq; for an agent
// that never acknowledged, from its creation on) that the agent may see. When
// there are none yet it waits up to wait (at most MaxWait) for more. The page's NextAfter is the
// cursor to poll with next and to acknowledge once the events are handled. Errors:
// unauthenticated, forbidden (not an agent), cursor_invalid, validation_failed.
func (c *Consumer) Poll(ctx context.Context, actor kernel.Actor, cursor *int64, wait time.Duration, limit int) (Page, error) {
	if err := c.authorize(ctx, actor); err != nil {
		return Page{}, err
	}
	if wait < 0 || wait > MaxWait {
		return Page{}, kernel.Invalid("wait", "wait must be a duration from 0 to %s", MaxWait)
	}
	var after int64
	if cursor != nil {
		after = *cursor
	} else {
		seq, ok, err := c.cursors.AckedSeq(ctx, actor.ID)
		if err != nil {
			return Page{}, err
		}
		if !ok { // stored from now on
			if err := c.cursors.SaveAcks(ctx, map[kernel.ID]int64{actor.ID: seq}, c.clock.Now()); err != nil {
				return Page{}, err
			}
		}
		after = seq
	}
	// A poll is the agent's sign of life, as a connection is on the gateway.
	if err := c.cursors.SeeConsumers(ctx, []kernel.ID{actor.ID}, c.clock.Now()); err != nil {
		return Page{}, err
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		changed := c.wake.Changed() // before the read: a commit meanwhile is not missed
		p, err := c.sync.CatchUp(ctx, actor, after, limit)
		if err == nil {
			p, err = c.prepared(ctx, actor, p)
		}
		if err != nil || len(p.Events) > 0 || wait == 0 {
			return p, err
		}
		after = p.NextAfter
		select {
		case <-changed:
		case <-deadline.C:
			return p, nil
		case <-ctx.Done():
			return p, nil
		}
	}
}

// Ack moves the agent's durable cursor to seq (a lower seq than before changes nothing).
// Errors: unauthenticated, forbidden (not an agent), validation_failed (seq below 0 or beyond
// the head of the log).
func (c *Consumer) Ack(ctx context.Context, actor kernel.Actor, seq int64) error {
	if err := c.authorize(ctx, actor); err != nil {
		return err
	}
	head, err := c.sync.log.ReadHead(ctx)
	if err != nil {
		return err
	}
	if seq < 0 || seq > head {
		return kernel.Invalid("seq", "seq must be from 0 to the head of the log, %d", head)
	}
	return c.cursors.SaveAcks(ctx, map[kernel.ID]int64{actor.ID: seq}, c.clock.Now())
}
