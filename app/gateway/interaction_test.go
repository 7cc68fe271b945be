package gateway

import (
	"strings"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// A click on an agent's button (interaction.created, personal to the agent) goes through the
// Preparer like an invocation, live and in a catch-up, so that it carries a token for its
// thread; one the Preparer holds back is not delivered.
func TestInteractionIsPrepared(t *testing.T) {
	w := newWorld(t)
	prep := &fakePreparer{}
	w.g.deps.Preparer, w.g.hub.prepare = prep, prep
	w.az.grant(w.bot.ID, w.open, true)
	w.runTail()
	bot := w.connect()
	bot.identify("bot", -1)
	bot.catchUp()
	want := `"token":"for-` + string(w.bot.ID) + `"`

	in := w.log.append(runs.EvInteractionCreated.Name, kernel.Scope{PrincipalID: w.bot.ID}, kernel.NewID(), map[string]any{"interaction_id": "i1"})
	if e := bot.expectEvent(); e.Seq != in || !strings.Contains(string(e.Data), want) {
		t.Fatalf("live: %+v %s", e, e.Data)
	}
	w.log.append(runs.EvInteractionCreated.Name, kernel.Scope{PrincipalID: w.bot.ID}, kernel.NewID(), map[string]any{"drop": true})
	m := w.post(w.open, w.openTh, "after the held back one")
	if e := bot.expectEvent(); e.Seq != m {
		t.Fatalf("got %+v, want the message at %d", e, m)
	}

	again := w.connect()
	again.identify("bot", in-1)
	if e := again.expectEvent(); e.Seq != in || !strings.Contains(string(e.Data), want) {
		t.Fatalf("replayed: %+v %s", e, e.Data)
	}
	if e := again.expectEvent(); e.Seq != m {
		t.Fatalf("replayed %+v, want the message at %d", e, m)
	}
}
