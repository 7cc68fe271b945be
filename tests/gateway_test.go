package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	botclient "bothy.dev/bothy/client"
)

// The gateway end to end: well-behaved clients are bots of the client package (they must see
// every event they may see, once and in order, whatever happens to the network or the server);
// misbehaving ones are raw WebSocket connections.

// world is an instance with three people: the owner, alice who may post in the shared channel,
// and bob who may not see it. All three may read the lobby, where fences are posted: the events
// of a connection arrive in seq order, so once a client has the fence, it has everything
// before it that it will ever get.
type world struct {
	in                  *instance
	alice, bob          *client
	aliceU, bobU        user
	sp                  space
	shared, priv, lobby channel
	sharedTh, privTh    threadWithMessage
	lobbyTh             threadWithMessage
}

func mustWorld(tb testing.TB, eng engine, args ...string) *world {
	tb.Helper()
	w := &world{in: mustStartWithOwner(tb, eng, args...)}
	w.aliceU, w.alice = w.in.mustCreateUser(tb, "alice")
	w.bobU, w.bob = w.in.mustCreateUser(tb, "bob")
	w.sp = w.in.owner.mustCreateSpace(tb, "Gateway")
	w.shared = w.in.owner.mustCreateChannel(tb, w.sp.ID, "shared")
	w.priv = w.in.owner.mustCreateChannel(tb, w.sp.ID, "owner-only")
	w.lobby = w.in.owner.mustCreateChannel(tb, w.sp.ID, "lobby")
	w.in.owner.mustGrant(tb, w.shared.ID, w.aliceU.ID, "post")
	w.in.owner.mustGrant(tb, w.lobby.ID, w.aliceU.ID, "post")
	w.in.owner.mustGrant(tb, w.lobby.ID, w.bobU.ID, "post")
	w.sharedTh = w.in.owner.mustCreateThread(tb, w.shared.ID, "Shared", "the shared thread")
	w.privTh = w.in.owner.mustCreateThread(tb, w.priv.ID, "Private", "the owner's thread")
	w.lobbyTh = w.in.owner.mustCreateThread(tb, w.lobby.ID, "Lobby", "fences go here")
	return w
}

// mustFence posts into the lobby and returns the seq of its message.created.
func (w *world) mustFence(tb testing.TB) int64 {
	tb.Helper()
	before := w.in.owner.mustHead(tb)
	m := w.in.owner.mustPost(tb, w.lobbyTh.Thread.ID, "fence")
	// The notifier may append after the fence (a notification of an earlier message): the
	// fence is the one event of the post among the others.
	evs, _ := w.in.owner.mustAllEvents(tb, before)
	evs = slices.DeleteFunc(evs, func(e event) bool { return notifierEvent(e.Type) })
	if len(evs) != 1 || evs[0].Data["id"] != m.ID {
		tb.Fatalf("the post appended %v, not the fence's message.created alone", types(evs))
	}
	return evs[0].Seq
}

// seqOf returns the seq of the first event after after for which match holds.
func seqOf(tb testing.TB, c *client, after int64, what string, match func(event) bool) int64 {
	tb.Helper()
	evs, _ := c.mustAllEvents(tb, after)
	for _, e := range evs {
		if match(e) {
			return e.Seq
		}
	}
	tb.Fatalf("no %s among the %d events after %d", what, len(evs), after)
	return 0
}

// deliveryRow is one row of the delivery table: who sends which request, the
// status it must get, and the events each watcher must be handed, by type and in order.
type deliveryRow struct {
	name   string
	as     string // owner, alice or bob
	method string
	path   string
	body   any
	status int
	want   map[string][]string // watcher → event types; a missing watcher gets nothing
}

func TestGatewayDeliversOnlyToThoseAllowed(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		owner := w.in.owner
		start := owner.mustHead(t)
		clients := map[string]*client{"owner": owner, "alice": w.alice, "bob": w.bob}
		bots := map[string]*bot{}
		for _, name := range []string{"owner", "alice", "bob"} {
			bots[name] = mustStartBot(t, name, w.in.srv.public, clients[name].token, botclient.WithCursor(start))
		}
		shared := w.sharedTh.Message.ID
		both := []string{"message.created"}
		rows := []deliveryRow{
			{name: "the owner's message in the shared channel reaches the owner and alice", as: "owner",
				method: http.MethodPost, path: api("threads", w.sharedTh.Thread.ID, "messages"),
				body: map[string]any{"content": "hello alice"}, status: http.StatusCreated,
				want: map[string][]string{"owner": both, "alice": both}},
			{name: "alice's message in the shared channel reaches the owner and alice", as: "alice",
				method: http.MethodPost, path: api("threads", w.sharedTh.Thread.ID, "messages"),
				body: map[string]any{"content": "hello owner"}, status: http.StatusCreated,
				want: map[string][]string{"owner": both, "alice": both}},
			{name: "a message in the owner's channel reaches only the owner", as: "owner",
				method: http.MethodPost, path: api("threads", w.privTh.Thread.ID, "messages"),
				body: map[string]any{"content": "note to self"}, status: http.StatusCreated,
				want: map[string][]string{"owner": both}},
			{name: "a thread in the shared channel reaches the owner and alice", as: "alice",
				method: http.MethodPost, path: api("channels", w.shared.ID, "threads"),
				body: map[string]any{"title": "New", "content": "a new thread"}, status: http.StatusCreated,
				want: map[string][]string{"owner": {"thread.created", "message.created"}, "alice": {"thread.created", "message.created"}}},
			{name: "a reaction in the shared channel reaches the owner and alice", as: "alice",
				method: http.MethodPut, path: api("messages", shared, "reactions", url.PathEscape("👍")),
				status: http.StatusNoContent,
				want:   map[string][]string{"owner": {"reaction.added"}, "alice": {"reaction.added"}}},
			{name: "a message in the lobby reaches all three", as: "bob",
				method: http.MethodPost, path: api("threads", w.lobbyTh.Thread.ID, "messages"),
				body: map[string]any{"content": "hi all"}, status: http.StatusCreated,
				want: map[string][]string{"owner": both, "alice": both, "bob": both}},
			{name: "a grant to bob on the shared channel reaches the three of them", as: "owner",
				method: http.MethodPost, path: api("channels", w.shared.ID, "grants"),
				body: map[string]any{"principal_id": w.bobU.ID, "level": "view"}, status: http.StatusCreated,
				want: map[string][]string{"owner": {"grant.changed"}, "alice": {"grant.changed"}, "bob": {"grant.changed"}}},
			{name: "from the grant on, the shared channel's messages reach bob", as: "alice",
				method: http.MethodPost, path: api("threads", w.sharedTh.Thread.ID, "messages"),
				body: map[string]any{"content": "welcome bob"}, status: http.StatusCreated,
				want: map[string][]string{"owner": both, "alice": both, "bob": both}},
			{name: "the revoke of bob's grant reaches the owner and alice", as: "owner",
				method: http.MethodDelete, path: api("channels", w.shared.ID, "grants", w.bobU.ID),
				status: http.StatusNoContent,
				want:   map[string][]string{"owner": {"grant.changed"}, "alice": {"grant.changed"}}},
			{name: "after the revoke the shared channel's messages no longer reach bob", as: "alice",
				method: http.MethodPost, path: api("threads", w.sharedTh.Thread.ID, "messages"),
				body: map[string]any{"content": "bye bob"}, status: http.StatusCreated,
				want: map[string][]string{"owner": both, "alice": both}},
		}
		for _, row := range rows {
			ok := t.Run(row.name, func(t *testing.T) {
				before := owner.mustHead(t)
				body := row.body
				if m, ok := body.(map[string]any); ok && row.method == http.MethodPost && m["content"] != nil {
					m["client_msg_id"] = uniqueName("gw")
				}
				clients[row.as].do(t, row.method, row.path, body).want(t, row.status)
				fence := w.mustFence(t)
				for name, b := range bots {
					b.waitSeq(t, fence, 10*time.Second)
					var got []string
					for _, e := range b.between(before, fence) {
						got = append(got, e.Type)
					}
					if !slices.Equal(got, row.want[name]) {
						t.Errorf("%s was handed %v, want %v", name, got, row.want[name])
					}
				}
			})
			if !ok {
				t.FailNow()
			}
		}

		t.Run("typing in the shared thread reaches alice, not bob nor the typist", func(t *testing.T) {
			if err := bots["owner"].cl.StartTyping(t.Context(), w.sharedTh.Thread.ID); err != nil {
				t.Fatal(err)
			}
			bots["alice"].waitFor(t, "typing.started", 10*time.Second, func() bool { return len(bots["alice"].ephemeralsLocked("typing.started")) > 0 })
			fence := w.mustFence(t)
			for _, b := range bots {
				b.waitSeq(t, fence, 10*time.Second)
			}
			typ := bots["alice"].ephemerals("typing.started")[0]
			var d map[string]any
			_ = json.Unmarshal(typ.Data, &d)
			if typ.Type != "typing.started" || typ.Seq != 0 || d["thread_id"] != w.sharedTh.Thread.ID || d["principal_id"] != w.in.me.ID {
				t.Errorf("alice got %s %s", typ.Type, typ.Data)
			}
			for _, name := range []string{"owner", "bob"} {
				if got := bots[name].ephemerals("typing.started"); len(got) != 0 {
					t.Errorf("%s got typing events %v", name, got)
				}
			}
		})

		t.Run("the owner and alice were handed exactly what their REST catch-up answers", func(t *testing.T) {
			mustMatchCatchUp(t, bots["owner"], owner, start)
			mustMatchCatchUp(t, bots["alice"], w.alice, start)
			checkOncePerSeq(t, "bob", bots["bob"].handed())
		})
	})
}

// burst posts n messages into thread from writers goroutines as c, through the client package
// (the document checks of the harness would make the burst slow under -race), and returns the
// ids of those answered with the content each got. It stops early when stop is closed or the
// server is gone. progress counts the answered ones.
func burst(tb testing.TB, c *client, threadID string, n, writers int, stop <-chan struct{}, progress *atomic.Int64) map[string]string {
	var (
		mu    sync.Mutex
		acked = map[string]string{}
		wg    sync.WaitGroup
	)
	poster := botclient.New(c.srv.public, c.token, botclient.WithHTTPClient(httpClient))
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				select {
				case <-stop:
					return
				default:
				}
				content := fmt.Sprintf("burst %d", i)
				m, err := poster.PostMessage(tb.Context(), threadID, content, uniqueName("burst"))
				if err != nil {
					// A kill makes requests fail before the test closes stop.
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Second):
					}
					if c.srv.running() {
						tb.Errorf("post %d: %v", i, err)
					}
					return
				}
				mu.Lock()
				acked[m.ID] = content
				mu.Unlock()
				progress.Add(1)
			}
		}()
	}
	wg.Wait()
	return acked
}

// createdIDs counts the message.created events among evs by message id.
func createdIDs(evs []botclient.Event) map[string]int {
	out := map[string]int{}
	for _, e := range evs {
		if e.Type != "message.created" {
			continue
		}
		var m botclient.Message
		if err := json.Unmarshal(e.Data, &m); err == nil {
			out[m.ID]++
		}
	}
	return out
}

// checkEachOnce fails unless every acknowledged message was handed exactly once.
func checkEachOnce(tb testing.TB, who string, acked map[string]string, handed map[string]int) {
	tb.Helper()
	bad := 0
	for id := range acked {
		if handed[id] != 1 {
			if bad++; bad <= 5 {
				tb.Errorf("%s was handed the message.created of %s %d times", who, id, handed[id])
			}
		}
	}
	if bad > 0 {
		tb.Errorf("%d of %d acknowledged messages were not handed exactly once to %s", bad, len(acked), who)
	}
}

func TestGatewayClientCutDuringABurstGetsEveryEventOnce(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		proxy := mustProxy(t, w.in.srv)
		start := w.in.owner.mustHead(t)
		alice := mustStartBot(t, "alice", proxy.url(), w.alice.token, botclient.WithCursor(start))

		var progress atomic.Int64
		done := make(chan map[string]string)
		go func() { done <- burst(t, w.in.owner, w.sharedTh.Thread.ID, 1000, 4, nil, &progress) }()
		// Two network drops in the middle of the burst.
		for _, at := range []int{200, 600} {
			alice.waitFor(t, fmt.Sprintf("%d events", at), 30*time.Second, func() bool { return len(alice.events) >= at })
			proxy.cut()
		}
		acked := <-done
		if len(acked) != 1000 {
			t.Fatalf("%d of 1000 messages were acknowledged", len(acked))
		}
		fence := w.mustFence(t)
		alice.waitSeq(t, fence, 30*time.Second)

		t.Run("every message reached alice once, in order", func(t *testing.T) {
			checkEachOnce(t, "alice", acked, createdIDs(alice.handed()))
			mustMatchCatchUp(t, alice, w.alice, start)
		})
		t.Run("the client reconnected after each drop", func(t *testing.T) {
			if n := alice.readyCount(); n < 3 {
				t.Errorf("%d readies, want at least 3 (the first and one per drop)", n)
			}
		})
	})
}

func TestGatewayClientSurvivesAKilledServer(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		proxy := mustProxy(t, w.in.srv)
		start := w.in.owner.mustHead(t)
		alice := mustStartBot(t, "alice", proxy.url(), w.alice.token, botclient.WithCursor(start))

		var progress atomic.Int64
		stop := make(chan struct{})
		done := make(chan map[string]string)
		go func() { done <- burst(t, w.in.owner, w.sharedTh.Thread.ID, 100000, 4, stop, &progress) }()
		deadline := time.Now().Add(20 * time.Second)
		for progress.Load() < 300 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		w.in.srv.kill9(t)
		close(stop)
		acked := <-done
		t.Logf("%d messages acknowledged before the kill; the client had %d events", len(acked), len(alice.handed()))
		if len(acked) < 100 {
			t.Fatalf("only %d messages were acknowledged before the kill", len(acked))
		}

		w.in.srv.mustRestart(t)
		proxy.retarget(w.in.srv)
		readiesBefore := alice.readyCount()
		after := w.in.owner.mustPost(t, w.sharedTh.Thread.ID, "after the restart")
		acked[after.ID] = after.Content
		fence := w.mustFence(t)
		alice.waitSeq(t, fence, 30*time.Second)

		t.Run("the client reconnected by itself", func(t *testing.T) {
			if n := alice.readyCount(); n <= readiesBefore {
				t.Errorf("%d readies after the restart, %d before it", n, readiesBefore)
			}
		})
		t.Run("the client ends with every committed event exactly once", func(t *testing.T) {
			mustMatchCatchUp(t, alice, w.alice, start)
			checkEachOnce(t, "alice", acked, createdIDs(alice.handed()))
		})
	})
}

func TestGatewayRevokeStopsDeliveryAtItsSeq(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		start := w.in.owner.mustHead(t)
		alice := mustStartBot(t, "alice", w.in.srv.public, w.alice.token, botclient.WithCursor(start))

		var progress atomic.Int64
		stop := make(chan struct{})
		done := make(chan map[string]string)
		go func() { done <- burst(t, w.in.owner, w.sharedTh.Thread.ID, 100000, 2, stop, &progress) }()
		alice.waitFor(t, "30 events", 20*time.Second, func() bool { return len(alice.events) >= 30 })
		w.in.owner.do(t, http.MethodDelete, api("channels", w.shared.ID, "grants", w.aliceU.ID), nil).want(t, http.StatusNoContent)
		atRevoke := progress.Load()
		deadline := time.Now().Add(20 * time.Second)
		for progress.Load() < atRevoke+50 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		close(stop)
		<-done
		fence := w.mustFence(t)
		alice.waitSeq(t, fence, 20*time.Second)

		revoke := seqOf(t, w.in.owner, start, "revoke of alice's grant", func(e event) bool {
			return e.Type == "grant.changed" && e.Data["principal_id"] == w.aliceU.ID && e.Data["level"] == nil
		})
		later := 0
		for _, e := range w.mustEventsOf(t, start, w.shared.ID) {
			if e.Seq > revoke {
				later++
			}
		}
		if later < 10 {
			t.Fatalf("only %d events of the shared channel came after the revoke: the test proves nothing", later)
		}

		t.Run("nothing of the channel arrives after the revoke's seq", func(t *testing.T) {
			before := 0
			for _, e := range alice.handed() {
				if e.ChannelID != w.shared.ID {
					continue
				}
				if e.Seq > revoke {
					t.Errorf("alice was handed %s at seq %d, after the revoke at %d", e.Type, e.Seq, revoke)
				} else {
					before++
				}
			}
			if before < 30 {
				t.Errorf("alice was handed %d events of the channel before the revoke, want at least 30", before)
			}
			t.Logf("revoke at seq %d; %d events of the channel before it, %d after it", revoke, before, later)
		})
		t.Run("a catch-up from before the revoke returns nothing of the channel", func(t *testing.T) {
			rc, replay := mustIdentifyRaw(t, w.in.srv.public, w.alice.token, &start, dialOptions{})
			defer rc.ws.Close(websocket.StatusNormalClosure, "")
			var got int
			for _, f := range replay {
				var e botclient.Event
				if json.Unmarshal(f.D, &e) == nil && e.ChannelID == w.shared.ID {
					got++
				}
			}
			if got > 0 {
				t.Errorf("the catch-up replayed %d events of a channel alice may no longer read", got)
			}
			if len(replay) == 0 {
				t.Errorf("the catch-up replayed nothing; the lobby's fence at least is alice's")
			}
		})
	})
}

// mustEventsOf is the events of channel after after, as the owner sees them.
func (w *world) mustEventsOf(tb testing.TB, after int64, channelID string) []event {
	tb.Helper()
	evs, _ := w.in.owner.mustAllEvents(tb, after)
	var out []event
	for _, e := range evs {
		if e.ChannelID == channelID {
			out = append(out, e)
		}
	}
	return out
}

func TestGatewayClosesASlowConsumerAlone(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		// A queue of 16 frames overflows quickly; the write timeout is long, so that the close is
		// the queue's 4014 (sent after the frames in the socket) and never a dropped connection.
		w := mustWorld(t, eng, "--set", "sync.outbound_queue_max=16", "--set", "gateway.write_timeout=2m")
		start := w.in.owner.mustHead(t)
		alice := mustStartBot(t, "alice", w.in.srv.public, w.alice.token, botclient.WithCursor(start))
		// The owner's raw connection identifies, then reads nothing more; a small receive
		// buffer makes it full after kilobytes.
		slow, _ := mustIdentifyRaw(t, w.in.srv.public, w.in.owner.token, nil, dialOptions{rcvbuf: 4096})

		// 130 events of 39 KB, from 4 writers: 5 MB, more than the socket buffers (Linux lets a
		// send buffer grow to 4 MB) and the queue of 16 hold.
		big := strings.Repeat("x", 39_000)
		const n = 130
		poster := botclient.New(w.in.srv.public, w.in.owner.token, botclient.WithHTTPClient(httpClient))
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := g; i < n; i += 4 {
					if _, err := poster.PostMessage(t.Context(), w.sharedTh.Thread.ID, fmt.Sprintf("%d %s", i, big), uniqueName("big")); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		alice.waitSeq(t, w.in.owner.mustHead(t), 30*time.Second)

		t.Run("the reader that stopped is closed with 4014", func(t *testing.T) {
			code, frames := slow.closeCode(20 * time.Second)
			if code != 4014 {
				t.Errorf("the slow connection ended with %d after %d frames, want 4014", code, len(frames))
			}
			if len(frames) >= n {
				t.Errorf("the slow connection got all %d frames; it was never slow", len(frames))
			}
			t.Logf("the slow connection read %d frames of %d before its close", len(frames), n)
		})
		t.Run("the others kept receiving", func(t *testing.T) {
			mustMatchCatchUp(t, alice, w.alice, start)
			if n := alice.readyCount(); n != 1 {
				t.Errorf("alice's bot connected %d times, want once", n)
			}
		})
	})
}

func TestGatewaySIGTERMClosesWith4013(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		proxy := mustProxy(t, w.in.srv)
		start := w.in.owner.mustHead(t)
		alice := mustStartBot(t, "alice", proxy.url(), w.alice.token, botclient.WithCursor(start))
		before := w.in.owner.mustPost(t, w.sharedTh.Thread.ID, "before the restart")
		alice.waitSeq(t, w.in.owner.mustHead(t), 10*time.Second)
		rc, _ := mustIdentifyRaw(t, w.in.srv.public, w.in.owner.token, nil, dialOptions{})

		if err := w.in.srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		t.Run("every connection is closed with 4013", func(t *testing.T) {
			if code, _ := rc.closeCode(stopDeadline); code != 4013 {
				t.Errorf("the connection ended with %d on SIGTERM, want 4013", code)
			}
		})
		t.Run("the server exits 0", func(t *testing.T) {
			select {
			case <-w.in.srv.exited:
				if w.in.srv.err != nil {
					t.Errorf("bothy serve exited with %v on SIGTERM, want 0", w.in.srv.err)
				}
			case <-time.After(stopDeadline):
				t.Fatalf("bothy serve did not exit within %s of SIGTERM", stopDeadline)
			}
		})

		w.in.srv.mustRestart(t)
		proxy.retarget(w.in.srv)
		after := w.in.owner.mustPost(t, w.sharedTh.Thread.ID, "after the restart")
		fence := w.mustFence(t)
		t.Run("the client comes back by itself and misses nothing", func(t *testing.T) {
			alice.waitSeq(t, fence, 20*time.Second)
			if n := alice.readyCount(); n != 2 {
				t.Errorf("%d readies, want 2: the first and one after the restart (identify, no resume)", n)
			}
			mustMatchCatchUp(t, alice, w.alice, start)
			checkEachOnce(t, "alice", map[string]string{before.ID: "", after.ID: ""}, createdIDs(alice.handed()))
		})
	})
}

// protocolRow is one row of the protocol error table: what a raw connection sends after hello
// (after an identify when identified) and the close code it must get.
type protocolRow struct {
	name       string
	identified bool
	// frames are sent as text frames, but a frame that starts with "binary:" goes as a binary
	// frame of the rest. The server may close while they are still being written.
	frames []string
	// identifyAs sends an identify with the owner's token and these members first.
	identifyAs map[string]any
	want       int
}

func TestGatewayRefusesWhatBreaksTheProtocol(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		heartbeats := make([]string, 200)
		for i := range heartbeats {
			heartbeats[i] = `{"op":"heartbeat"}`
		}
		rows := []protocolRow{
			{name: "a frame that is not JSON is a decode error", frames: []string{"hello?"}, want: 4002},
			{name: "a binary frame is a decode error", frames: []string{`binary:{"op":"heartbeat"}`}, want: 4002},
			{name: "a frame with a member besides op and d is a decode error", frames: []string{`{"op":"heartbeat","x":1}`}, want: 4002},
			{name: "an identify whose token is not a string is a decode error", frames: []string{`{"op":"identify","d":{"token":5}}`}, want: 4002},
			{name: "an op before identify is not authenticated", frames: []string{`{"op":"focus","d":{"thread_id":null}}`}, want: 4003},
			{name: "a wrong token fails authentication", frames: []string{`{"op":"identify","d":{"token":"not-a-token"}}`}, want: 4004},
			{name: "a resume of an unknown session is session invalid", frames: []string{`{"op":"resume","d":{"session_id":"nope","seq":0}}`}, want: 4006},
			{name: "a cursor beyond the head requires a resync", identifyAs: map[string]any{"cursor": 1 << 40}, want: 4016},
			{name: "an unknown op", identified: true, frames: []string{`{"op":"dance","d":{}}`}, want: 4001},
			{name: "a second identify", identified: true, identifyAs: map[string]any{}, want: 4005},
			{name: "a frame above the size limit", identified: true, want: int(websocket.StatusMessageTooBig),
				frames: []string{`{"op":"heartbeat","d":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`}},
			{name: "more frames than the rate limit", identified: true, frames: heartbeats, want: 4008},
		}
		for _, row := range rows {
			t.Run(row.name, func(t *testing.T) {
				var rc *rawConn
				if row.identified {
					rc, _ = mustIdentifyRaw(t, in.srv.public, in.owner.token, nil, dialOptions{})
				} else {
					rc = mustDialGateway(t, in.srv.public, dialOptions{})
				}
				go func() {
					// The server may close while this still writes: errors end the writes, and
					// the close code is the test.
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if row.identifyAs != nil {
						d := map[string]any{"token": in.owner.token}
						maps.Copy(d, row.identifyAs)
						b, _ := json.Marshal(map[string]any{"op": "identify", "d": d})
						if rc.ws.Write(ctx, websocket.MessageText, b) != nil {
							return
						}
					}
					for _, f := range row.frames {
						typ := websocket.MessageText
						if b, ok := strings.CutPrefix(f, "binary:"); ok {
							typ, f = websocket.MessageBinary, b
						}
						if rc.ws.Write(ctx, typ, []byte(f)) != nil {
							return
						}
					}
				}()
				if code, frames := rc.closeCode(10 * time.Second); code != row.want {
					t.Errorf("closed with %d after %d frames (%v), want %d", code, len(frames), rc.err, row.want)
				}
			})
		}

		for _, row := range []struct {
			name   string
			origin string
			want   int
		}{
			{name: "a browser upgrade from a foreign origin answers 403", origin: "https://evil.example", want: http.StatusForbidden},
			{name: "a browser upgrade from another port of the same host answers 403", origin: "http://127.0.0.1:1", want: http.StatusForbidden},
			{name: "a browser upgrade from an opaque origin answers 403", origin: "null", want: http.StatusForbidden},
			{name: "a browser upgrade from the instance's own origin is accepted", origin: in.srv.public, want: http.StatusSwitchingProtocols},
			{name: "an upgrade without an origin (a bot) is accepted", want: http.StatusSwitchingProtocols},
		} {
			t.Run(row.name, func(t *testing.T) {
				h := http.Header{}
				if row.origin != "" {
					h.Set("Origin", row.origin)
				}
				rc, resp, err := dialGateway(t, in.srv.public, dialOptions{header: h})
				status := 0
				if resp != nil {
					status = resp.StatusCode
				}
				if status != row.want {
					t.Fatalf("the upgrade answered %d (%v), want %d", status, err, row.want)
				}
				if rc != nil {
					rc.mustExpect(t, "hello")
					rc.ws.Close(websocket.StatusNormalClosure, "")
				}
			})
		}
		t.Run("a GET without the upgrade answers 426 and another method 405, as problems", func(t *testing.T) {
			anon := as(in.srv, "")
			anon.do(t, http.MethodGet, api("gateway"), nil, breaksDocument()).want(t, http.StatusUpgradeRequired)
			anon.do(t, http.MethodPost, api("gateway"), nil, breaksDocument()).want(t, http.StatusMethodNotAllowed)
		})
	})
}

// TestGatewayKeepsOnlyLiveAndAuthorizedConnections runs with a heartbeat of 300 ms and an
// identify timeout of 200 ms (below the 450 ms of silence that closes with 4009): silence is
// closed quickly, a client that beats stays, and a connection whose credential ends is closed
// with 4004.
func TestGatewayKeepsOnlyLiveAndAuthorizedConnections(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng, "--set", "gateway.heartbeat_interval=300ms", "--set", "gateway.identify_timeout=200ms")
		var tok apiToken
		w.alice.do(t, http.MethodPost, api("tokens"), map[string]any{"name": "alice's bot"}).
			want(t, http.StatusCreated).decode(t, &tok)
		start := w.in.owner.mustHead(t)
		// Alice's bot holds an API token, as bots do.
		alice := mustStartBot(t, "alice", w.in.srv.public, tok.Token, botclient.WithCursor(start))
		bob := mustStartBot(t, "bob", w.in.srv.public, w.bob.token, botclient.WithCursor(start))

		t.Run("a connection that does not identify in time is closed with 4003", func(t *testing.T) {
			rc := mustDialGateway(t, w.in.srv.public, dialOptions{})
			if code, _ := rc.closeCode(5 * time.Second); code != 4003 {
				t.Errorf("closed with %d, want 4003", code)
			}
		})
		t.Run("a connection that goes silent is asked for a heartbeat, then closed with 4009", func(t *testing.T) {
			rc, _ := mustIdentifyRaw(t, w.in.srv.public, w.in.owner.token, nil, dialOptions{})
			code, frames := rc.closeCode(5 * time.Second)
			if code != 4009 {
				t.Errorf("closed with %d, want 4009", code)
			}
			if !slices.ContainsFunc(frames, func(f wsFrame) bool { return f.Op == "heartbeat" }) {
				t.Errorf("the server sent %v before the close, and no heartbeat", frames)
			}
		})
		t.Run("a client that beats stays connected and keeps receiving", func(t *testing.T) {
			time.Sleep(time.Second) // more than three intervals
			m := w.alice.mustPost(t, w.sharedTh.Thread.ID, "still there?")
			seq := seqOf(t, w.in.owner, start, "the message", func(e event) bool { return e.Data["id"] == m.ID })
			alice.waitSeq(t, seq, 10*time.Second)
			if n := alice.readyCount(); n != 1 {
				t.Errorf("alice's bot connected %d times, want once", n)
			}
		})
		t.Run("a logout closes the connections of that login session with 4004", func(t *testing.T) {
			second := mustLogin(t, w.in.srv, "alice", "alice-password-1")
			rc, _ := mustIdentifyRaw(t, w.in.srv.public, second.token, nil, dialOptions{})
			second.do(t, http.MethodPost, api("auth", "logout"), nil).want(t, http.StatusNoContent)
			if code, _ := rc.closeCode(5 * time.Second); code != 4004 {
				t.Errorf("closed with %d, want 4004", code)
			}
			if alice.isDone() {
				t.Errorf("alice's bot, on an API token, stopped too: %v", alice.stop(t))
			}
		})
		t.Run("revoking an API token closes its connections with 4004 and the client stops", func(t *testing.T) {
			var other apiToken
			w.alice.do(t, http.MethodPost, api("tokens"), map[string]any{"name": "alice's other bot"}).
				want(t, http.StatusCreated).decode(t, &other)
			revoked := mustStartBot(t, "alice-other", w.in.srv.public, other.Token, botclient.WithCursor(start))
			w.alice.do(t, http.MethodDelete, api("tokens", other.ID), nil).want(t, http.StatusNoContent)
			select {
			case <-revoked.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the bot still runs 10 s after its token was revoked")
			}
			if err := revoked.stop(t); !errors.Is(err, botclient.ErrAuthenticationFailed) {
				t.Errorf("the bot ended with %v, want ErrAuthenticationFailed", err)
			}
			if alice.isDone() {
				t.Errorf("alice's bot on her first token stopped too: %v", alice.stop(t))
			}
		})
		t.Run("disabling a person closes their connections with 4004 and the client stops", func(t *testing.T) {
			w.in.owner.do(t, http.MethodPost, api("users", w.bobU.ID, "disable"), nil).want(t, http.StatusOK)
			select {
			case <-bob.done:
			case <-time.After(10 * time.Second):
				t.Fatal("bob's bot still runs 10 s after bob was disabled")
			}
			if err := bob.stop(t); !errors.Is(err, botclient.ErrAuthenticationFailed) {
				t.Errorf("bob's bot ended with %v, want ErrAuthenticationFailed", err)
			}
		})
	})
}

// TestGatewayReplaysADeletedMessageRedacted deletes a message after a client saw it, then lets
// another client catch up over it: the replay (which the server serves from its memory of
// recent events) carries the message.created redacted, exactly as the log and the REST
// catch-up have it.
func TestGatewayReplaysADeletedMessageRedacted(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		start := w.in.owner.mustHead(t)
		kept := w.alice.mustPost(t, w.sharedTh.Thread.ID, "this one stays")
		gone := w.alice.mustPost(t, w.sharedTh.Thread.ID, "a secret posted by mistake")
		w.alice.do(t, http.MethodDelete, api("messages", gone.ID), nil).want(t, http.StatusNoContent)
		fence := w.mustFence(t)

		later := mustStartBot(t, "later", w.in.srv.public, w.in.owner.token, botclient.WithCursor(start))
		later.waitSeq(t, fence, 10*time.Second)
		mustMatchCatchUp(t, later, w.in.owner, start)
		for _, e := range later.handed() {
			if strings.Contains(string(e.Data), "a secret posted by mistake") {
				t.Fatalf("the replay holds the deleted content at seq %d: %s", e.Seq, e.Data)
			}
			if e.Type == "message.created" && strings.Contains(string(e.Data), kept.ID) && !strings.Contains(string(e.Data), "this one stays") {
				t.Fatalf("the kept message lost its content: %s", e.Data)
			}
		}
	})
}

// TestGatewayDeviceHoldsOneConnection runs a bot twice on one device: the newer connection
// closes the older with 4017, whose client stops with ErrReplaced, and goes on receiving.
func TestGatewayDeviceHoldsOneConnection(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		start := w.in.owner.mustHead(t)
		const device = "3b9c6e1a-2f4d-4e8b-9a7c-5d6e7f8a9b0c"
		older := mustStartBot(t, "older", w.in.srv.public, w.alice.token, botclient.WithCursor(start), botclient.WithDeviceID(device))
		newer := mustStartBot(t, "newer", w.in.srv.public, w.alice.token, botclient.WithCursor(start), botclient.WithDeviceID(device))
		select {
		case <-older.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the older connection of the device still runs 10 s after the newer one identified")
		}
		if err := older.stop(t); !errors.Is(err, botclient.ErrReplaced) {
			t.Errorf("the older bot ended with %v, want ErrReplaced", err)
		}
		fence := w.mustFence(t)
		newer.waitSeq(t, fence, 10*time.Second)
	})
}

// TestGatewayBoundsConnections holds one principal to gateway.max_connections_per_principal
// identified connections and one address to gateway.max_connections_per_address connections:
// the next is closed with 4018, a client of the client package waits and comes back once a slot
// is free, and a connection that never identifies gives its slot back at the identify timeout.
func TestGatewayBoundsConnections(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng, "--set", "gateway.max_connections_per_principal=3",
			"--set", "gateway.max_connections_per_address=5", "--set", "gateway.identify_timeout=1s")
		var held []*rawConn
		for range 3 {
			rc, _ := mustIdentifyRaw(t, w.in.srv.public, w.alice.token, nil, dialOptions{})
			held = append(held, rc)
		}

		t.Run("the identify past a principal's bound is closed with 4018", func(t *testing.T) {
			rc := mustDialGateway(t, w.in.srv.public, dialOptions{})
			rc.mustSend(t, "identify", map[string]any{"token": w.alice.token})
			if code, frames := rc.closeCode(5 * time.Second); code != 4018 || len(frames) != 0 {
				t.Errorf("closed with %d after %v, want 4018 and no ready", code, frames)
			}
			var ce websocket.CloseError
			if errors.As(rc.err, &ce) && ce.Reason != "too_many_connections" {
				t.Errorf("close reason %q", ce.Reason)
			}
		})
		t.Run("another principal is not affected", func(t *testing.T) {
			rc, _ := mustIdentifyRaw(t, w.in.srv.public, w.bob.token, nil, dialOptions{})
			rc.ws.CloseNow()
		})
		t.Run("the Go client keeps trying with backoff and connects once a slot is free", func(t *testing.T) {
			const freeAfter = 1500 * time.Millisecond
			began := time.Now()
			timer := time.AfterFunc(freeAfter, func() { held[0].ws.CloseNow() })
			defer timer.Stop()
			b := mustStartBot(t, "alice", w.in.srv.public, w.alice.token)
			if waited := time.Since(began); waited < freeAfter {
				t.Errorf("the bot was ready after %s, before a slot was free", waited)
			}
			if b.isDone() {
				t.Fatalf("the bot stopped: %v", b.stop(t))
			}
			fence := w.mustFence(t)
			b.waitSeq(t, fence, 10*time.Second)
		})
		t.Run("the connection past an address's bound is closed with 4018 before hello", func(t *testing.T) {
			// Alice holds 2 connections from this address (the bot stopped with its subtest):
			// three that never identify fill it, or fewer while the server still gives back the
			// slot of a connection closed just now.
			var silent []*rawConn
			refused := false
			for range 5 {
				rc, _, err := dialGateway(t, w.in.srv.public, dialOptions{})
				if err != nil {
					t.Fatal(err)
				}
				f, err := rc.next(5 * time.Second)
				if err != nil {
					if code := websocket.CloseStatus(err); code != 4018 {
						t.Fatalf("closed with %d before hello, want 4018", code)
					}
					refused = true
					break
				}
				if f.Op != "hello" {
					t.Fatalf("the server sent %s first", f.Op)
				}
				silent = append(silent, rc)
			}
			if !refused || len(silent) > 3 {
				t.Fatalf("%d silent connections accepted, refused: %v", len(silent), refused)
			}
			t.Run("and one that never identifies gives its slot back at the identify timeout", func(t *testing.T) {
				for _, rc := range silent {
					if code, _ := rc.closeCode(5 * time.Second); code != 4003 {
						t.Errorf("the silent connection closed with %d, want 4003", code)
					}
				}
				deadline := time.Now().Add(5 * time.Second)
				for {
					rc, _, err := dialGateway(t, w.in.srv.public, dialOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if f, err := rc.next(5 * time.Second); err == nil && f.Op == "hello" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("still refused 5 s after the silent connections closed")
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		})
	})
}
