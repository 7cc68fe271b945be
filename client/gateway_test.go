package client

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// identified reads hello's answer, which must be an identify with the token, and returns its d.
func identified(fc *fakeConn, interval int) (map[string]any, bool) {
	if !fc.hello(interval) {
		return nil, false
	}
	d, ok := fc.expect(opIdentify)
	if ok && d["token"] != "secret-token" {
		fc.t.Errorf("connection %d: identify with token %v", fc.n, d["token"])
	}
	return d, ok
}

func TestRunHandsEveryEventOnceInOrder(t *testing.T) {
	t.Run("a reconnect that replays overlapping events hands none twice", func(t *testing.T) {
		var resumed map[string]any
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			switch n {
			case 0:
				d, ok := identified(fc, 10_000)
				if !ok {
					return
				}
				if d["cursor"] != float64(0) {
					t.Errorf("first identify with cursor %v, want 0", d["cursor"])
				}
				_ = fc.ready("s1", 3) && fc.events(1, 2, 3) && fc.send(opCatchupComplete, map[string]any{"head_seq": 3}) && fc.events(4, 5)
				// Cut without a close frame, as a dropped network does.
			case 1:
				if !fc.hello(10_000) {
					return
				}
				resumed, _ = fc.expect(opResume)
				_ = fc.send(opResumed, map[string]any{"session_id": "s1", "head_seq": 7}) &&
					fc.events(3, 4, 5, 6, 7) && fc.send(opCatchupComplete, map[string]any{"head_seq": 7}) && fc.events(8)
				fc.waitClosed()
			}
		})
		cl := fg.client(WithCursor(0))
		got, err := runFor(t, cl, 8, 5*time.Second)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
		if want := seqRange(1, 8); !slices.Equal(got, want) {
			t.Errorf("handed %v, want %v", got, want)
		}
		if resumed["session_id"] != "s1" || resumed["seq"] != float64(5) {
			t.Errorf("the second connection resumed with %v, want session s1 at seq 5", resumed)
		}
		if cl.Cursor() != 8 {
			t.Errorf("Cursor() = %d, want 8", cl.Cursor())
		}
	})

	t.Run("an event at or below the cursor is dropped within a connection too", func(t *testing.T) {
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			if _, ok := identified(fc, 10_000); ok {
				_ = fc.ready("s1", 0) && fc.events(1, 2, 2, 1, 3, 3, 4)
				fc.waitClosed()
			}
		})
		got, _ := runFor(t, fg.client(WithCursor(0)), 4, 5*time.Second)
		if want := seqRange(1, 4); !slices.Equal(got, want) {
			t.Errorf("handed %v, want %v", got, want)
		}
	})

	t.Run("a session the server lost is identified again at once with the cursor", func(t *testing.T) {
		var identify map[string]any
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			switch n {
			case 0:
				if _, ok := identified(fc, 10_000); ok {
					_ = fc.ready("s1", 2) && fc.events(1, 2)
				}
			case 1:
				if fc.hello(10_000) {
					if _, ok := fc.expect(opResume); ok {
						fc.close(CloseSessionInvalid, "session invalid")
					}
				}
			case 2:
				var ok bool
				if identify, ok = identified(fc, 10_000); ok {
					_ = fc.ready("s2", 3) && fc.events(2, 3)
					fc.waitClosed()
				}
			}
		})
		var sleeps atomic.Int32
		cl := fg.client(WithCursor(0))
		cl.jitter = func(time.Duration) time.Duration { sleeps.Add(1); return 0 }
		got, _ := runFor(t, cl, 3, 5*time.Second)
		if want := seqRange(1, 3); !slices.Equal(got, want) {
			t.Errorf("handed %v, want %v", got, want)
		}
		if identify["cursor"] != float64(2) {
			t.Errorf("identified after 4006 with cursor %v, want 2", identify["cursor"])
		}
		if n := sleeps.Load(); n != 1 {
			t.Errorf("Run drew %d backoff sleeps, want 1: after a cut, not after 4006", n)
		}
	})

	t.Run("without a cursor the client starts live at the head and continues from there", func(t *testing.T) {
		var first, second map[string]any
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			switch n {
			case 0:
				var ok bool
				if first, ok = identified(fc, 10_000); ok {
					_ = fc.ready("s1", 10) && fc.send(opCatchupComplete, map[string]any{"head_seq": 10}) && fc.events(9, 11)
				}
			case 1:
				if fc.hello(10_000) {
					second, _ = fc.expect(opResume)
					_ = fc.send(opResumed, map[string]any{"session_id": "s1"}) && fc.events(11, 12)
					fc.waitClosed()
				}
			}
		})
		var readies []Ready
		got, _ := runFor(t, fg.client(WithReadyHandler(func(r Ready) { readies = append(readies, r) })), 2, 5*time.Second)
		if len(readies) != 2 || readies[0].Principal.ID != "p1" || readies[0].HeadSeq != 10 || readies[0].Resumed || !readies[1].Resumed {
			t.Errorf("ready handler saw %+v, want the ready of p1 at 10, then a resume", readies)
		}
		if _, has := first["cursor"]; has {
			t.Errorf("the first identify sent cursor %v, want none", first["cursor"])
		}
		if second["seq"] != float64(11) {
			t.Errorf("resumed at %v, want 11", second["seq"])
		}
		if want := []int64{11, 12}; !slices.Equal(got, want) {
			t.Errorf("handed %v, want %v", got, want)
		}
	})

	t.Run("catchup.complete moves the cursor of a client that saw nothing to the head", func(t *testing.T) {
		var second map[string]any
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			switch n {
			case 0:
				if _, ok := identified(fc, 10_000); ok {
					_ = fc.ready("s1", 50) && fc.events(7) && fc.send(opCatchupComplete, map[string]any{"head_seq": 50})
				}
			case 1:
				if fc.hello(10_000) {
					second, _ = fc.expect(opResume)
					_ = fc.send(opResumed, map[string]any{"session_id": "s1"}) && fc.events(50, 51)
					fc.waitClosed()
				}
			}
		})
		got, _ := runFor(t, fg.client(WithCursor(0)), 2, 5*time.Second)
		if second["seq"] != float64(50) {
			t.Errorf("resumed at %v, want 50", second["seq"])
		}
		if want := []int64{7, 51}; !slices.Equal(got, want) {
			t.Errorf("handed %v, want %v", got, want)
		}
	})
}

// TestRunAfterEachCloseCode is a scenario table: the server closes a ready connection with
// code, and Run either ends with an error or reconnects with the op the code calls for.
func TestRunAfterEachCloseCode(t *testing.T) {
	for _, sc := range []struct {
		name    string
		code    int // 0 cuts the connection without a close frame
		wantErr error
		wantOp  string
	}{
		{name: "authentication failed ends Run", code: CloseAuthenticationFailed, wantErr: ErrAuthenticationFailed},
		{name: "resync required ends Run", code: CloseResyncRequired, wantErr: ErrResyncRequired},
		{name: "consumer taken over ends Run", code: CloseConsumerTakenOver, wantErr: ErrReplaced},
		{name: "device replaced ends Run", code: CloseDeviceReplaced, wantErr: ErrReplaced},
		{name: "session invalid identifies", code: CloseSessionInvalid, wantOp: opIdentify},
		{name: "not authenticated identifies", code: CloseNotAuthenticated, wantOp: opIdentify},
		{name: "unknown op resumes", code: CloseUnknownOp, wantOp: opResume},
		{name: "decode error resumes", code: CloseDecodeError, wantOp: opResume},
		{name: "already authenticated resumes", code: CloseAlreadyAuthenticated, wantOp: opResume},
		{name: "message too big resumes", code: CloseMessageTooBig, wantOp: opResume},
		{name: "unknown error resumes", code: CloseUnknownError, wantOp: opResume},
		{name: "rate limited resumes", code: CloseRateLimited, wantOp: opResume},
		{name: "heartbeat timeout resumes", code: CloseHeartbeatTimeout, wantOp: opResume},
		{name: "server restart identifies", code: CloseServerRestart, wantOp: opIdentify},
		{name: "slow consumer resumes", code: CloseSlowConsumer, wantOp: opResume},
		{name: "too many connections resumes", code: CloseTooManyConnections, wantOp: opResume},
		{name: "going away resumes", code: 1001, wantOp: opResume},
		{name: "a cut without a close frame resumes", code: 0, wantOp: opResume},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu     sync.Mutex
				nextOp string
				nextD  map[string]any
			)
			fg := newFakeGateway(t, func(n int, fc *fakeConn) {
				switch n {
				case 0:
					if _, ok := identified(fc, 10_000); ok && fc.ready("s1", 0) && fc.events(1) {
						if sc.code != 0 {
							fc.close(sc.code, "scenario")
						}
					}
				case 1:
					if !fc.hello(10_000) {
						return
					}
					f, ok := fc.read()
					if !ok {
						t.Errorf("the second connection ended before the client spoke")
						return
					}
					mu.Lock()
					nextOp = f.Op
					nextD, _ = decodeD(f)
					mu.Unlock()
					fc.close(CloseAuthenticationFailed, "enough")
				default:
					t.Errorf("connection %d: Run should have ended", n)
				}
			})
			_, err := runFor(t, fg.client(WithCursor(0)), 0, 5*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if sc.wantErr != nil {
				var ce *CloseError
				if !errors.Is(err, sc.wantErr) || !errors.As(err, &ce) || ce.Code != sc.code {
					t.Errorf("Run returned %v, want %v as a *CloseError with code %d", err, sc.wantErr, sc.code)
				}
				if n := len(fg.dialTimes()); n != 1 {
					t.Errorf("Run connected %d times, want once", n)
				}
				return
			}
			if !errors.Is(err, ErrAuthenticationFailed) {
				t.Errorf("Run returned %v, want the second connection's 4004", err)
			}
			if nextOp != sc.wantOp {
				t.Errorf("after the close the client sent %s %v, want %s", nextOp, nextD, sc.wantOp)
			}
			wantSeq := "cursor"
			if sc.wantOp == opResume {
				wantSeq = "seq"
				if nextD["session_id"] != "s1" {
					t.Errorf("resumed session %v, want s1", nextD["session_id"])
				}
			}
			if nextD[wantSeq] != float64(1) {
				t.Errorf("%s with %s %v, want 1", nextOp, wantSeq, nextD[wantSeq])
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Run("the ceiling doubles from the base up to the cap", func(t *testing.T) {
		c := New("http://x", "")
		want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
			4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
		for i, w := range want {
			if got := c.backoffCeiling(i + 1); got != w {
				t.Errorf("ceiling of reconnect %d = %s, want %s", i+1, got, w)
			}
		}
		if got := c.backoffCeiling(1000); got != 30*time.Second {
			t.Errorf("ceiling of reconnect 1000 = %s, want the cap", got)
		}
	})

	t.Run("the sleep is drawn from zero to the ceiling", func(t *testing.T) {
		c := New("http://x", "")
		seen := map[time.Duration]bool{}
		for range 1000 {
			d := c.jitter(time.Second)
			if d < 0 || d > time.Second {
				t.Fatalf("jitter(1s) = %s", d)
			}
			seen[d/(100*time.Millisecond)] = true
		}
		if len(seen) < 8 {
			t.Errorf("1000 draws fell in %d of the 10 tenths of the range", len(seen))
		}
	})

	t.Run("reconnects with growing sleeps and starts over after a stable connection", func(t *testing.T) {
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			switch {
			case n < 5:
				fc.hello(10_000) // and cut before ready
			case n == 5:
				if _, ok := identified(fc, 10_000); ok && fc.ready("s1", 0) {
					time.Sleep(150 * time.Millisecond)
				}
			default:
				if fc.hello(10_000) {
					fc.read()
					fc.close(CloseAuthenticationFailed, "enough")
				}
			}
		})
		fg.refuse = 2
		var (
			mu       sync.Mutex
			ceilings []time.Duration
		)
		cl := fg.client(WithCursor(0), WithBackoff(20*time.Millisecond, 80*time.Millisecond), WithStableAfter(100*time.Millisecond))
		cl.jitter = func(d time.Duration) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			ceilings = append(ceilings, d)
			return d
		}
		_, err := runFor(t, cl, 0, 10*time.Second)
		if !errors.Is(err, ErrAuthenticationFailed) {
			t.Fatalf("Run returned %v", err)
		}
		ms := time.Millisecond
		if want := []time.Duration{20 * ms, 40 * ms, 80 * ms, 80 * ms, 80 * ms, 20 * ms}; !slices.Equal(ceilings, want) {
			t.Errorf("backoff ceilings %v, want %v", ceilings, want)
		}
		dials := fg.dialTimes()
		for i := 1; i < len(dials) && i < len(ceilings); i++ {
			if gap := dials[i].Sub(dials[i-1]); gap < ceilings[i-1] {
				t.Errorf("reconnect %d came %s after the last, before its sleep of %s", i, gap, ceilings[i-1])
			}
		}
	})
}

// A refusal for too many connections lasts until another connection closes: the client never
// retries at once, and with the jitter drawn as 0 it still sleeps the whole ceiling.
func TestBackoffAfterTooManyConnections(t *testing.T) {
	for _, sc := range []struct {
		name  string
		ready bool // refused at identify (false) or closed while ready
	}{{"refused before ready", false}, {"closed while ready", true}} {
		t.Run("sleeps at least the ceiling when "+sc.name, func(t *testing.T) {
			fg := newFakeGateway(t, func(n int, fc *fakeConn) {
				switch n {
				case 0:
					if _, ok := identified(fc, 10_000); ok && (!sc.ready || fc.ready("s1", 0)) {
						fc.close(CloseTooManyConnections, "too_many_connections")
					}
				default:
					if fc.hello(10_000) {
						fc.read()
						fc.close(CloseAuthenticationFailed, "enough")
					}
				}
			})
			cl := fg.client(WithCursor(0), WithBackoff(200*time.Millisecond, time.Second))
			cl.jitter = func(time.Duration) time.Duration { return 0 }
			_, err := runFor(t, cl, 0, 5*time.Second)
			if !errors.Is(err, ErrAuthenticationFailed) {
				t.Fatalf("Run returned %v, want the second connection's 4004", err)
			}
			dials := fg.dialTimes()
			if len(dials) != 2 {
				t.Fatalf("dialled %d times, want 2", len(dials))
			}
			if gap := dials[1].Sub(dials[0]); gap < 200*time.Millisecond {
				t.Errorf("reconnected %s after 4018, before the ceiling of 200ms", gap)
			}
		})
	}
}

func TestHeartbeats(t *testing.T) {
	t.Run("beats every interval", func(t *testing.T) {
		beats := make(chan int, 1)
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			if n > 0 {
				return
			}
			if _, ok := identified(fc, 40); !ok || !fc.ready("s1", 0) {
				return
			}
			// Count the beats of 400 ms; the deadline then cuts the connection.
			deadline := time.Now().Add(400 * time.Millisecond)
			count := 0
			for {
				ctx, cancel := context.WithDeadline(fc.ctx, deadline)
				_, b, err := fc.ws.Read(ctx)
				cancel()
				if err != nil {
					break
				}
				if f, _ := decodeFrame(b); f.Op == opHeartbeat {
					count++
					fc.send(opHeartbeatAck, struct{}{})
				}
			}
			beats <- count
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = fg.client(WithCursor(0)).Run(ctx, func(Event) error { return nil })
		}()
		select {
		case n := <-beats:
			if n < 6 || n > 12 {
				t.Errorf("%d heartbeats in 400 ms at a 40 ms interval, want about 10", n)
			}
		case <-ctx.Done():
			t.Error("no count of heartbeats")
		}
		cancel()
		<-done
	})

	t.Run("answers the server's heartbeat request at once", func(t *testing.T) {
		got := make(chan time.Duration, 1)
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			if _, ok := identified(fc, 60_000); !ok || !fc.ready("s1", 0) {
				return
			}
			start := time.Now()
			if !fc.send(opHeartbeat, struct{}{}) {
				return
			}
			for fc.beats == 0 {
				ctx, cancel := context.WithTimeout(fc.ctx, 2*time.Second)
				_, b, err := fc.ws.Read(ctx)
				cancel()
				if err != nil {
					t.Errorf("no heartbeat after the request: %v", err)
					return
				}
				if f, _ := decodeFrame(b); f.Op == opHeartbeat {
					fc.beats++
				}
			}
			got <- time.Since(start)
			fc.close(CloseAuthenticationFailed, "enough")
		})
		_, err := runFor(t, fg.client(WithCursor(0)), 0, 5*time.Second)
		if !errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("Run returned %v", err)
		}
		select {
		case d := <-got:
			if d > time.Second {
				t.Errorf("the answer took %s", d)
			}
		default:
			t.Error("the server saw no heartbeat")
		}
	})

	t.Run("drops a connection whose heartbeat goes unacknowledged and reconnects", func(t *testing.T) {
		code := make(chan int, 1)
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			switch n {
			case 0:
				fc.autoAck = false
				if _, ok := identified(fc, 30); ok && fc.ready("s1", 0) {
					code <- fc.waitClosed()
				}
			default:
				if fc.hello(10_000) {
					fc.read()
					fc.close(CloseAuthenticationFailed, "enough")
				}
			}
		})
		_, err := runFor(t, fg.client(WithCursor(0)), 0, 5*time.Second)
		if !errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("Run returned %v, want the second connection's 4004", err)
		}
		select {
		case c := <-code:
			if c != CloseHeartbeatTimeout {
				t.Errorf("the client closed with %d, want %d", c, CloseHeartbeatTimeout)
			}
		default:
			t.Error("the first connection did not end")
		}
	})
}

func TestHeartbeatsCountAnyFrameAsLife(t *testing.T) {
	// The server never acknowledges, but events keep coming: the connection is alive.
	fg := newFakeGateway(t, func(n int, fc *fakeConn) {
		if n > 0 {
			t.Errorf("connection %d: the client dropped a connection that was sending", n)
			return
		}
		fc.autoAck = false
		if _, ok := identified(fc, 30); !ok || !fc.ready("s1", 0) {
			return
		}
		for seq := int64(1); seq <= 30; seq++ {
			if !fc.events(seq) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		fc.waitClosed()
	})
	got, _ := runFor(t, fg.client(WithCursor(0)), 30, 5*time.Second)
	if len(got) != 30 {
		t.Errorf("handed %d events, want 30", len(got))
	}
}

func TestHandlers(t *testing.T) {
	t.Run("ephemeral events go to their own handler and move no cursor", func(t *testing.T) {
		var (
			mu        sync.Mutex
			ephemeral []string
		)
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			if _, ok := identified(fc, 10_000); ok && fc.ready("s1", 0) {
				_ = fc.send(opEvent, map[string]any{"type": "typing.started", "data": map[string]any{"thread_id": "t1"}}) &&
					fc.events(1) &&
					fc.send(opEvent, map[string]any{"type": "presence.updated", "data": map[string]any{}}) &&
					fc.events(2)
				fc.waitClosed()
			}
		})
		cl := fg.client(WithCursor(0), WithEphemeralHandler(func(ev Event) error {
			mu.Lock()
			defer mu.Unlock()
			if !ev.Ephemeral() {
				t.Errorf("ephemeral handler got seq %d", ev.Seq)
			}
			ephemeral = append(ephemeral, ev.Type)
			return nil
		}))
		got, _ := runFor(t, cl, 2, 5*time.Second)
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(got, []int64{1, 2}) || !slices.Equal(ephemeral, []string{"typing.started", "presence.updated"}) {
			t.Errorf("handed %v and ephemeral %v", got, ephemeral)
		}
	})

	t.Run("the ready handler gets the people online", func(t *testing.T) {
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			if _, ok := identified(fc, 10_000); ok && fc.send("ready", map[string]any{"session_id": "s1",
				"principal": map[string]any{"id": "p1", "kind": "person"}, "head_seq": 0, "online": []string{"p1", "p2"}}) {
				_ = fc.events(1)
				fc.waitClosed()
			}
		})
		var mu sync.Mutex
		var online []string
		runFor(t, fg.client(WithCursor(0), WithReadyHandler(func(r Ready) {
			mu.Lock()
			defer mu.Unlock()
			online = r.Online
		})), 1, 5*time.Second)
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(online, []string{"p1", "p2"}) {
			t.Errorf("ready's online %v", online)
		}
	})

	t.Run("a handler error ends Run and the next Run hands the same event again", func(t *testing.T) {
		closes := make(chan int, 2)
		var second map[string]any
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			switch n {
			case 0:
				if _, ok := identified(fc, 10_000); ok && fc.ready("s1", 0) && fc.events(1, 2, 3) {
					closes <- fc.waitClosed()
				}
			case 1:
				var ok bool
				if second, ok = identified(fc, 10_000); ok && fc.ready("s2", 3) && fc.events(2, 3) {
					fc.waitClosed()
				}
			}
		})
		cl := fg.client(WithCursor(0))
		boom := errors.New("boom")
		var handed []int64
		err := cl.Run(context.Background(), func(ev Event) error {
			if ev.Seq == 2 {
				return boom
			}
			handed = append(handed, ev.Seq)
			return nil
		})
		if !errors.Is(err, boom) || cl.Cursor() != 1 {
			t.Fatalf("Run returned %v with cursor %d, want boom at cursor 1", err, cl.Cursor())
		}
		if c := <-closes; c != 1000 {
			t.Errorf("the client closed with %d, want 1000", c)
		}
		got, _ := runFor(t, cl, 2, 5*time.Second)
		if !slices.Equal(append(handed, got...), []int64{1, 2, 3}) {
			t.Errorf("handed %v then %v", handed, got)
		}
		if second["cursor"] != float64(1) {
			t.Errorf("the next Run identified with cursor %v, want 1", second["cursor"])
		}
	})

	t.Run("a cancelled context closes the connection normally", func(t *testing.T) {
		closes := make(chan int, 1)
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			if _, ok := identified(fc, 10_000); ok && fc.ready("s1", 0) && fc.events(1) {
				closes <- fc.waitClosed()
			}
		})
		_, err := runFor(t, fg.client(WithCursor(0)), 1, 5*time.Second)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v", err)
		}
		select {
		case c := <-closes:
			if c != 1000 {
				t.Errorf("closed with %d, want 1000", c)
			}
		case <-time.After(3 * time.Second):
			t.Error("the server saw no close")
		}
	})

	t.Run("Send reaches the server while connected and fails between connections", func(t *testing.T) {
		typing := make(chan map[string]any, 1)
		fg := newFakeGateway(t, func(n int, fc *fakeConn) {
			if _, ok := identified(fc, 10_000); ok && fc.ready("s1", 0) && fc.events(1) {
				d, _ := fc.expect("typing.start")
				typing <- d
				fc.waitClosed()
			}
		})
		cl := fg.client(WithCursor(0))
		if err := cl.StartTyping(context.Background(), "t1"); !errors.Is(err, errNotConnected) {
			t.Errorf("StartTyping before Run: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = cl.Run(ctx, func(Event) error {
			if err := cl.StartTyping(ctx, "t1"); err != nil {
				t.Errorf("StartTyping from the handler: %v", err)
			}
			cancel()
			return nil
		})
		select {
		case d := <-typing:
			if d["thread_id"] != "t1" {
				t.Errorf("typing.start %v", d)
			}
		case <-time.After(3 * time.Second):
			t.Error("the server got no typing.start")
		}
	})

	t.Run("Run refuses a second Run and a bad base URL", func(t *testing.T) {
		if err := New("ftp://x", "t").Run(context.Background(), func(Event) error { return nil }); err == nil {
			t.Error("Run on ftp://x did not fail")
		}
		cl := New("http://127.0.0.1:1", "t")
		cl.running.Store(true)
		if err := cl.Run(context.Background(), func(Event) error { return nil }); err == nil {
			t.Error("a second Run did not fail")
		}
	})
}
