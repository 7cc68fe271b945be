package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// An agent is disabled and enabled by agent.updated (app/agents), which the hub reads like a
// person's user.updated.
func TestAgentDisabledAndEnabled(t *testing.T) {
	w := newWorld(t)
	w.az.grant(w.bot.ID, w.open, true)
	w.runTail()
	bot := w.connect()
	bot.identify("bot", -1)
	bot.catchUp()

	t.Run("a disabled agent is closed with 4004", func(t *testing.T) {
		seq := w.log.append(agents.EvAgentUpdated.Name, kernel.Scope{}, w.bot.ID,
			map[string]any{"id": w.bot.ID, "kind": "agent", "status": "disabled"})
		bot.expectClose(CloseAuthFailed)
		w.waitHub(seq)
		waitFor(t, "the agent to leave the hub", func() bool { return w.g.Stats().Members == 0 })
	})
	t.Run("once enabled, it connects again and receives what it may read", func(t *testing.T) {
		seq := w.log.append(agents.EvAgentUpdated.Name, kernel.Scope{}, w.bot.ID,
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

// fakePreparer adds "token" to an invocation and holds back one that says "drop".
type fakePreparer struct{ calls atomic.Int64 }

var _ Preparer = (*fakePreparer)(nil)

func (f *fakePreparer) Prepare(_ context.Context, agent kernel.Actor, e kernel.LoggedEvent) ([]byte, bool, error) {
	f.calls.Add(1)
	var d map[string]any
	if err := json.Unmarshal(e.Payload, &d); err != nil {
		return nil, false, err
	}
	if d["drop"] == true {
		return nil, false, nil
	}
	d["token"] = "for-" + string(agent.ID)
	b, err := json.Marshal(d)
	return b, true, err
}

// The agent's own agent.invocation goes through the Preparer, live and in a catch-up (from
// memory or from the log); what it holds back is not delivered.
func TestAgentInvocationIsPrepared(t *testing.T) {
	for _, replay := range []int{DefaultConfig().ReplayBufferEvents, 0} {
		t.Run(fmt.Sprintf("replay buffer %d", replay), func(t *testing.T) {
			w := newWorld(t, func(c *Config) { c.ReplayBufferEvents = replay })
			prep := &fakePreparer{}
			w.g.deps.Preparer, w.g.hub.prepare = prep, prep
			w.az.grant(w.bot.ID, w.open, true)
			w.runTail()
			bot := w.connect()
			bot.identify("bot", -1)
			bot.catchUp()
			want := `"token":"for-` + string(w.bot.ID) + `"`

			inv := w.log.append(runs.EvAgentInvocation.Name, kernel.Scope{PrincipalID: w.bot.ID}, kernel.NewID(), map[string]any{"run_id": "r1"})
			if e := bot.expectEvent(); e.Seq != inv || !strings.Contains(string(e.Data), want) {
				t.Fatalf("live: %+v %s", e, e.Data)
			}
			w.log.append(runs.EvAgentInvocation.Name, kernel.Scope{PrincipalID: w.bot.ID}, kernel.NewID(), map[string]any{"drop": true})
			m := w.post(w.open, w.openTh, "after the held back one")
			if e := bot.expectEvent(); e.Seq != m {
				t.Fatalf("got %+v, want the message at %d", e, m)
			}

			again := w.connect()
			again.identify("bot", inv-1)
			if e := again.expectEvent(); e.Seq != inv || !strings.Contains(string(e.Data), want) {
				t.Fatalf("replayed: %+v %s", e, e.Data)
			}
			if e := again.expectEvent(); e.Seq != m {
				t.Fatalf("replayed %+v, want the message at %d", e, m)
			}
		})
	}
}

// blockingPreparer holds every preparation until release is closed.
type blockingPreparer struct {
	fakePreparer
	started chan struct{}
	release chan struct{}
}

func (b *blockingPreparer) Prepare(ctx context.Context, agent kernel.Actor, e kernel.LoggedEvent) ([]byte, bool, error) {
	b.started <- struct{}{}
	<-b.release
	return b.fakePreparer.Prepare(ctx, agent, e)
}

// The Preparer runs on the agent's connection, not on the hub: while it is slow, everyone else
// gets their events, and the agent gets its own in seq order once it is done.
func TestASlowPreparationHoldsUpOnlyItsConnection(t *testing.T) {
	w := newWorld(t)
	prep := &blockingPreparer{started: make(chan struct{}, 4), release: make(chan struct{})}
	w.g.deps.Preparer, w.g.hub.prepare = prep, prep
	w.az.grant(w.bot.ID, w.open, true)
	w.runTail()
	bot := w.connect()
	bot.identify("bot", -1)
	bot.catchUp()
	ada := w.connect()
	ada.identify("ada", -1)
	ada.catchUp()

	inv := w.log.append(runs.EvAgentInvocation.Name, kernel.Scope{PrincipalID: w.bot.ID}, kernel.NewID(), map[string]any{"run_id": "r1"})
	<-prep.started
	m := w.post(w.open, w.openTh, "while the agent's invocation is prepared")
	if e := ada.expectEvent(); e.Seq != m {
		t.Fatalf("ada got %+v, want the message at %d", e, m)
	}
	bot.quiet()
	close(prep.release)
	if e := bot.expectEvent(); e.Seq != inv || !strings.Contains(string(e.Data), `"token":"for-`) {
		t.Fatalf("the agent got %+v %s first, want its prepared invocation at %d", e, e.Data, inv)
	}
	if e := bot.expectEvent(); e.Seq != m {
		t.Fatalf("the agent got %+v, want the message at %d after its invocation", e, m)
	}
}
