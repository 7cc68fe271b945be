package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// identifyOnline identifies c with token without a cursor, catches up, and returns the online
// set of its ready (nil when ready has none).
func (c *client) identifyOnline(token string) []kernel.ID {
	c.t.Helper()
	c.send(`{"op":"identify","d":{"token":"` + token + `"}}`)
	var r struct {
		Online *[]kernel.ID `json:"online"`
	}
	if err := json.Unmarshal(c.expect(OpReady), &r); err != nil {
		c.t.Fatal(err)
	}
	c.catchUp()
	if r.Online == nil {
		return nil
	}
	return *r.Online
}

// presenceUpdates waits a moment and returns (and forgets) the presence.updated frames c got.
func (c *client) presenceUpdates() []presenceD {
	c.t.Helper()
	c.quiet()
	out := c.aside
	c.aside = nil
	return out
}

func (c *client) expectPresence(want ...presenceD) {
	c.t.Helper()
	if got := c.presenceUpdates(); !slices.Equal(got, want) {
		c.t.Fatalf("presence.updated %v, want %v", got, want)
	}
}

func online(id kernel.ID) presenceD  { return presenceD{id, StatusOnline} }
func offline(id kernel.ID) presenceD { return presenceD{id, StatusOffline} }

func sortedIDs(ids ...kernel.ID) []kernel.ID {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// waitLocal waits until the presence counts n connections of id on this node.
func (w *world) waitLocal(id kernel.ID, n int) {
	w.t.Helper()
	waitFor(w.t, fmt.Sprintf("%d connections of %s", n, id), func() bool { return w.g.presence.localCount(id) == n })
}

func TestPresence(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.HeartbeatInterval = time.Hour })
	ada := w.connect()
	bot := w.connect()

	t.Run("the ready of a person lists the people online, the person included", func(t *testing.T) {
		if got := ada.identifyOnline("ada"); !slices.Equal(got, []kernel.ID{w.ada.ID}) {
			t.Fatalf("online %v", got)
		}
	})
	t.Run("an agent's ready has no online set, and an agent is not online", func(t *testing.T) {
		if got := bot.identifyOnline("bot"); got != nil {
			t.Fatalf("online %v", got)
		}
		ada.expectPresence()
		if got := w.g.presence.online(); !slices.Equal(got, []kernel.ID{w.ada.ID}) {
			t.Fatalf("online %v", got)
		}
	})
	bob := w.connect()
	t.Run("a person coming online is told to the other people, not to themselves nor to agents", func(t *testing.T) {
		if got := bob.identifyOnline("bob"); !slices.Equal(got, sortedIDs(w.ada.ID, w.bob.ID)) {
			t.Fatalf("online %v", got)
		}
		ada.expectPresence(online(w.bob.ID))
		bob.expectPresence()
		bot.expectPresence()
	})
	bob2 := w.connect()
	t.Run("a second connection of the same person tells nobody", func(t *testing.T) {
		if got := bob2.identifyOnline("bob"); !slices.Equal(got, sortedIDs(w.ada.ID, w.bob.ID)) {
			t.Fatalf("online %v", got)
		}
		ada.expectPresence()
		bob.expectPresence()
	})
	t.Run("a person with two connections stays online while one is left", func(t *testing.T) {
		bob.hangUp()
		w.waitLocal(w.bob.ID, 1)
		w.clock.Advance(time.Minute)
		w.g.sweep(w.clock.Now())
		ada.expectPresence()
	})
	t.Run("the last connection gone, the person goes offline after the grace period", func(t *testing.T) {
		bob2.hangUp()
		w.waitLocal(w.bob.ID, 0)
		ada.expectPresence()
		w.clock.Advance(4 * time.Second)
		w.g.sweep(w.clock.Now())
		ada.expectPresence()
		w.clock.Advance(time.Second)
		w.g.sweep(w.clock.Now())
		ada.expectPresence(offline(w.bob.ID))
		bot.expectPresence()
		if got := w.g.presence.online(); !slices.Equal(got, []kernel.ID{w.ada.ID}) {
			t.Fatalf("online %v", got)
		}
	})
	t.Run("a reconnect within the grace period tells nobody", func(t *testing.T) {
		owner := w.connect()
		owner.identifyOnline("owner")
		ada.expectPresence(online(w.owner.ID))
		owner.hangUp()
		w.waitLocal(w.owner.ID, 0)
		w.clock.Advance(3 * time.Second)
		w.g.sweep(w.clock.Now())
		again := w.connect()
		if got := again.identifyOnline("owner"); !slices.Equal(got, sortedIDs(w.ada.ID, w.owner.ID)) {
			t.Fatalf("online %v", got)
		}
		w.clock.Advance(time.Minute)
		w.g.sweep(w.clock.Now())
		ada.expectPresence()
		again.expectPresence()
	})
	t.Run("a disabled person goes offline like any other whose connections closed", func(t *testing.T) {
		w.g.PrincipalDisabled(w.owner.ID)
		w.waitLocal(w.owner.ID, 0)
		w.clock.Advance(5 * time.Second)
		w.g.sweep(w.clock.Now())
		ada.expectPresence(offline(w.owner.ID))
	})
	t.Run("an agent going away tells nobody", func(t *testing.T) {
		bot.hangUp()
		waitFor(t, "the bot's connection to end", func() bool { return w.g.Stats().Connections == 1 })
		w.clock.Advance(time.Minute)
		w.g.sweep(w.clock.Now())
		ada.expectPresence()
	})
}

func TestPresenceWithoutGrace(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.HeartbeatInterval, c.PresenceGrace = time.Hour, 0 })
	ada, bob := w.connect(), w.connect()
	ada.identifyOnline("ada")
	bob.identifyOnline("bob")
	ada.expectPresence(online(w.bob.ID))
	bob.hangUp()
	w.waitLocal(w.bob.ID, 0)
	ada.expectPresence(offline(w.bob.ID))
}

func TestPresenceOfAResumedSession(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.HeartbeatInterval = time.Hour })
	ada, bob := w.connect(), w.connect()
	ada.identifyOnline("ada")
	r := bob.identify("bob", -1)
	bob.catchUp()
	ada.expectPresence(online(w.bob.ID))
	bob.hangUp()
	w.waitLocal(w.bob.ID, 0)
	back := w.connect()
	back.send(fmt.Sprintf(`{"op":"resume","d":{"session_id":%q,"seq":0}}`, r.SessionID))
	var ready struct {
		Online []kernel.ID `json:"online"`
	}
	if err := json.Unmarshal(back.expect(OpReady), &ready); err != nil || !slices.Equal(ready.Online, sortedIDs(w.ada.ID, w.bob.ID)) {
		t.Fatalf("ready after resume: online %v (%v)", ready.Online, err)
	}
	back.catchUp()
	w.clock.Advance(time.Minute)
	w.g.sweep(w.clock.Now())
	ada.expectPresence()
}
