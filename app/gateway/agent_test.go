package gateway

import (
	"testing"

	"bothy.dev/bothy/app/kernel"
)

// An agent is disabled and enabled by agent.updated (app/agents), which the hub reads like a
// person's user.updated.
func TestAgentDisabledAndEnabled(t *testing.T) {
	w := newWorld(t, Config{})
	w.az.grant(w.bot.ID, w.open, true)
	w.runTail()
	bot := w.connect()
	bot.identify("bot", -1)
	bot.catchUp()

	t.Run("a disabled agent is closed with 4004", func(t *testing.T) {
		seq := w.log.append(kernel.EvAgentUpdated, kernel.Scope{}, w.bot.ID,
			map[string]any{"id": w.bot.ID, "kind": "agent", "status": "disabled"})
		bot.expectClose(CloseAuthFailed)
		w.waitHub(seq)
		waitFor(t, "the agent to leave the hub", func() bool { return w.g.Stats().Members == 0 })
	})
	t.Run("once enabled, it connects again and receives what it may read", func(t *testing.T) {
		seq := w.log.append(kernel.EvAgentUpdated, kernel.Scope{}, w.bot.ID,
			map[string]any{"id": w.bot.ID, "kind": "agent", "status": "active"})
		w.waitHub(seq)
		again := w.connect()
		again.identify("bot", -1)
		again.catchUp()
		m := w.post(w.open, w.openTh, "welcome back")
		if e := again.expectEvent(); e.Seq != m {
			t.Fatalf("got %+v, want the message at %d", e, m)
		}
	})
}
