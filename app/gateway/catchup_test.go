package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// readUntil reads a client's frames through its catch-up and live events until it has seen seq
// last, and returns every event seq in the order received.
func (c *client) readUntil(last int64) []int64 {
	c.t.Helper()
	var seqs []int64
	for {
		f := c.next()
		switch f.Op {
		case OpReady, OpCatchupComplete, OpHeartbeatAck:
			continue
		case OpEvent:
			var e eventD
			if err := json.Unmarshal(f.D, &e); err != nil {
				c.t.Fatal(err)
			}
			seqs = append(seqs, e.Seq)
			if e.Seq >= last {
				return seqs
			}
		default:
			c.t.Fatalf("unexpected %s", f.Op)
		}
	}
}

// TestCatchUpToLiveWithoutGapOrDuplicate has clients identify with cursors while events are
// being written: each must get exactly the events it may see after its cursor, in order.
func TestCatchUpToLiveWithoutGapOrDuplicate(t *testing.T) {
	w := newWorld(t)
	w.runTail()
	const total = 1500
	var mu sync.Mutex
	chanOf := map[int64]kernel.ID{}
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		for i := range total {
			ch, th := w.open, w.openTh
			if i%3 == 0 {
				ch, th = w.shut, w.shutTh
			}
			seq := w.post(ch, th, fmt.Sprint(i))
			mu.Lock()
			chanOf[seq] = ch
			mu.Unlock()
			if i%50 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	type run struct {
		token  string
		cursor int64
		c      *client
	}
	var runs []run
	for i := range 12 {
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		token := []string{"ada", "bob", "owner"}[i%3]
		cursor := w.log.Head() / int64(1+rand.IntN(3))
		c := w.connect()
		c.identify(token, cursor)
		runs = append(runs, run{token, cursor, c})
	}
	<-writing
	for _, r := range runs {
		t.Run(fmt.Sprintf("%s from %d", r.token, r.cursor), func(t *testing.T) {
			var want []int64
			mu.Lock()
			for seq := r.cursor + 1; seq <= total; seq++ {
				if r.token != "bob" || chanOf[seq] == w.open {
					want = append(want, seq)
				}
			}
			mu.Unlock()
			if len(want) == 0 {
				return
			}
			r.c.t = t
			got := r.c.readUntil(want[len(want)-1])
			if !slices.Equal(got, want) {
				t.Fatalf("got %d events, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

func firstDiff(a, b []int64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// gatedCatchUp holds the first catch-up call until released.
type gatedCatchUp struct {
	inner    CatchUp
	started  chan struct{}
	release  chan struct{}
	once     sync.Once
	calls    int
	callsMu  sync.Mutex
	afterArg []int64
}

func (g *gatedCatchUp) CatchUp(ctx context.Context, a kernel.Actor, after int64, limit int) (catchup.Page, error) {
	g.once.Do(func() {
		close(g.started)
		<-g.release
	})
	g.callsMu.Lock()
	g.calls++
	g.afterArg = append(g.afterArg, after)
	g.callsMu.Unlock()
	return g.inner.CatchUp(ctx, a, after, limit)
}

// TestCatchUpPinsAgainWhenHeldEventsOverflow holds a catch-up while more live events arrive than
// the queue may hold: the held events are dropped and the replay goes on from the log, still
// without a gap or a duplicate.
func TestCatchUpPinsAgainWhenHeldEventsOverflow(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.OutboundQueueMax, c.ReplayBufferEvents = 4, 0 })
	w.runTail()
	for i := range 10 {
		w.post(w.open, w.openTh, fmt.Sprint(i))
	}
	w.waitHub(10)
	gate := &gatedCatchUp{inner: w.g.deps.CatchUp, started: make(chan struct{}), release: make(chan struct{})}
	w.g.deps.CatchUp = gate
	c := w.connect()
	c.identify("bob", 0)
	<-gate.started
	for i := range 6 {
		w.post(w.open, w.openTh, fmt.Sprint("held ", i))
	}
	w.waitHub(16)
	close(gate.release)
	seqs, head := c.catchUp()
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}; !slices.Equal(seqs, want) || head != 16 {
		t.Fatalf("catch-up %v up to %d", seqs, head)
	}
	if !slices.Equal(gate.afterArg, []int64{0, 10}) {
		t.Fatalf("catch-up read after %v, want [0 10] (a second pin)", gate.afterArg)
	}
	live := w.post(w.open, w.openTh, "live")
	if e := c.expectEvent(); e.Seq != live {
		t.Fatalf("live %d, want %d", e.Seq, live)
	}
}

// TestCatchUpHoldsLiveEventsWhileReplaying holds a catch-up while live events arrive that fit the
// queue: they follow catchup.complete, each once.
func TestCatchUpHoldsLiveEventsWhileReplaying(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.ReplayBufferEvents = 0 })
	w.runTail()
	for i := range 5 {
		w.post(w.open, w.openTh, fmt.Sprint(i))
	}
	w.waitHub(5)
	gate := &gatedCatchUp{inner: w.g.deps.CatchUp, started: make(chan struct{}), release: make(chan struct{})}
	w.g.deps.CatchUp = gate
	c := w.connect()
	c.identify("ada", 2)
	<-gate.started
	w.post(w.open, w.openTh, "held 1")
	w.post(w.shut, w.shutTh, "held 2")
	w.waitHub(7)
	close(gate.release)
	seqs, head := c.catchUp()
	if !slices.Equal(seqs, []int64{3, 4, 5}) || head != 5 {
		t.Fatalf("catch-up %v up to %d", seqs, head)
	}
	for _, want := range []int64{6, 7} {
		if e := c.expectEvent(); e.Seq != want {
			t.Fatalf("held event %d, want %d", e.Seq, want)
		}
	}
	c.quiet()
}

func TestFailedAuthorizeClosesTheRecipientWith4000(t *testing.T) {
	w := newWorld(t)
	w.runTail()
	ada, bob := w.connect(), w.connect()
	ada.identify("ada", -1)
	ada.catchUp()
	bob.identify("bob", -1)
	bob.catchUp()
	w.az.mu.Lock()
	w.az.failFor = w.ada.ID
	w.az.mu.Unlock()
	seq := w.post(w.open, w.openTh, "x")
	ada.expectClose(CloseUnknownError)
	if e := bob.expectEvent(); e.Seq != seq {
		t.Fatalf("got %+v", e)
	}
}

func TestTail(t *testing.T) {
	t.Run("ends with an error on a panic of the cache", func(t *testing.T) {
		w := newWorld(t)
		w.g.deps.Observer = panickingObserver{}
		w.post(w.open, w.openTh, "x")
		err := w.g.Tail(context.Background())
		if err == nil || !strings.Contains(err.Error(), "panic") {
			t.Fatalf("Tail = %v", err)
		}
	})
	t.Run("gives up on a log that keeps failing", func(t *testing.T) {
		defer func(d time.Duration) { tailGiveUp = d }(tailGiveUp)
		tailGiveUp = 200 * time.Millisecond
		w := newWorld(t, func(c *Config) { c.TailPoll = 10 * time.Millisecond })
		w.log.mu.Lock()
		w.log.failing = fmt.Errorf("database gone")
		w.log.mu.Unlock()
		err := w.g.Tail(context.Background())
		if err == nil || !strings.Contains(err.Error(), "database gone") {
			t.Fatalf("Tail = %v", err)
		}
	})
	t.Run("rides out a short failure and reads on", func(t *testing.T) {
		w := newWorld(t, func(c *Config) { c.TailPoll = 10 * time.Millisecond })
		w.log.mu.Lock()
		w.log.failing = fmt.Errorf("database blinked")
		w.log.mu.Unlock()
		w.runTail()
		w.post(w.open, w.openTh, "x")
		time.Sleep(100 * time.Millisecond)
		w.log.mu.Lock()
		w.log.failing = nil
		w.log.mu.Unlock()
		w.waitHub(1)
	})
	t.Run("reads on the poll without a wake-up", func(t *testing.T) {
		w := newWorld(t, func(c *Config) { c.TailPoll = 10 * time.Millisecond })
		w.runTail()
		w.log.mu.Lock()
		w.log.events = append(w.log.events, kernel.LoggedEvent{Seq: 1, Type: "x", Payload: []byte(`{}`)})
		w.log.mu.Unlock()
		w.waitHub(1)
	})
	t.Run("never skips a gap", func(t *testing.T) {
		defer func(d time.Duration) { tailGiveUp = d }(tailGiveUp)
		tailGiveUp = 200 * time.Millisecond
		w := newWorld(t, func(c *Config) { c.TailPoll = 10 * time.Millisecond })
		w.log.mu.Lock()
		w.log.events = append(w.log.events, kernel.LoggedEvent{Seq: 2, Type: "x", Payload: []byte(`{}`)})
		w.log.mu.Unlock()
		err := w.g.Tail(context.Background())
		if err == nil || !strings.Contains(err.Error(), "gap") || w.g.hub.Position() != 0 {
			t.Fatalf("Tail = %v at %d", err, w.g.hub.Position())
		}
	})
	t.Run("observes an event once when its dispatch is retried", func(t *testing.T) {
		w := newWorld(t, func(c *Config) { c.TailPoll = 10 * time.Millisecond })
		missing := kernel.NewID()
		w.log.append(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: w.space, ChannelID: missing}, kernel.NewID(), nil)
		w.runTail()
		time.Sleep(150 * time.Millisecond) // the channel cannot be read: the dispatch fails and is retried
		w.st.mu.Lock()
		w.st.channels[missing] = w.st.channels[w.open]
		w.st.mu.Unlock()
		w.waitHub(1)
		w.obs.mu.Lock()
		defer w.obs.mu.Unlock()
		if !slices.Equal(w.obs.seqs, []int64{1}) {
			t.Fatalf("observed %v", w.obs.seqs)
		}
	})
}

type panickingObserver struct{}

func (panickingObserver) Observe(kernel.LoggedEvent) { panic("cache exploded") }
