package gateway

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// fakeConsumers is agent_consumers in memory.
type fakeConsumers struct {
	mu    sync.Mutex
	acked map[kernel.ID]int64
	seen  map[kernel.ID]time.Time
	// created is the seq before each agent's creation: where a cursor not stored yet starts.
	created map[kernel.ID]int64
	// saves counts the saves of each agent's cursor, each a sign of life.
	saves map[kernel.ID]int
}

func (f *fakeConsumers) AckedSeq(_ context.Context, agent kernel.ID) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq, ok := f.acked[agent]; ok {
		return seq, true, nil
	}
	return f.created[agent], false, nil
}

func (f *fakeConsumers) createdAt(agent kernel.ID, seq int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.created == nil {
		f.created = map[kernel.ID]int64{}
	}
	f.created[agent] = seq
}

func (f *fakeConsumers) SaveAcks(_ context.Context, acks map[kernel.ID]int64, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.saves == nil {
		f.saves = map[kernel.ID]int{}
	}
	for a, s := range acks {
		f.acked[a] = max(f.acked[a], s)
		f.saves[a]++
	}
	return nil
}

func (f *fakeConsumers) savesOf(agent kernel.ID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saves[agent]
}

func (f *fakeConsumers) get(agent kernel.ID) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.acked[agent]
	return s, ok
}

func consumerWorld(t *testing.T) (*world, *fakeConsumers) {
	w := newWorld(t, func(c *Config) { c.HeartbeatInterval = time.Hour })
	fc := &fakeConsumers{acked: map[kernel.ID]int64{}}
	w.g.deps.Consumers = fc
	w.az.grant(w.bot.ID, w.open, true)
	w.runTail()
	return w, fc
}

func TestConsumer(t *testing.T) {
	w, fc := consumerWorld(t)
	for i := range 3 {
		w.post(w.open, w.openTh, fmt.Sprint("before ", i))
	}
	w.waitHub(3)

	fc.createdAt(w.bot.ID, 1) // the bot came after the first message

	first := w.connect()
	first.identify("bot", 3) // its own cursor, the head, does not count
	if seqs, head := first.catchUp(); !slices.Equal(seqs, []int64{2, 3}) || head != 3 {
		t.Fatalf("a new consumer replayed %v up to %d, want what came since its creation, [2 3], up to the head 3", seqs, head)
	}
	w.g.saveAcks(context.Background())
	if seq, ok := fc.get(w.bot.ID); !ok || seq != 1 {
		t.Fatalf("a new consumer's stored cursor is %d (%v), want 1, where it started", seq, ok)
	}
	a := w.post(w.open, w.openTh, "one")
	b := w.post(w.open, w.openTh, "two")
	first.expectEvent()
	first.expectEvent()
	first.send(fmt.Sprintf(`{"op":"ack","d":{"seq":%d}}`, a))
	waitFor(t, "the ack", func() bool {
		w.g.saveAcks(context.Background())
		seq, _ := fc.get(w.bot.ID)
		return seq == a
	})

	t.Run("a newer connection takes the consumer over, and replays what was not acknowledged", func(t *testing.T) {
		second := w.connect()
		second.identify("bot", b) // the cursor of an agent is the acknowledged seq, not its own
		first.expectClose(CloseConsumerTakenOver)
		if seqs, _ := second.catchUp(); len(seqs) != 1 || seqs[0] != b {
			t.Fatalf("replayed %v, want [%d] (delivered but not acknowledged)", seqs, b)
		}
		second.send(fmt.Sprintf(`{"op":"ack","d":{"seq":%d}}`, b+100))
		second.expectClose(CloseDecodeError) // beyond what it was sent
	})
	t.Run("an ack of a lower seq changes nothing", func(t *testing.T) {
		c := w.connect()
		c.identify("bot", -1)
		c.catchUp()
		c.send(fmt.Sprintf(`{"op":"ack","d":{"seq":%d}}`, b))
		c.send(`{"op":"ack","d":{"seq":1}}`)
		waitFor(t, "the acks", func() bool {
			w.g.saveAcks(context.Background())
			seq, _ := fc.get(w.bot.ID)
			return seq == b
		})
		c.quiet()
	})
	t.Run("a connection is saved as a sign of life at the next save, without an ack", func(t *testing.T) {
		n := fc.savesOf(w.bot.ID)
		c := w.connect()
		c.identify("bot", -1)
		c.catchUp()
		w.g.saveAcks(context.Background())
		if fc.savesOf(w.bot.ID) != n+1 {
			t.Fatalf("%d saves after the connection, want %d", fc.savesOf(w.bot.ID), n+1)
		}
		if seq, _ := fc.get(w.bot.ID); seq != b {
			t.Fatalf("the save moved the cursor to %d, want %d", seq, b)
		}
		c.quiet()
	})
	t.Run("a connected agent is marked seen without acking, at most once an interval", func(t *testing.T) {
		w.clock.Advance(2 * w.g.cfg.ConsumerSeenInterval)
		w.g.saveAcks(context.Background())
		at := fc.seenAt(w.bot.ID)
		if !at.Equal(w.clock.Now()) {
			t.Fatalf("seen at %v, want %v", at, w.clock.Now())
		}
		w.clock.Advance(w.g.cfg.ConsumerSeenInterval / 2)
		w.g.saveAcks(context.Background())
		if got := fc.seenAt(w.bot.ID); !got.Equal(at) {
			t.Fatalf("seen again within the interval: %v", got)
		}
	})

	t.Run("a person's connection may not ack", func(t *testing.T) {
		c := w.connect()
		c.identify("ada", -1)
		c.catchUp()
		c.send(`{"op":"ack","d":{"seq":1}}`)
		c.expectClose(CloseUnknownOp)
	})
	t.Run("the acks are saved at shutdown", func(t *testing.T) {
		c := w.connect()
		c.identify("bot", -1)
		c.catchUp()
		last := w.post(w.open, w.openTh, "last")
		c.expectEvent()
		c.send(fmt.Sprintf(`{"op":"ack","d":{"seq":%d}}`, last))
		time.Sleep(50 * time.Millisecond) // the reader takes the ack
		if err := w.g.Shutdown(ctxTimeout(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if seq, _ := fc.get(w.bot.ID); seq != last {
			t.Fatalf("saved %d at shutdown, want %d", seq, last)
		}
	})
}

func TestConsumerTakenOverOnAnotherNode(t *testing.T) {
	n := newNode(t, func(c *Config) { c.HeartbeatInterval, c.PresenceFlushInterval = time.Hour, time.Hour })
	n.g.deps.Consumers = &fakeConsumers{acked: map[kernel.ID]int64{}}
	c := n.connect()
	c.identify("bot", -1)
	c.catchUp()
	got := n.waitPublished(signalConsumer, n.bot.ID, 1)
	if got["binding_id"] == "" || got["node"] != string(n.g.cfg.Node) {
		t.Fatalf("published %v", got)
	}
	signal := func(binding kernel.ID) map[string]any {
		return map[string]any{"kind": "gateway.consumer", "node": string(n.other), "principal_id": string(n.bot.ID),
			"binding_id": string(binding)}
	}
	n.signalJSON(signal("01000000-0000-7000-8000-000000000000")) // older: this node's stays
	n.signalJSON(map[string]any{"kind": "gateway.consumer", "node": string(n.other), "principal_id": "bot"})
	waitFor(t, "the malformed signal's log record", func() bool { return n.logs.count("malformed") == 1 })
	c.quiet()
	n.signalJSON(signal(kernel.NewID()))
	c.expectClose(CloseConsumerTakenOver)
}

func (f *fakeConsumers) SeeConsumers(_ context.Context, agents []kernel.ID, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen = map[kernel.ID]time.Time{}
	}
	for _, a := range agents {
		f.seen[a] = at
	}
	return nil
}

func (f *fakeConsumers) seenAt(agent kernel.ID) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[agent]
}

func TestAConsumerMayAckOnTopOfTheFrameLimit(t *testing.T) {
	w, _ := consumerWorld(t)
	c := w.connect()
	c.identify("bot", -1)
	c.catchUp()
	limit := w.g.cfg.frameLimit() + ackAllowance // 120 + 120: the identify counts too
	for range limit - 2 {
		c.send(`{"op":"ack","d":{"seq":0}}`)
	}
	c.send(`{"op":"heartbeat"}`)
	c.expect(OpHeartbeatAck)
	c.send(`{"op":"ack","d":{"seq":0}}`)
	c.expectClose(CloseRateLimited)
}
