package gateway

import (
	"fmt"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// connectFrom opens a connection from addr and reads its hello.
func (w *world) connectFrom(addr string) *client {
	tr := newFakeTransport()
	w.g.Serve(tr, ConnInfo{RemoteAddr: addr + ":40000", Address: addr})
	c := &client{t: w.t, w: w, tr: tr}
	c.expect(OpHello)
	return c
}

// refusedFrom opens a connection from addr that the gateway must close before hello.
func (w *world) refusedFrom(addr string, want CloseCode) {
	w.t.Helper()
	tr := newFakeTransport()
	w.g.Serve(tr, ConnInfo{RemoteAddr: addr + ":40000", Address: addr})
	c := &client{t: w.t, w: w, tr: tr}
	c.expectClose(want)
	select {
	case b := <-tr.out:
		w.t.Fatalf("a refused connection got %s", b)
	default:
	}
}

func TestConnectionsPerPrincipal(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.HeartbeatInterval, c.MaxConnectionsPerPrincipal = time.Hour, 3 })
	w.runTail()
	var adas []*client
	for range 3 {
		c := w.connect()
		c.identify("ada", -1)
		c.catchUp()
		adas = append(adas, c)
	}

	t.Run("the identify past the bound is closed with 4018", func(t *testing.T) {
		c := w.connect()
		c.send(`{"op":"identify","d":{"token":"ada"}}`)
		c.expectClose(CloseTooManyConnections)
		c.tr.mu.Lock()
		r := c.tr.reason
		c.tr.mu.Unlock()
		if r != "too_many_connections" {
			t.Errorf("reason %q", r)
		}
	})
	t.Run("it leaves no session behind and the others keep receiving", func(t *testing.T) {
		waitFor(t, "the refused connection to go", func() bool { return w.g.Stats().Connections == 3 })
		if s := w.g.Stats().Sessions; s != 3 {
			t.Errorf("%d sessions, want the 3 of the admitted connections", s)
		}
		seq := w.post(w.open, w.openTh, "still here")
		for _, c := range adas {
			if e := c.expectEvent(); e.Seq != seq {
				t.Fatalf("got %+v, want seq %d", e, seq)
			}
		}
	})
	t.Run("another principal is not affected", func(t *testing.T) {
		c := w.connect()
		c.identify("bob", -1)
		c.catchUp()
	})
	t.Run("a connection that closes gives its slot back", func(t *testing.T) {
		adas[0].hangUp()
		waitFor(t, "the connection to be forgotten", func() bool { return w.g.Stats().Connections == 3 })
		c := w.connect()
		c.identify("ada", -1)
		c.catchUp()
		adas[0] = c
	})
	t.Run("a resume of a detached session past the bound is closed with 4018 and keeps the session", func(t *testing.T) {
		// A fourth session, then its connection drops: the session waits for a resume.
		w.g.mu.Lock()
		w.g.cfg.MaxConnectionsPerPrincipal = 4
		w.g.mu.Unlock()
		fourth := w.connect()
		r := fourth.identify("ada", -1)
		fourth.catchUp()
		fourth.hangUp()
		waitFor(t, "the connection to be forgotten", func() bool { return w.g.Stats().Connections == 4 })
		filler := w.connect()
		filler.identify("ada", -1)
		filler.catchUp()

		back := w.connect()
		back.send(fmt.Sprintf(`{"op":"resume","d":{"session_id":%q,"seq":0}}`, r.SessionID))
		back.expectClose(CloseTooManyConnections)

		filler.hangUp()
		waitFor(t, "the filler to be forgotten", func() bool { return w.g.Stats().Connections == 4 })
		again := w.connect()
		again.send(fmt.Sprintf(`{"op":"resume","d":{"session_id":%q,"seq":0}}`, r.SessionID))
		if d := again.expect(OpReady); len(d) == 0 {
			t.Fatal("no ready")
		}
	})
}

func TestConnectionsPerPrincipalLetReplacementsThrough(t *testing.T) {
	t.Run("an agent's newer consumer still takes the older over with 4015", func(t *testing.T) {
		w := newWorld(t, func(c *Config) { c.HeartbeatInterval, c.MaxConnectionsPerPrincipal = time.Hour, 1 })
		w.g.deps.Consumers = &fakeConsumers{acked: map[kernel.ID]int64{}}
		w.az.grant(w.bot.ID, w.open, true)
		w.runTail()
		first := w.connect()
		first.identify("bot", -1)
		first.catchUp()
		second := w.connect()
		second.identify("bot", -1)
		second.catchUp()
		first.expectClose(CloseConsumerTakenOver)
	})
	t.Run("a device's newer connection still replaces the older with 4017, another device is refused", func(t *testing.T) {
		w := newWorld(t, func(c *Config) { c.HeartbeatInterval, c.MaxConnectionsPerPrincipal = time.Hour, 1 })
		w.runTail()
		first := w.connect()
		first.identifyDevice("ada", laptop)
		second := w.connect()
		second.identifyDevice("ada", laptop)
		first.expectClose(CloseDeviceReplaced)
		other := w.connect()
		other.send(`{"op":"identify","d":{"token":"ada","device_id":"` + phone + `"}}`)
		other.expectClose(CloseTooManyConnections)
	})
	t.Run("a resume of a session whose connection is open still takes it over with 4006", func(t *testing.T) {
		w := newWorld(t, func(c *Config) { c.HeartbeatInterval, c.MaxConnectionsPerPrincipal = time.Hour, 1 })
		w.runTail()
		first := w.connect()
		r := first.identify("ada", -1)
		first.catchUp()
		second := w.connect()
		second.send(fmt.Sprintf(`{"op":"resume","d":{"session_id":%q,"seq":0}}`, r.SessionID))
		second.expect(OpReady)
		first.expectClose(CloseSessionInvalid)
	})
}

func TestConnectionsPerAddress(t *testing.T) {
	w := newWorld(t, func(c *Config) {
		c.HeartbeatInterval, c.IdentifyTimeout, c.MaxConnectionsPerAddress = time.Hour, 5*time.Second, 2
	})
	w.runTail()
	identified := w.connectFrom("192.0.2.7")
	identified.identify("ada", -1)
	identified.catchUp()
	silent := w.connectFrom("192.0.2.7") // never identifies: it counts all the same

	t.Run("the connection past the bound is closed with 4018 before hello", func(t *testing.T) {
		w.refusedFrom("192.0.2.7", CloseTooManyConnections)
		if n := w.g.Stats().Connections; n != 2 {
			t.Errorf("%d connections, want 2", n)
		}
	})
	t.Run("another address is not affected", func(t *testing.T) {
		c := w.connectFrom("2001:db8::1")
		c.identify("ada", -1)
		c.catchUp()
	})
	t.Run("one that never identifies holds its slot until the identify timeout", func(t *testing.T) {
		w.clock.Advance(6 * time.Second)
		w.g.sweep(w.clock.Now())
		silent.expectClose(CloseNotAuthenticated)
		waitFor(t, "the silent connection to be forgotten", func() bool { return w.g.Stats().Connections == 2 })
		c := w.connectFrom("192.0.2.7")
		c.identify("bob", -1)
		c.catchUp()
	})
	t.Run("a connection without an address is not counted", func(t *testing.T) {
		for range 3 {
			w.connect().identify("bob", -1)
		}
	})
}

func TestConnectionBoundsDefaults(t *testing.T) {
	c := DefaultConfig()
	if c.MaxConnectionsPerPrincipal != 32 || c.MaxConnectionsPerAddress != 256 {
		t.Errorf("defaults %d per principal, %d per address; want 32 and 256", c.MaxConnectionsPerPrincipal, c.MaxConnectionsPerAddress)
	}
	t.Run("0 means no bound", func(t *testing.T) {
		w := newWorld(t, func(c *Config) {
			c.HeartbeatInterval, c.MaxConnectionsPerPrincipal, c.MaxConnectionsPerAddress = time.Hour, 0, 0
		})
		w.runTail()
		for range 40 {
			c := w.connectFrom("192.0.2.9")
			c.identify("ada", -1)
			c.catchUp()
		}
	})
}

func TestNewRefusesAConfigOutOfRange(t *testing.T) {
	for name, tune := range map[string]func(*Config){
		"no heartbeat":             func(c *Config) { c.HeartbeatInterval = 0 },
		"no write timeout":         func(c *Config) { c.WriteTimeout = 0 },
		"an empty outbound queue":  func(c *Config) { c.OutboundQueueMax = 0 },
		"a negative replay buffer": func(c *Config) { c.ReplayBufferEvents = -1 },
		"a negative bound":         func(c *Config) { c.MaxConnectionsPerAddress = -1 },
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			if p := testConfig(tune).problems(false); len(p) != 1 {
				t.Fatalf("problems %q, want one", p)
			}
		})
	}
	t.Run("takes the defaults", func(t *testing.T) {
		if p := DefaultConfig().problems(true); len(p) != 0 {
			t.Fatalf("problems %q", p)
		}
	})
	t.Run("takes zero where a setting can be off", func(t *testing.T) {
		c := testConfig(func(c *Config) {
			c.ReplayBufferEvents, c.PresenceGrace, c.RunPatchCoalesce, c.MaxConnectionsPerPrincipal, c.MaxConnectionsPerAddress = 0, 0, 0, 0, 0
		})
		if p := c.problems(false); len(p) != 0 {
			t.Fatalf("problems %q", p)
		}
	})
}
