package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
	"bothy.dev/bothy/storage/storetest/pgdb"
)

// Several nodes: two `serve --role=api` processes with
// cluster.mode multi on one PostgreSQL database. Clients connect to either; what one node's
// clients do reaches the other's.

// clusterArgs put a process in a cluster of api nodes.
var clusterArgs = []string{"--role=api", "--set", "cluster.mode=multi"}

// mustSecondNode starts another process on the database of first, with the same arguments.
func mustSecondNode(tb testing.TB, first *server) *server {
	tb.Helper()
	s := &server{eng: first.eng, dataDir: tb.TempDir(), dbURL: first.dbURL, args: first.args}
	s.mustBoot(tb, false)
	return s
}

// presenceOf returns the statuses of presence.updated about principal that b was handed, in
// order.
func (b *bot) presenceOf(principal string) []string {
	var out []string
	for _, e := range b.ephemerals("presence.updated") {
		var d struct {
			PrincipalID string `json:"principal_id"`
			Status      string `json:"status"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.PrincipalID == principal {
			out = append(out, d.Status)
		}
	}
	return out
}

func TestSeveralNodes(t *testing.T) {
	t.Parallel()
	pgdb.URL(t)
	w := mustWorld(t, postgresEngine, clusterArgs...)
	a := w.in.srv
	b := mustSecondNode(t, a)
	start := w.in.owner.mustHead(t)
	// alice watches from node B, the owner from node A.
	alice := mustStartBot(t, "alice", b.public, w.alice.token, botclient.WithCursor(start))
	owner := mustStartBot(t, "owner", a.public, w.in.owner.token, botclient.WithCursor(start))

	t.Run("a message posted through node A reaches a client on node B, and one through B a client on A", func(t *testing.T) {
		m := w.in.owner.mustPost(t, w.sharedTh.Thread.ID, "from node A")
		seq := seqOf(t, w.in.owner, start, "the message from node A", func(e event) bool { return e.Data["id"] == m.ID })
		alice.waitSeq(t, seq, 10*time.Second)
		m = as(b, w.alice.token).mustPost(t, w.sharedTh.Thread.ID, "from node B")
		seq = seqOf(t, w.in.owner, seq, "the message from node B", func(e event) bool { return e.Data["id"] == m.ID })
		owner.waitSeq(t, seq, 10*time.Second)
	})

	t.Run("typing on node A reaches a client on node B who may read the thread", func(t *testing.T) {
		if err := owner.cl.StartTyping(t.Context(), w.sharedTh.Thread.ID); err != nil {
			t.Fatal(err)
		}
		alice.waitFor(t, "typing.started", 10*time.Second, func() bool { return len(alice.ephemeralsLocked("typing.started")) > 0 })
		typ := alice.ephemerals("typing.started")[0]
		var d map[string]any
		_ = json.Unmarshal(typ.Data, &d)
		if typ.Seq != 0 || d["thread_id"] != w.sharedTh.Thread.ID || d["principal_id"] != w.in.me.ID {
			t.Errorf("alice got %s %s", typ.Type, typ.Data)
		}
	})

	t.Run("typing on node B stays away from a client on node A who may not read the thread", func(t *testing.T) {
		bob := mustStartBot(t, "bob", a.public, w.bob.token)
		if err := alice.cl.StartTyping(t.Context(), w.sharedTh.Thread.ID); err != nil {
			t.Fatal(err)
		}
		owner.waitFor(t, "alice's typing.started", 10*time.Second, func() bool { return len(owner.ephemeralsLocked("typing.started")) > 0 })
		// The lobby is everyone's: a typing there reaches bob, after anything of the shared thread would have.
		if err := alice.cl.StartTyping(t.Context(), w.lobbyTh.Thread.ID); err != nil {
			t.Fatal(err)
		}
		bob.waitFor(t, "typing.started in the lobby", 10*time.Second, func() bool { return len(bob.ephemeralsLocked("typing.started")) > 0 })
		for _, e := range bob.ephemerals("typing.started") {
			var d map[string]any
			_ = json.Unmarshal(e.Data, &d)
			if d["thread_id"] != w.lobbyTh.Thread.ID {
				t.Errorf("bob got typing in %v", d["thread_id"])
			}
		}
		if err := bob.stop(t); err != nil && !isCanceled(err) {
			t.Fatal(err)
		}
	})

	t.Run("a person connecting on node A is online for a client on node B, and offline after leaving", func(t *testing.T) {
		carolU, carol := w.in.mustCreateUser(t, "carol")
		before := len(alice.presenceOf(carolU.ID))
		cb := mustStartBot(t, "carol", a.public, carol.token)
		alice.waitFor(t, "carol online", 15*time.Second, func() bool {
			return slices.Equal(presenceTail(alice, carolU.ID, before), []string{"online"})
		})
		t.Run("and in the ready of a new connection on node B", func(t *testing.T) {
			rc, _ := mustIdentifyRawOnline(t, b.public, w.bob.token)
			if !slices.Contains(rc, carolU.ID) || !slices.Contains(rc, w.in.me.ID) || !slices.Contains(rc, w.bobU.ID) {
				t.Errorf("online %v lacks carol, the owner or bob", rc)
			}
		})
		if err := cb.stop(t); err != nil && !isCanceled(err) {
			t.Fatal(err)
		}
		// Offline after the grace period (5 s) once node A has deleted her row and told B.
		alice.waitFor(t, "carol offline", 20*time.Second, func() bool {
			return slices.Equal(presenceTail(alice, carolU.ID, before), []string{"online", "offline"})
		})
	})

	t.Run("a resume of node A's session on node B answers 4006", func(t *testing.T) {
		rc := mustDialGateway(t, a.public, dialOptions{})
		rc.mustSend(t, "identify", map[string]any{"token": w.alice.token})
		var ready struct {
			SessionID string `json:"session_id"`
			HeadSeq   int64  `json:"head_seq"`
		}
		if err := json.Unmarshal(rc.mustExpect(t, "ready"), &ready); err != nil || ready.SessionID == "" {
			t.Fatalf("ready: %+v %v", ready, err)
		}
		other := mustDialGateway(t, b.public, dialOptions{})
		other.mustSend(t, "resume", map[string]any{"session_id": ready.SessionID, "seq": ready.HeadSeq})
		if code, frames := other.closeCode(10 * time.Second); code != 4006 {
			t.Fatalf("node B closed the resume with %d after %v, want 4006", code, frames)
		}
	})

	t.Run("a device's connection on node B closes its older connection on node A with 4017", func(t *testing.T) {
		const device = "7d1e2f3a-4b5c-4d6e-8f7a-8b9c0d1e2f3a"
		older := mustStartBot(t, "device on A", a.public, w.alice.token, botclient.WithDeviceID(device))
		mustStartBot(t, "device on B", b.public, w.alice.token, botclient.WithDeviceID(device))
		select {
		case <-older.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the older connection of the device on node A still runs 10 s after node B bound the device")
		}
		if err := older.stop(t); !errors.Is(err, botclient.ErrReplaced) {
			t.Errorf("the older bot ended with %v, want ErrReplaced", err)
		}
	})

	t.Run("a client moved from node A to node B identifies with its cursor and gets exactly the same events", func(t *testing.T) {
		from := w.in.owner.mustHead(t)
		proxy := mustProxy(t, a)
		moved := mustStartBot(t, "alice via the proxy", proxy.url(), w.alice.token, botclient.WithCursor(from))
		var progress atomic.Int64
		done := make(chan map[string]string)
		go func() { done <- burst(t, w.in.owner, w.sharedTh.Thread.ID, 400, 4, nil, &progress) }()
		moved.waitFor(t, "100 events", 30*time.Second, func() bool { return len(moved.events) >= 100 })
		// The proxy sends the next connection to node B, then drops the current one: the client
		// resumes there, is refused with 4006 and identifies with its cursor.
		proxy.retarget(b)
		proxy.cut()
		acked := <-done
		if len(acked) != 400 {
			t.Fatalf("%d of 400 messages were acknowledged", len(acked))
		}
		fence := w.mustFence(t)
		moved.waitSeq(t, fence, 30*time.Second)
		if n := moved.readyCount(); n < 2 {
			t.Errorf("%d readies, want 2 (node A, then node B)", n)
		}
		checkEachOnce(t, "alice", acked, createdIDs(moved.handed()))
		mustMatchCatchUp(t, moved, w.alice, from)
	})

	t.Run("a patch stored through node A reaches a client focused on node B as run.updated", func(t *testing.T) {
		ag, ac := w.in.mustCreateAgent(t, "streamer")
		w.in.owner.mustGrant(t, w.shared.ID, ag.ID, "view")
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		th := w.sharedTh.Thread.ID
		if err := alice.cl.Focus(context.Background(), th); err != nil {
			t.Fatal(err)
		}
		mid, state := postedMessage(t, w.alice, th, "@streamer go")
		if state != "triggered" {
			t.Fatalf("trigger_state %v", state)
		}
		var pg page[runView]
		w.alice.do(t, http.MethodGet, api("threads", th, "runs"), nil).want(t, http.StatusOK).decode(t, &pg)
		var runID string
		for _, r := range pg.Items {
			if r.TriggerMessageID != nil && *r.TriggerMessageID == mid {
				runID = r.ID
			}
		}
		tok, _ := ac.do(t, http.MethodPost, api("runs", runID, "token"), nil).want(t, http.StatusOK).obj()["invocation_token"].(string)
		ac.do(t, http.MethodPost, api("runs", runID, "start"), nil, header("Invocation-Token", tok)).want(t, http.StatusOK)
		// The focus travels to node B while the patches go to node A: patch until a frame comes.
		version := 0
		deadline := time.Now().Add(10 * time.Second)
		for len(runUpdates(alice)) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no run.updated on node B within 10s")
			}
			version++
			ac.do(t, http.MethodPatch, api("runs", runID), map[string]any{"version": version, "output_append": "x"},
				header("Invocation-Token", tok)).want(t, http.StatusOK)
			time.Sleep(20 * time.Millisecond)
		}
		alice.waitFor(t, "run.updated of the last version", 10*time.Second, func() bool {
			ups := runUpdatesLocked(alice)
			return ups[len(ups)-1].Version == version
		})
		// Another node's patch arrives as the stored document, never as a patch (the signal
		// between nodes carries ids; the receiver reads the document from the database).
		for _, u := range runUpdates(alice) {
			if u.RunID != runID || u.Document == nil || u.Patch != nil || u.Document.Version != u.Version ||
				u.Document.Output != strings.Repeat("x", u.Version) {
				t.Fatalf("run.updated on node B: %+v", u)
			}
		}
	})

	t.Run("a channel archived through node A takes no more messages through node B", func(t *testing.T) {
		ch := w.in.owner.mustCreateChannel(t, w.shared.SpaceID, "attic")
		onB := as(b, w.in.owner.token)
		post := func(text string) *response {
			return onB.do(t, http.MethodPost, api("threads", ch.MainThreadID, "messages"), map[string]any{"content": text})
		}
		post("before").want(t, http.StatusCreated) // node B now knows the thread
		w.in.owner.do(t, http.MethodPost, api("channels", ch.ID, "archive"), nil).want(t, http.StatusOK)
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; ; i++ {
			r := post(fmt.Sprint("after ", i))
			if r.status == http.StatusNotFound {
				break
			}
			if r.status != http.StatusCreated || time.Now().After(deadline) {
				t.Fatalf("a post through node B after the archive: %d %s", r.status, r.code())
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("both watchers were handed exactly what their REST catch-up answers", func(t *testing.T) {
		fence := w.mustFence(t)
		alice.waitSeq(t, fence, 10*time.Second)
		owner.waitSeq(t, fence, 10*time.Second)
		mustMatchCatchUp(t, alice, w.alice, start)
		mustMatchCatchUp(t, owner, w.in.owner, start)
	})

	t.Run("each node keeps its people in gateway_presence and takes its rows away when it stops", func(t *testing.T) {
		db := a.mustOpenPostgres(t)
		count := func() (total, nodes int) {
			t.Helper()
			if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT node_id) FROM gateway_presence`).Scan(&total, &nodes); err != nil {
				t.Fatal(err)
			}
			return total, nodes
		}
		deadline := time.Now().Add(10 * time.Second)
		for total, nodes := count(); total < 2 || nodes != 2; total, nodes = count() {
			if time.Now().After(deadline) {
				t.Fatalf("gateway_presence has %d rows of %d nodes, want the watchers' rows of both", total, nodes)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := b.stop(t); err != nil {
			t.Fatalf("node B exited with %v", err)
		}
		if _, nodes := count(); nodes != 1 {
			t.Errorf("%d nodes have rows after node B stopped, want 1", nodes)
		}
	})
}

// presenceTail is the statuses about principal that b was handed after the first skip.
func presenceTail(b *bot, principal string, skip int) []string {
	var out []string
	for _, e := range b.ephemeral {
		var d struct {
			PrincipalID string `json:"principal_id"`
			Status      string `json:"status"`
		}
		if e.Type == "presence.updated" && json.Unmarshal(e.Data, &d) == nil && d.PrincipalID == principal {
			out = append(out, d.Status)
		}
	}
	if skip > len(out) {
		return nil
	}
	return out[skip:]
}

// mustIdentifyRawOnline identifies a raw connection and returns the online set of its ready.
func mustIdentifyRawOnline(tb testing.TB, base, token string) ([]string, *rawConn) {
	tb.Helper()
	rc := mustDialGateway(tb, base, dialOptions{})
	rc.mustSend(tb, "identify", map[string]any{"token": token})
	var ready struct {
		Online []string `json:"online"`
	}
	if err := json.Unmarshal(rc.mustExpect(tb, "ready"), &ready); err != nil {
		tb.Fatal(err)
	}
	return ready.Online, rc
}

func isCanceled(err error) bool { return errors.Is(err, context.Canceled) }
