package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
)

// fakeSignals is the channel ephemeral in memory: the test reads what the node published and
// sends what other nodes would.
type fakeSignals struct {
	in chan []byte

	mu   sync.Mutex
	out  [][]byte
	fail error // Publish fails with it while set
}

var _ Signals = (*fakeSignals)(nil)

func (s *fakeSignals) Publish(ctx context.Context, payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.out = append(s.out, append([]byte(nil), payload...))
	return nil
}

func (s *fakeSignals) Received() <-chan []byte { return s.in }

// published returns the payloads published so far, as generic objects.
func (s *fakeSignals) published() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, b := range s.out {
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		out = append(out, m)
	}
	return out
}

// fakePresenceStore is gateway_presence in memory.
type fakePresenceStore struct {
	mu      sync.Mutex
	rows    map[[2]kernel.ID]PresenceRow // (node, principal) → row
	fail    error                        // every method fails with it while set
	flushes int
}

var _ PresenceStore = (*fakePresenceStore)(nil)

func newFakePresenceStore() *fakePresenceStore {
	return &fakePresenceStore{rows: map[[2]kernel.ID]PresenceRow{}}
}

func (s *fakePresenceStore) WritePresence(ctx context.Context, node, principal kernel.ID, n int, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if n <= 0 {
		delete(s.rows, [2]kernel.ID{node, principal})
	} else {
		s.rows[[2]kernel.ID{node, principal}] = PresenceRow{node, principal, n, at}
	}
	return nil
}

func (s *fakePresenceStore) FlushPresence(ctx context.Context, node kernel.ID, counts map[kernel.ID]int, at, stale time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.flushes++
	for k, r := range s.rows {
		if r.UpdatedAt.Before(stale) || (k[0] == node && counts[k[1]] <= 0) {
			delete(s.rows, k)
		}
	}
	for id, n := range counts {
		if n > 0 {
			s.rows[[2]kernel.ID{node, id}] = PresenceRow{node, id, n, at}
		}
	}
	return nil
}

func (s *fakePresenceStore) PresenceRows(ctx context.Context, principal kernel.ID, since time.Time) ([]PresenceRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	var out []PresenceRow
	for _, r := range s.rows {
		if !r.UpdatedAt.Before(since) && (principal.IsZero() || r.Principal == principal) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *fakePresenceStore) DeleteNodePresence(ctx context.Context, node kernel.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	for k := range s.rows {
		if k[0] == node {
			delete(s.rows, k)
		}
	}
	return nil
}

func (s *fakePresenceStore) row(node, principal kernel.ID) (PresenceRow, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[[2]kernel.ID{node, principal}]
	return r, ok
}

func (s *fakePresenceStore) put(r PresenceRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[[2]kernel.ID{r.Node, r.Principal}] = r
}

func (s *fakePresenceStore) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

func (s *fakePresenceStore) flushCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushes
}

// logBuffer collects the gateway's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count is how many lines hold s.
func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// node is a world whose gateway is one node of a cluster on fakes.
type node struct {
	*world
	sig   *fakeSignals
	store *fakePresenceStore
	logs  *logBuffer
	other kernel.ID // another node of the cluster
}

// newNode builds a world whose gateway is a node with fake Signals and presence table, and runs
// its cluster loop until the test ends.
func newNode(t *testing.T, tune ...func(*Config)) *node {
	t.Helper()
	w := newWorld(t, tune...)
	n := &node{world: w, sig: &fakeSignals{in: make(chan []byte, 16)}, store: newFakePresenceStore(), logs: &logBuffer{},
		other: kernel.NewID()}
	single := w.g
	cfg := testConfig(tune...)
	cfg.Node = kernel.NewID()
	w.g = New(Deps{Auth: w.auth, Authz: w.az, Scoper: w.az, CatchUp: catchup.New(catchup.Deps{Log: w.log, Scoper: w.az}), Log: w.log,
		Structure: w.st, Observer: w.obs, Clock: w.clock, Signals: n.sig, Presence: n.store,
		Logger: slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, cfg)
	w.obs.hub = w.g.hub
	single.Shutdown(ctxTimeout(t, time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.g.Cluster(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Cluster: %v", err)
		}
	})
	return n
}

// signal sends a payload as if another node had published it.
func (n *node) signal(payload string) { n.sig.in <- []byte(payload) }

func (n *node) signalJSON(m map[string]any) {
	b, _ := json.Marshal(m)
	n.sig.in <- b
}

// waitPublished waits until a signal of kind about principal has been published and returns it.
func (n *node) waitPublished(kind string, principal kernel.ID, nth int) map[string]any {
	n.t.Helper()
	var got map[string]any
	waitFor(n.t, "a "+kind+" signal", func() bool {
		seen := 0
		for _, m := range n.sig.published() {
			if m["kind"] == kind && m["principal_id"] == string(principal) {
				if seen++; seen == nth {
					got = m
					return true
				}
			}
		}
		return false
	})
	return got
}

func TestClusterSignals(t *testing.T) {
	n := newNode(t, func(c *Config) { c.HeartbeatInterval, c.PresenceFlushInterval = time.Hour, time.Hour })
	ada, bob, owner := n.connect(), n.connect(), n.connect()
	for tok, c := range map[string]*client{"ada": ada, "bob": bob, "owner": owner} {
		c.identify(tok, -1)
		c.catchUp()
	}
	typing := func(thread, from kernel.ID) map[string]any {
		return map[string]any{"kind": "gateway.typing", "node": string(n.other), "thread_id": string(thread), "principal_id": string(from)}
	}
	expectTyping := func(t *testing.T, c *client, thread, from kernel.ID) {
		t.Helper()
		var e struct {
			Seq  *int64            `json:"seq"`
			Type string            `json:"type"`
			Data map[string]string `json:"data"`
		}
		if err := json.Unmarshal(c.expect(OpEvent), &e); err != nil || e.Seq != nil || e.Type != EvTypingStarted.Name ||
			e.Data["thread_id"] != string(thread) || e.Data["principal_id"] != string(from) {
			t.Fatalf("got %+v (%v)", e, err)
		}
	}

	t.Run("typing.start publishes a gateway.typing with the ids only", func(t *testing.T) {
		ada.send(`{"op":"typing.start","d":{"thread_id":"` + string(n.openTh) + `"}}`)
		expectTyping(t, bob, n.openTh, n.ada.ID)
		expectTyping(t, owner, n.openTh, n.ada.ID)
		got := n.waitPublished(signalTyping, n.ada.ID, 1)
		want := map[string]any{"kind": "gateway.typing", "node": string(n.g.cfg.Node), "thread_id": string(n.openTh), "principal_id": string(n.ada.ID)}
		if len(got) != len(want) {
			t.Fatalf("published %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("published %v, want %v", got, want)
			}
		}
	})
	t.Run("typing from another node reaches the local readers of the thread, not the typist", func(t *testing.T) {
		n.signalJSON(typing(n.openTh, n.bob.ID))
		expectTyping(t, ada, n.openTh, n.bob.ID)
		expectTyping(t, owner, n.openTh, n.bob.ID)
		bob.quiet()
	})
	t.Run("typing from another node stays with those who may read the thread here", func(t *testing.T) {
		n.signalJSON(typing(n.shutTh, n.ada.ID))
		expectTyping(t, owner, n.shutTh, n.ada.ID)
		ada.quiet()
		bob.quiet()
	})
	t.Run("a signal of this node is ignored", func(t *testing.T) {
		m := typing(n.openTh, n.bob.ID)
		m["node"] = string(n.g.cfg.Node)
		n.signalJSON(m)
		ada.quiet()
		owner.quiet()
	})
	t.Run("other modules' kinds and a gateway kind this node does not know are ignored quietly", func(t *testing.T) {
		n.signalJSON(map[string]any{"kind": "terminal.host_gone", "node": string(n.other), "host_id": string(kernel.NewID())})
		n.signalJSON(map[string]any{"kind": "gateway.hint", "node": string(n.other), "principal_id": string(n.ada.ID)})
		ada.quiet()
		if c := n.logs.count("malformed"); c != 0 {
			t.Fatalf("%d log records of malformed signals", c)
		}
	})
	t.Run("a malformed payload is dropped with one log record each", func(t *testing.T) {
		bad := []string{
			`not json`,
			`["gateway.typing"]`,
			`{"node":"` + string(n.other) + `"}`,
			`{"kind":"gateway.typing","node":"node-1","thread_id":"` + string(n.openTh) + `","principal_id":"` + string(n.bob.ID) + `"}`,
			`{"kind":"gateway.typing","node":"` + string(n.other) + `","thread_id":"t1","principal_id":"` + string(n.bob.ID) + `"}`,
			`{"kind":"gateway.typing","node":"` + string(n.other) + `","thread_id":"` + string(n.openTh) + `"}`,
			`{"kind":"gateway.presence","node":"` + string(n.other) + `","principal_id":7}`,
			`{"kind":"gateway.presence","node":"` + string(n.other) + `"}`,
		}
		for _, b := range bad {
			n.signal(b)
		}
		waitFor(t, "a log record per malformed payload", func() bool { return n.logs.count("malformed") >= len(bad) })
		n.signalJSON(typing(n.openTh, n.bob.ID)) // the node goes on
		expectTyping(t, ada, n.openTh, n.bob.ID)
		if c := n.logs.count("malformed"); c != len(bad) {
			t.Fatalf("%d log records for %d malformed payloads", c, len(bad))
		}
		if n.logs.count("node-1") != 0 || n.logs.count("not json") != 0 {
			t.Fatal("a log record repeats the payload")
		}
	})
}

func TestClusterPresence(t *testing.T) {
	n := newNode(t, func(c *Config) { c.HeartbeatInterval, c.PresenceFlushInterval = time.Hour, time.Hour })
	ada := n.connect()
	self := n.g.cfg.Node

	t.Run("a person's first connection writes their row at once and tells the other nodes", func(t *testing.T) {
		ada.identify("ada", -1)
		ada.catchUp()
		got := n.waitPublished(signalPresence, n.ada.ID, 1)
		if len(got) != 3 || got["node"] != string(self) {
			t.Fatalf("published %v", got)
		}
		if r, ok := n.store.row(self, n.ada.ID); !ok || r.Connections != 1 {
			t.Fatalf("row %+v, %v", r, ok)
		}
	})
	zed := kernel.NewID() // a person connected to the other node only
	t.Run("a person online on another node is told online here, and is in ready's set", func(t *testing.T) {
		n.store.put(PresenceRow{n.other, zed, 1, n.clock.Now()})
		n.signalJSON(map[string]any{"kind": "gateway.presence", "node": string(n.other), "principal_id": string(zed)})
		waitFor(t, "zed online", func() bool { return slices.Contains(n.g.presence.online(), zed) })
		ada.expectPresence(online(zed))
		bob := n.connect()
		if got := bob.identifyOnline("bob"); !slices.Equal(got, sortedIDs(n.ada.ID, n.bob.ID, zed)) {
			t.Fatalf("online %v", got)
		}
		ada.expectPresence(online(n.bob.ID))
	})
	t.Run("a signal that changes nothing tells nobody", func(t *testing.T) {
		n.signalJSON(map[string]any{"kind": "gateway.presence", "node": string(n.other), "principal_id": string(zed)})
		ada.expectPresence()
	})
	t.Run("gone from the other node, the person goes offline here after the grace period", func(t *testing.T) {
		n.store.WritePresence(context.Background(), n.other, zed, 0, n.clock.Now())
		n.signalJSON(map[string]any{"kind": "gateway.presence", "node": string(n.other), "principal_id": string(zed)})
		waitFor(t, "zed leaving", func() bool {
			n.g.presence.mu.Lock()
			defer n.g.presence.mu.Unlock()
			_, ok := n.g.presence.leaving[zed]
			return ok
		})
		ada.expectPresence()
		n.clock.Advance(5 * time.Second)
		n.g.sweep(n.clock.Now())
		ada.expectPresence(offline(zed))
	})
	t.Run("a person online here and on another node stays online while one is left", func(t *testing.T) {
		n.store.put(PresenceRow{n.other, n.ada.ID, 2, n.clock.Now()})
		n.signalJSON(map[string]any{"kind": "gateway.presence", "node": string(n.other), "principal_id": string(n.ada.ID)})
		waitFor(t, "ada online elsewhere", func() bool {
			n.g.presence.mu.Lock()
			defer n.g.presence.mu.Unlock()
			return n.g.presence.remote[n.ada.ID]
		})
		ada.hangUp()
		n.waitLocal(n.ada.ID, 0)
		n.waitPublished(signalPresence, n.ada.ID, 2)
		if _, ok := n.store.row(self, n.ada.ID); ok {
			t.Fatal("the row of ada's last connection here is still there")
		}
		n.clock.Advance(time.Minute)
		n.g.sweep(n.clock.Now())
		if !slices.Contains(n.g.presence.online(), n.ada.ID) {
			t.Fatal("ada went offline while connected to the other node")
		}
	})
}

func TestClusterFlush(t *testing.T) {
	n := newNode(t, func(c *Config) { c.HeartbeatInterval, c.PresenceFlushInterval = time.Hour, 10*time.Millisecond })
	self := n.g.cfg.Node
	ada := n.connect()
	ada.identify("ada", -1)
	ada.catchUp()
	flushed := func(t *testing.T) {
		t.Helper()
		from := n.store.flushCount()
		waitFor(t, "two flushes", func() bool { return n.store.flushCount() >= from+2 })
	}

	t.Run("every flush writes the node's rows with a fresh time", func(t *testing.T) {
		n.clock.Advance(time.Second)
		flushed(t)
		if r, ok := n.store.row(self, n.ada.ID); !ok || !r.UpdatedAt.Equal(n.clock.Now()) {
			t.Fatalf("row %+v, %v; now %s", r, ok, n.clock.Now())
		}
	})
	crashed := kernel.NewID()
	zed := kernel.NewID()
	t.Run("a flush reads the people of the other nodes", func(t *testing.T) {
		n.store.put(PresenceRow{crashed, zed, 1, n.clock.Now()})
		waitFor(t, "zed online", func() bool { return slices.Contains(n.g.presence.online(), zed) })
		ada.expectPresence(online(zed))
	})
	t.Run("a crashed node's people go offline once its rows are older than the ttl, after the grace", func(t *testing.T) {
		n.clock.Advance(10*time.Second + time.Millisecond)
		flushed(t)
		if _, ok := n.store.row(crashed, zed); ok {
			t.Fatal("the stale row is still there")
		}
		ada.expectPresence()
		n.clock.Advance(5 * time.Second)
		n.g.sweep(n.clock.Now())
		ada.expectPresence(offline(zed))
	})
	t.Run("a failing table is logged once, blocks no connection, and is logged again when it answers", func(t *testing.T) {
		n.store.setFail(errors.New("database on fire"))
		bob := n.connect()
		bob.identify("bob", -1)
		bob.catchUp()
		ada.expectPresence(online(n.bob.ID))
		from := n.logs.count("database on fire")
		time.Sleep(50 * time.Millisecond)
		if c := n.logs.count("database on fire"); c != 1 || from > 1 {
			t.Fatalf("%d log records of the failure", c)
		}
		n.store.setFail(nil)
		waitFor(t, "bob's row", func() bool { _, ok := n.store.row(self, n.bob.ID); return ok })
		waitFor(t, "the recovery's log record", func() bool { return n.logs.count("answers again") == 1 })
	})
}

func TestClusterLeavesItsRowsAtTheEnd(t *testing.T) {
	w := newWorld(t)
	sig, store := &fakeSignals{in: make(chan []byte)}, newFakePresenceStore()
	g := New(Deps{Auth: w.auth, Authz: w.az, Scoper: w.az, CatchUp: catchup.New(catchup.Deps{Log: w.log, Scoper: w.az}), Log: w.log,
		Structure: w.st, Clock: w.clock, Signals: sig, Presence: store}, testConfig(func(c *Config) { c.Node, c.PresenceFlushInterval = kernel.NewID(), time.Hour }))
	other := kernel.NewID()
	store.put(PresenceRow{g.cfg.Node, w.ada.ID, 1, w.clock.Now()})
	store.put(PresenceRow{other, w.bob.ID, 1, w.clock.Now()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Cluster(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := store.row(g.cfg.Node, w.ada.ID); ok {
		t.Fatal("the node's row outlived it")
	}
	if _, ok := store.row(other, w.bob.ID); !ok {
		t.Fatal("the other node's row is gone")
	}
}

func TestNewRefusesHalfACluster(t *testing.T) {
	w := newWorld(t)
	for name, d := range map[string]Deps{
		"signals without presence": {Signals: &fakeSignals{}},
		"presence without signals": {Presence: newFakePresenceStore()},
		"both without a node":      {Signals: &fakeSignals{}, Presence: newFakePresenceStore()},
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			d.Auth, d.Authz, d.Scoper, d.CatchUp, d.Log, d.Structure = w.auth, w.az, w.az, catchup.New(catchup.Deps{Log: w.log, Scoper: w.az}), w.log, w.st
			New(d, testConfig())
		})
	}
}

func TestClusterWritesABurstOfTransitionsInOneFlush(t *testing.T) {
	n := newNode(t, func(c *Config) { c.HeartbeatInterval, c.PresenceFlushInterval = time.Hour, time.Hour })
	self := n.g.cfg.Node
	waitFor(t, "the first flush", func() bool { return n.store.flushCount() == 1 })
	var people []kernel.ID
	n.g.presence.mu.Lock()
	for i := range 20 {
		id := kernel.NewID()
		people = append(people, id)
		n.g.presence.local[id] = i + 1
	}
	n.g.presence.mu.Unlock()
	cl := n.g.cluster
	cl.mu.Lock()
	for _, id := range people {
		cl.dirty[id] = true
	}
	cl.mu.Unlock()
	cl.wake <- struct{}{}
	for _, id := range people {
		n.waitPublished(signalPresence, id, 1)
	}
	if got := n.store.flushCount(); got != 2 {
		t.Fatalf("%d flushes, want the first and one for the burst", got)
	}
	for i, id := range people {
		if r, ok := n.store.row(self, id); !ok || r.Connections != i+1 {
			t.Fatalf("row %+v, %v", r, ok)
		}
	}
}
