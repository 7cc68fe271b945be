package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
)

// step is one move of a scenario: the client sends a frame (send, or a binary one), or expects a
// frame with an op (expect), or expects the close code (close).
type step struct {
	send   string
	binary bool
	expect string
	close  CloseCode
}

func TestStateMachine(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "answers a heartbeat before identify", steps: []step{
			{send: `{"op":"heartbeat"}`}, {expect: OpHeartbeatAck}}},
		{name: "takes a heartbeat with a payload and an ack of its own heartbeat", steps: []step{
			{send: `{"op":"heartbeat.ack","d":{}}`}, {send: `{"op":"heartbeat","d":{"seq":12}}`}, {expect: OpHeartbeatAck}}},
		{name: "identifies and catches up at once without a cursor", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada"}}`}, {expect: OpReady}, {expect: OpCatchupComplete}}},
		{name: "closes an op before identify with 4003", steps: []step{
			{send: `{"op":"typing.start","d":{"thread_id":"` + string(kernel.NewID()) + `"}}`}, {close: CloseNotAuthenticated}}},
		{name: "closes focus before identify with 4003", steps: []step{
			{send: `{"op":"focus","d":{}}`}, {close: CloseNotAuthenticated}}},
		{name: "closes an unknown op with 4001", steps: []step{{send: `{"op":"subscribe"}`}, {close: CloseUnknownOp}}},
		{name: "closes an unknown op after identify with 4001", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada"}}`}, {expect: OpReady}, {expect: OpCatchupComplete},
			{send: `{"op":"ack","d":{"seq":1}}`}, {close: CloseUnknownOp}}},
		{name: "closes text that is no JSON with 4002", steps: []step{{send: `hello`}, {close: CloseDecodeError}}},
		{name: "closes a JSON array with 4002", steps: []step{{send: `[{"op":"heartbeat"}]`}, {close: CloseDecodeError}}},
		{name: "closes a frame without op with 4002", steps: []step{{send: `{"d":{}}`}, {close: CloseDecodeError}}},
		{name: "closes an op that is no string with 4002", steps: []step{{send: `{"op":1}`}, {close: CloseDecodeError}}},
		{name: "closes a payload that is no object with 4002", steps: []step{{send: `{"op":"identify","d":"ada"}`}, {close: CloseDecodeError}}},
		{name: "closes a payload member of the wrong type with 4002", steps: []step{
			{send: `{"op":"identify","d":{"token":7}}`}, {close: CloseDecodeError}}},
		{name: "closes a frame with an unknown member with 4002", steps: []step{
			{send: `{"op":"heartbeat","s":1}`}, {close: CloseDecodeError}}},
		{name: "closes a frame with op twice with 4002", steps: []step{
			{send: `{"op":"heartbeat","op":"identify"}`}, {close: CloseDecodeError}}},
		{name: "closes a binary frame with 4002", steps: []step{{binary: true}, {close: CloseDecodeError}}},
		{name: "closes a negative cursor with 4002", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada","cursor":-1}}`}, {close: CloseDecodeError}}},
		{name: "closes a fractional cursor with 4002", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada","cursor":1.5}}`}, {close: CloseDecodeError}}},
		{name: "closes a bad token with 4004", steps: []step{
			{send: `{"op":"identify","d":{"token":"mallory"}}`}, {close: CloseAuthFailed}}},
		{name: "closes an identify without token with 4004", steps: []step{
			{send: `{"op":"identify","d":{}}`}, {close: CloseAuthFailed}}},
		{name: "closes a second identify with 4005", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada"}}`}, {expect: OpReady}, {expect: OpCatchupComplete},
			{send: `{"op":"identify","d":{"token":"ada"}}`}, {close: CloseAlreadyAuth}}},
		{name: "closes a resume after identify with 4005", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada"}}`}, {expect: OpReady}, {expect: OpCatchupComplete},
			{send: `{"op":"resume","d":{"session_id":"x","seq":0}}`}, {close: CloseAlreadyAuth}}},
		{name: "closes a resume of an unknown session with 4006", steps: []step{
			{send: `{"op":"resume","d":{"session_id":"0123456789abcdef0123456789abcdef","seq":0}}`}, {close: CloseSessionInvalid}}},
		{name: "closes a resume without seq with 4002", steps: []step{
			{send: `{"op":"resume","d":{"session_id":"x"}}`}, {close: CloseDecodeError}}},
		{name: "closes a cursor beyond the head with 4016", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada","cursor":99}}`}, {close: CloseResyncRequired}}},
		{name: "closes typing.start without a thread with 4002", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada"}}`}, {expect: OpReady}, {expect: OpCatchupComplete},
			{send: `{"op":"typing.start","d":{}}`}, {close: CloseDecodeError}}},
		{name: "closes typing.start with a malformed thread id with 4002", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada"}}`}, {expect: OpReady}, {expect: OpCatchupComplete},
			{send: `{"op":"typing.start","d":{"thread_id":"t1"}}`}, {close: CloseDecodeError}}},
		{name: "ignores typing.start on a thread that does not exist", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada"}}`}, {expect: OpReady}, {expect: OpCatchupComplete},
			{send: `{"op":"typing.start","d":{"thread_id":"` + string(kernel.NewID()) + `"}}`},
			{send: `{"op":"heartbeat"}`}, {expect: OpHeartbeatAck}}},
		{name: "takes focus on nothing", steps: []step{
			{send: `{"op":"identify","d":{"token":"ada"}}`}, {expect: OpReady}, {expect: OpCatchupComplete},
			{send: `{"op":"focus","d":{"thread_id":null}}`}, {send: `{"op":"heartbeat"}`}, {expect: OpHeartbeatAck}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			c := w.connect()
			for i, s := range tt.steps {
				switch {
				case s.binary:
					c.sendBinary()
				case s.send != "":
					c.send(s.send)
				case s.expect != "":
					c.expect(s.expect)
				case s.close != 0:
					c.expectClose(s.close)
				default:
					t.Fatalf("step %d is empty", i)
				}
			}
			if last := tt.steps[len(tt.steps)-1]; last.close == 0 {
				if code := c.tr.closeCode(); code != 0 {
					t.Fatalf("closed with %d", code)
				}
			}
		})
	}
}

func TestHelloAndReady(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.HeartbeatInterval = 2500 * time.Millisecond })
	tr := newFakeTransport()
	w.g.Serve(tr, ConnInfo{})
	c := &client{t: t, w: w, tr: tr}
	var hello struct {
		Interval int64 `json:"heartbeat_interval_ms"`
	}
	if err := json.Unmarshal(c.expect(OpHello), &hello); err != nil || hello.Interval != 2500 {
		t.Fatalf("hello = %+v, %v", hello, err)
	}
	w.runTail()
	w.waitHub(w.post(w.open, w.openTh, "one"))
	r := c.identify("owner", -1)
	if len(r.SessionID) != 32 || r.Principal != (PrincipalJSON{w.owner.ID, kernel.KindPerson, "olga", true}) || r.HeadSeq != 1 {
		t.Fatalf("ready = %+v", r)
	}
	if seqs, head := c.catchUp(); len(seqs) != 0 || head != 1 {
		t.Fatalf("catch-up without a cursor = %v, head %d", seqs, head)
	}
}

func TestCatchUpReplaysWhatThePrincipalMaySee(t *testing.T) {
	w := newWorld(t)
	w.post(w.open, w.openTh, "open 1")                                                                     // 1: everyone but the bot
	w.post(w.shut, w.shutTh, "shut 1")                                                                     // 2: ada, owner
	w.post(w.dm, kernel.NewID(), "dm 1")                                                                   // 3: bob only (not the owner)
	w.log.append(identity.EvUserCreated.Name, kernel.Scope{}, kernel.NewID(), map[string]string{})         // 4: people
	w.log.append(identity.EvSessionRevoked.Name, kernel.Scope{PrincipalID: w.ada.ID}, kernel.NewID(), nil) // 5: ada
	w.log.append(chat.EvSpaceUpdated.Name, kernel.Scope{SpaceID: w.space}, w.space, nil)                   // 6: space readers
	w.runTail()
	w.waitHub(6)
	tests := []struct {
		token  string
		cursor int64
		want   []int64
	}{
		{"ada", 0, []int64{1, 2, 4, 5, 6}},
		{"bob", 0, []int64{1, 3, 4, 6}},
		{"owner", 0, []int64{1, 2, 4, 6}},
		{"bot", 0, nil},
		{"ada", 2, []int64{4, 5, 6}},
		{"ada", 6, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s after %d", tt.token, tt.cursor), func(t *testing.T) {
			c := w.connect()
			r := c.identify(tt.token, tt.cursor)
			seqs, head := c.catchUp()
			if !slices.Equal(seqs, tt.want) || head != 6 || r.HeadSeq != 6 {
				t.Fatalf("replayed %v, head %d, ready %d; want %v and 6", seqs, head, r.HeadSeq, tt.want)
			}
		})
	}
}

func TestEventFrames(t *testing.T) {
	w := newWorld(t)
	seq := w.post(w.open, w.openTh, "hi")
	w.runTail()
	w.waitHub(seq)
	c := w.connect()
	c.identify("ada", 0)
	f := c.expect(OpEvent)
	var d map[string]any
	if err := json.Unmarshal(f, &d); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"seq": float64(seq), "type": "message.created", "data": map[string]any{"content": "hi"},
		"created_at": "2026-01-02T03:04:05Z", "space_id": string(w.space), "channel_id": string(w.open), "thread_id": string(w.openTh)}
	if fmt.Sprint(d) != fmt.Sprint(want) {
		t.Fatalf("event d = %v\nwant %v", d, want)
	}
}

func TestLiveDelivery(t *testing.T) {
	w := newWorld(t)
	w.runTail()
	ada, bob, owner, bot := w.connect(), w.connect(), w.connect(), w.connect()
	for tok, c := range map[string]*client{"ada": ada, "bob": bob, "owner": owner, "bot": bot} {
		c.identify(tok, -1)
		c.catchUp()
	}
	t.Run("a channel event reaches those who may read the channel", func(t *testing.T) {
		seq := w.post(w.shut, w.shutTh, "secret")
		for _, c := range []*client{ada, owner} {
			if e := c.expectEvent(); e.Seq != seq {
				t.Fatalf("got seq %d, want %d", e.Seq, seq)
			}
		}
		w.waitHub(seq)
		bob.quiet()
		bot.quiet()
	})
	t.Run("a DM reaches its participant and not the owner", func(t *testing.T) {
		seq := w.post(w.dm, kernel.NewID(), "psst")
		if e := bob.expectEvent(); e.Seq != seq {
			t.Fatalf("got seq %d", e.Seq)
		}
		w.waitHub(seq)
		owner.quiet()
		ada.quiet()
	})
	t.Run("a personal event reaches its principal only", func(t *testing.T) {
		seq := w.log.append("agent.invocation", kernel.Scope{PrincipalID: w.bot.ID}, kernel.NewID(), map[string]string{})
		if e := bot.expectEvent(); e.Seq != seq {
			t.Fatalf("got seq %d", e.Seq)
		}
		w.waitHub(seq)
		ada.quiet()
		owner.quiet()
	})
	t.Run("an instance-wide event reaches every person", func(t *testing.T) {
		seq := w.log.append(identity.EvUserCreated.Name, kernel.Scope{}, kernel.NewID(), map[string]string{})
		for _, c := range []*client{ada, bob, owner} {
			if e := c.expectEvent(); e.Seq != seq || e.Type != identity.EvUserCreated.Name {
				t.Fatalf("got %+v", e)
			}
		}
		w.waitHub(seq)
		bot.quiet()
	})
	t.Run("a space event reaches those who may read the space", func(t *testing.T) {
		seq := w.log.append(chat.EvSpaceUpdated.Name, kernel.Scope{SpaceID: w.space}, w.space, map[string]string{})
		for _, c := range []*client{ada, bob, owner} {
			if e := c.expectEvent(); e.Seq != seq {
				t.Fatalf("got %+v", e)
			}
		}
		w.waitHub(seq)
		bot.quiet()
	})
	t.Run("the permission cache sees each event before the hub hands it out", func(t *testing.T) {
		w.obs.mu.Lock()
		defer w.obs.mu.Unlock()
		for i, seq := range w.obs.seqs {
			if seq != int64(i+1) || w.obs.lag[i] != seq-1 {
				t.Fatalf("observed %v with the hub at %v", w.obs.seqs, w.obs.lag)
			}
		}
		if len(w.obs.seqs) != 5 {
			t.Fatalf("observed %v", w.obs.seqs)
		}
	})
}

func TestRightsChangeAtDelivery(t *testing.T) {
	w := newWorld(t)
	w.runTail()
	bob := w.connect()
	bob.identify("bob", -1)
	bob.catchUp()

	t.Run("a grant opens the channel from the next event on", func(t *testing.T) {
		w.az.grant(w.bob.ID, w.shut, true)
		g := w.log.append(authz.EvGrantChanged.Name, kernel.Scope{SpaceID: w.space, ChannelID: w.shut}, w.shut,
			map[string]any{"channel_id": w.shut, "principal_id": w.bob.ID, "level": "view"})
		if e := bob.expectEvent(); e.Seq != g || e.Type != authz.EvGrantChanged.Name {
			t.Fatalf("got %+v", e)
		}
		m := w.post(w.shut, w.shutTh, "welcome")
		if e := bob.expectEvent(); e.Seq != m {
			t.Fatalf("got %+v", e)
		}
	})
	t.Run("a revoke closes it from the revoke on", func(t *testing.T) {
		w.az.grant(w.bob.ID, w.shut, false)
		g := w.log.append(authz.EvGrantChanged.Name, kernel.Scope{SpaceID: w.space, ChannelID: w.shut}, w.shut,
			map[string]any{"channel_id": w.shut, "principal_id": w.bob.ID, "level": nil})
		m := w.post(w.shut, w.shutTh, "after")
		o := w.post(w.open, w.openTh, "elsewhere")
		if e := bob.expectEvent(); e.Seq != o {
			t.Fatalf("got seq %d (revoke %d, message %d), want %d", e.Seq, g, m, o)
		}
	})
	t.Run("a disabled person is closed with 4004 and cannot come back", func(t *testing.T) {
		w.auth.revoke("bob")
		seq := w.log.append(identity.EvUserUpdated.Name, kernel.Scope{}, w.bob.ID, map[string]any{"id": w.bob.ID, "status": "disabled"})
		bob.expectClose(CloseAuthFailed)
		w.waitHub(seq)
		waitFor(t, "the session to end", func() bool { s := w.g.Stats(); return s.Members == 0 && s.Sessions == 0 })
	})
}

func TestLogoutClosesThatSessionOnly(t *testing.T) {
	w := newWorld(t)
	w.runTail()
	ada := w.connect()
	ada.identify("ada", -1)
	ada.catchUp()
	other := w.ada
	other.SessionID = kernel.NewID()
	w.auth.tokens["ada2"] = other
	ada2 := w.connect()
	ada2.identify("ada2", -1)
	ada2.catchUp()

	seq := w.log.append(identity.EvSessionRevoked.Name, kernel.Scope{PrincipalID: w.ada.ID}, w.ada.SessionID,
		map[string]any{"session_id": w.ada.SessionID})
	ada.expectClose(CloseAuthFailed)
	if e := ada2.expectEvent(); e.Seq != seq {
		t.Fatalf("got %+v", e)
	}
	if code := ada2.tr.closeCode(); code != 0 {
		t.Fatalf("the other session closed with %d", code)
	}
}

func TestRevokedTokenClosesItsConnectionsOnly(t *testing.T) {
	w := newWorld(t)
	w.runTail()
	withToken := w.ada
	withToken.SessionID, withToken.TokenID = kernel.NilID, kernel.NewID()
	w.auth.tokens["bothy_ada"] = withToken
	bot := w.connect()
	bot.identify("bothy_ada", -1)
	bot.catchUp()
	ada := w.connect() // the same person with a login session
	ada.identify("ada", -1)
	ada.catchUp()

	seq := w.log.append(identity.EvTokenRevoked.Name, kernel.Scope{PrincipalID: w.ada.ID}, withToken.TokenID,
		map[string]any{"token_id": withToken.TokenID})
	bot.expectClose(CloseAuthFailed)
	if e := ada.expectEvent(); e.Seq != seq || e.Type != identity.EvTokenRevoked.Name {
		t.Fatalf("got %+v", e)
	}
	if code := ada.tr.closeCode(); code != 0 {
		t.Fatalf("the session connection closed with %d", code)
	}
}

func TestTyping(t *testing.T) {
	w := newWorld(t)
	ada, bob, owner := w.connect(), w.connect(), w.connect()
	for tok, c := range map[string]*client{"ada": ada, "bob": bob, "owner": owner} {
		c.identify(tok, -1)
		c.catchUp()
	}
	t.Run("reaches the others who may read the thread, without seq", func(t *testing.T) {
		ada.send(`{"op":"typing.start","d":{"thread_id":"` + string(w.openTh) + `"}}`)
		for _, c := range []*client{bob, owner} {
			f := c.expect(OpEvent)
			var d map[string]any
			_ = json.Unmarshal(f, &d)
			data, _ := d["data"].(map[string]any)
			if d["type"] != EvTypingStarted.Name || d["seq"] != nil || data["thread_id"] != string(w.openTh) || data["principal_id"] != string(w.ada.ID) {
				t.Fatalf("typing frame %s", f)
			}
		}
		ada.quiet()
	})
	t.Run("stays with those who may read a closed channel", func(t *testing.T) {
		ada.send(`{"op":"typing.start","d":{"thread_id":"` + string(w.shutTh) + `"}}`)
		owner.expect(OpEvent)
		bob.quiet()
	})
	t.Run("is ignored from someone who may not post there", func(t *testing.T) {
		bob.send(`{"op":"typing.start","d":{"thread_id":"` + string(w.shutTh) + `"}}`)
		bob.send(`{"op":"heartbeat"}`)
		bob.expect(OpHeartbeatAck)
		ada.quiet()
		owner.quiet()
	})
}

func TestFocusAndResume(t *testing.T) {
	w := newWorld(t)
	w.runTail()
	ada := w.connect()
	r := ada.identify("ada", -1)
	ada.catchUp()
	ada.send(`{"op":"focus","d":{"thread_id":"` + string(w.shutTh) + `"}}`)
	ada.send(`{"op":"heartbeat"}`)
	ada.expect(OpHeartbeatAck)
	if got := w.g.hub.focusedOn(w.shutTh); len(got) != 1 {
		t.Fatalf("focused on the thread: %d connections", len(got))
	}

	t.Run("a focus on a thread the principal may not read is ignored", func(t *testing.T) {
		bob := w.connect()
		bob.identify("bob", -1)
		bob.catchUp()
		bob.send(`{"op":"focus","d":{"thread_id":"` + string(w.shutTh) + `"}}`)
		bob.send(`{"op":"heartbeat"}`)
		bob.expect(OpHeartbeatAck)
		if got := w.g.hub.focusedOn(w.shutTh); len(got) != 1 {
			t.Fatalf("focused on the thread: %d connections", len(got))
		}
	})

	seen := w.post(w.open, w.openTh, "seen")
	if e := ada.expectEvent(); e.Seq != seen {
		t.Fatalf("got %+v", e)
	}
	ada.hangUp()
	waitFor(t, "the session to wait for a resume", func() bool { return len(w.g.hub.focusedOn(w.shutTh)) == 0 })
	missed := w.post(w.shut, w.shutTh, "missed")
	w.waitHub(missed)

	t.Run("a resume replays what was missed and restores the focus", func(t *testing.T) {
		back := w.connect()
		back.send(fmt.Sprintf(`{"op":"resume","d":{"session_id":%q,"seq":%d}}`, r.SessionID, seen))
		var r2 readyD
		_ = json.Unmarshal(back.expect(OpReady), &r2)
		if r2.SessionID != r.SessionID || r2.Principal.ID != w.ada.ID {
			t.Fatalf("ready after resume = %+v", r2)
		}
		if seqs, head := back.catchUp(); !slices.Equal(seqs, []int64{missed}) || head != missed {
			t.Fatalf("replayed %v up to %d, want [%d]", seqs, head, missed)
		}
		if got := w.g.hub.focusedOn(w.shutTh); len(got) != 1 {
			t.Fatalf("focus not restored: %d connections", len(got))
		}

		t.Run("and a second resume of the session takes it over with 4006 to the first", func(t *testing.T) {
			third := w.connect()
			third.send(fmt.Sprintf(`{"op":"resume","d":{"session_id":%q,"seq":%d}}`, r.SessionID, missed))
			third.expect(OpReady)
			back.expectClose(CloseSessionInvalid)
			third.catchUp()
			live := w.post(w.open, w.openTh, "live")
			if e := third.expectEvent(); e.Seq != live {
				t.Fatalf("got %+v", e)
			}
		})
	})
	t.Run("a resume whose credential was revoked is closed with 4004 and forgets the session", func(t *testing.T) {
		w.auth.revoke("ada")
		w.g.mu.Lock()
		if s := w.g.sessions[r.SessionID]; s != nil && s.conn != nil {
			s.conn.closeWith(CloseHeartbeatTimeout, "")
		}
		w.g.mu.Unlock()
		waitFor(t, "the session to be detached", func() bool {
			w.g.mu.Lock()
			defer w.g.mu.Unlock()
			s := w.g.sessions[r.SessionID]
			return s != nil && s.conn == nil
		})
		again := w.connect()
		again.send(fmt.Sprintf(`{"op":"resume","d":{"session_id":%q,"seq":0}}`, r.SessionID))
		again.expectClose(CloseAuthFailed)
		last := w.connect()
		last.send(fmt.Sprintf(`{"op":"resume","d":{"session_id":%q,"seq":0}}`, r.SessionID))
		last.expectClose(CloseSessionInvalid)
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestHeartbeatsAndTimeouts(t *testing.T) {
	w := newWorld(t, func(c *Config) {
		c.HeartbeatInterval, c.IdentifyTimeout, c.ResumeWindow = 10*time.Second, 5*time.Second, time.Minute
	})
	t.Run("a connection that never identifies is closed with 4003", func(t *testing.T) {
		c := w.connect()
		c.send(`{"op":"heartbeat"}`)
		c.expect(OpHeartbeatAck)
		w.clock.Advance(4 * time.Second)
		w.g.sweep(w.clock.Now())
		c.quiet()
		w.clock.Advance(2 * time.Second)
		w.g.sweep(w.clock.Now())
		c.expectClose(CloseNotAuthenticated)
	})
	t.Run("a silent connection gets a heartbeat after one interval and 4009 after one and a half", func(t *testing.T) {
		c := w.connect()
		c.identify("ada", -1)
		c.catchUp()
		w.clock.Advance(9 * time.Second)
		w.g.sweep(w.clock.Now())
		c.quiet()
		w.clock.Advance(2 * time.Second)
		w.g.sweep(w.clock.Now())
		c.expect(OpHeartbeat)
		w.g.sweep(w.clock.Now())
		c.quiet() // one nudge per silence
		w.clock.Advance(5 * time.Second)
		w.g.sweep(w.clock.Now())
		c.expectClose(CloseHeartbeatTimeout)
	})
	t.Run("a client that answers stays", func(t *testing.T) {
		c := w.connect()
		c.identify("ada", -1)
		c.catchUp()
		for range 5 {
			w.clock.Advance(11 * time.Second)
			w.g.sweep(w.clock.Now())
			c.expect(OpHeartbeat)
			c.send(`{"op":"heartbeat.ack"}`)
			c.send(`{"op":"heartbeat"}`)
			c.expect(OpHeartbeatAck)
		}
	})
	t.Run("a session waits for its resume for the resume window only", func(t *testing.T) {
		c := w.connect()
		r := c.identify("bob", -1)
		c.catchUp()
		c.hangUp()
		waitFor(t, "the session to be detached", func() bool {
			w.g.mu.Lock()
			defer w.g.mu.Unlock()
			return w.g.sessions[r.SessionID] != nil && w.g.sessions[r.SessionID].conn == nil
		})
		w.clock.Advance(61 * time.Second)
		w.g.sweep(w.clock.Now())
		back := w.connect()
		back.send(fmt.Sprintf(`{"op":"resume","d":{"session_id":%q,"seq":0}}`, r.SessionID))
		back.expectClose(CloseSessionInvalid)
	})
	t.Run("more than 120 frames a minute, heartbeats aside, are closed with 4008", func(t *testing.T) {
		c := w.connect()
		limit := Config{HeartbeatInterval: 10 * time.Second}.frameLimit() // 120 + 12 heartbeat frames
		if limit != 132 {
			t.Fatalf("limit %d", limit)
		}
		for range limit {
			c.send(`{"op":"heartbeat"}`)
			c.expect(OpHeartbeatAck)
		}
		c.send(`{"op":"heartbeat"}`)
		c.expectClose(CloseRateLimited)
	})
}

func TestSlowConsumer(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.OutboundQueueMax, c.WriteTimeout = 8, time.Hour })
	w.runTail()
	slow, fast := w.connect(), w.connect()
	slow.identify("ada", -1)
	slow.catchUp()
	fast.identify("bob", -1)
	fast.catchUp()
	slow.tr.setStall(true)
	for i := range 30 {
		seq := w.post(w.open, w.openTh, fmt.Sprint(i))
		if e := fast.expectEvent(); e.Seq != seq {
			t.Fatalf("the fast reader got %d, want %d", e.Seq, seq)
		}
	}
	slow.tr.setStall(false) // the writer finishes its frame, then sends the close
	slow.expectClose(CloseSlowConsumer)
}

func TestWriteDeadline(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.WriteTimeout = 50 * time.Millisecond })
	w.runTail()
	c := w.connect()
	c.identify("ada", -1)
	c.catchUp()
	c.tr.setStall(true)
	w.post(w.open, w.openTh, "stuck")
	// The write missed its deadline with frames unsent: the transport drops the connection, as
	// no close frame can reach a peer that does not read.
	c.expectClose(-1)
	waitFor(t, "the connection to be forgotten", func() bool { return w.g.Stats().Connections == 0 })
}

func TestShutdown(t *testing.T) {
	w := newWorld(t)
	a, b := w.connect(), w.connect()
	a.identify("ada", -1)
	a.catchUp()
	if err := w.g.Shutdown(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	a.expectClose(CloseServerRestart)
	b.expectClose(CloseServerRestart)
	tr := newFakeTransport()
	w.g.Serve(tr, ConnInfo{})
	late := &client{t: t, w: w, tr: tr}
	late.expectClose(CloseServerRestart)
}

func TestPanicInAnOpClosesWith4000(t *testing.T) {
	w := newWorld(t)
	w.g.deps.Structure = panicky{w.st}
	c := w.connect()
	c.identify("ada", -1)
	c.catchUp()
	c.send(`{"op":"typing.start","d":{"thread_id":"` + string(w.openTh) + `"}}`)
	c.expectClose(CloseUnknownError)
}

type panicky struct{ *fakeStructure }

func (panicky) Thread(ctx context.Context, id kernel.ID) (chat.Thread, error) { panic("boom") }

func TestCloseCodeTable(t *testing.T) {
	seen := map[CloseCode]bool{}
	for _, c := range CloseCodes {
		if seen[c.Code] {
			t.Errorf("%d twice", c.Code)
		}
		seen[c.Code] = true
		if c.Name == "" || c.When == "" || c.Then == "" || len(c.Name) > 123 {
			t.Errorf("%d: incomplete row %+v", c.Code, c)
		}
		if c.Reconnect == (c.Then == ThenStop || c.Then == ThenResync) {
			t.Errorf("%d: reconnect %v contradicts %s", c.Code, c.Reconnect, c.Then)
		}
	}
	for _, code := range []CloseCode{4000, 4001, 4002, 4003, 4004, 4005, 4006, 4008, 4009, 4013, 4014, 4015, 4016, 4017, 4018, 1009} {
		if !seen[code] {
			t.Errorf("no row for %d", code)
		}
	}
	if Info(4999).Code != CloseUnknownError {
		t.Error("an unknown code does not fall back to 4000")
	}
	for code, want := range map[kernel.Code]CloseCode{kernel.CodeUnauthenticated: CloseAuthFailed, kernel.CodeCursorInvalid: CloseResyncRequired,
		kernel.CodeInternal: CloseUnknownError, kernel.CodeValidation: CloseDecodeError, catchup.CodeResyncRequired: CloseResyncRequired} {
		if got := closeFor(&kernel.Error{Code: code}); got != want {
			t.Errorf("closeFor(%s) = %d, want %d", code, got, want)
		}
	}
}

// The close code table of docs/gateway.md is CloseCodes, row by row.
func TestCloseCodesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/gateway.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| 4") || strings.HasPrefix(line, "| 1009") {
			rows++
		}
	}
	if rows != len(CloseCodes) {
		t.Errorf("docs/gateway.md has %d close code rows, the table %d", rows, len(CloseCodes))
	}
	for _, c := range CloseCodes {
		yes := map[bool]string{true: "yes", false: "no"}[c.Reconnect]
		row := fmt.Sprintf("| %d | %s | %s | %s | %s |", c.Code, c.Name, c.When, yes, c.Then)
		if !strings.Contains(string(doc), row+"\n") {
			t.Errorf("docs/gateway.md lacks the row\n%s", row)
		}
	}
}

func TestTransportEnds(t *testing.T) {
	w := newWorld(t)
	t.Run("a frame above the limit is closed with 1009, which drains it", func(t *testing.T) {
		c := w.connect()
		c.tr.tooBig()
		c.expectClose(CloseTooBig)
	})
	t.Run("a client that hangs up leaves nothing open", func(t *testing.T) {
		c := w.connect()
		c.identify("ada", -1)
		c.catchUp()
		c.hangUp()
		c.expectClose(-1) // aborted: the transport is released
		waitFor(t, "the connection to be forgotten", func() bool { return w.g.Stats().Connections == 0 })
	})
}

func TestASlowButSteadyReaderIsNotClosed(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.WriteTimeout = 300 * time.Millisecond })
	for i := range 300 {
		w.post(w.open, w.openTh, fmt.Sprint(i))
	}
	w.runTail()
	w.waitHub(300)
	c := w.connect()
	c.tr.mu.Lock()
	c.tr.delay = time.Millisecond // 300 frames take longer than one write timeout, 64 do not
	c.tr.mu.Unlock()
	c.identify("ada", 0)
	if seqs, _ := c.catchUp(); len(seqs) != 300 {
		t.Fatalf("replayed %d events", len(seqs))
	}
	if code := c.tr.closeCode(); code != 0 {
		t.Fatalf("closed with %d", code)
	}
}

func TestAConnectionThatEndedDoesNotRegister(t *testing.T) {
	w := newWorld(t)
	c := newConn(w.g, newFakeTransport(), ConnInfo{})
	c.mu.Lock()
	c.actor, c.gone = w.ada, true // the reader ended, and detach ran, before the catch-up attached
	c.mu.Unlock()
	w.g.hub.detach(c)
	if _, err := w.g.hub.attach(context.Background(), c, w.ada, nil, w.g.hub.rightsGeneration()); err == nil {
		t.Fatal("attach registered a connection that had ended")
	}
	w.g.hub.mu.Lock()
	defer w.g.hub.mu.Unlock()
	if m := w.g.hub.members[w.ada.ID]; m != nil {
		t.Fatalf("the hub keeps %d connections of ada", len(m.conns))
	}
}
