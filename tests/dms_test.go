package tests

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// dmView is a direct message as the API answers it.
type dmView struct {
	ID           string   `json:"id"`
	Kind         string   `json:"kind"`
	SpaceID      string   `json:"space_id"`
	MainThreadID string   `json:"main_thread_id"`
	Participants []string `json:"participants"`
}

func (c *client) mustDM(tb testing.TB, want int, others ...string) dmView {
	tb.Helper()
	var d dmView
	c.do(tb, http.MethodPost, api("dms"), map[string]any{"participant_ids": others}).want(tb, want).decode(tb, &d)
	return d
}

// TestDirectMessages: a person starts a DM with another; the same participants, also from 20
// requests at once, make one DM; only the participants see it, its messages and its events, over
// REST and over the gateway (a third person and the owner get 404 and none of its events); a
// group DM can be left, a DM between two cannot; nine others (validation_failed, 400 like every
// validation failure) and an unknown or disabled participant (404) are refused and create nothing.
func TestDirectMessages(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		carolU, carol := w.in.mustCreateUser(t, "carol")
		for _, id := range []string{carolU.ID} {
			w.in.owner.mustGrant(t, w.lobby.ID, id, "view")
		}
		start := w.in.owner.mustHead(t)
		carolBot := mustStartBot(t, "carol", w.in.srv.public, carol.token, botclient.WithCursor(start))
		ownerBot := mustStartBot(t, "owner", w.in.srv.public, w.in.owner.token, botclient.WithCursor(start))
		bobBot := mustStartBot(t, "bob", w.in.srv.public, w.bob.token, botclient.WithCursor(start))

		dm := w.alice.mustDM(t, http.StatusCreated, w.bobU.ID)
		want := []string{w.aliceU.ID, w.bobU.ID}
		slices.Sort(want)
		if dm.Kind != "dm" || !slices.Equal(dm.Participants, want) || dm.MainThreadID == "" {
			t.Fatalf("dm %+v", dm)
		}
		hello := w.bob.mustPost(t, dm.MainThreadID, "hello alice")

		t.Run("the same participants answer the same DM, also from 20 requests at once", func(t *testing.T) {
			if again := w.bob.mustDM(t, http.StatusOK, w.aliceU.ID); again.ID != dm.ID {
				t.Fatalf("bob's DM with alice is %s, alice's %s", again.ID, dm.ID)
			}
			var wg sync.WaitGroup
			ids := make([]string, 20)
			statuses := make([]int, 20)
			for i := range 20 {
				wg.Go(func() {
					var d dmView
					r := w.alice.do(t, http.MethodPost, api("dms"), map[string]any{"participant_ids": []string{w.bobU.ID, carolU.ID}})
					statuses[i] = r.status
					r.decode(t, &d)
					ids[i] = d.ID
				})
			}
			wg.Wait()
			created := 0
			for i := range 20 {
				if statuses[i] == http.StatusCreated {
					created++
				} else if statuses[i] != http.StatusOK {
					t.Fatalf("request %d: status %d", i, statuses[i])
				}
				if ids[i] != ids[0] {
					t.Fatalf("request %d answered DM %s, request 0 %s", i, ids[i], ids[0])
				}
			}
			if created != 1 {
				t.Fatalf("%d of 20 requests created the DM, want 1", created)
			}
			var mine page[dmView]
			w.alice.do(t, http.MethodGet, api("dms"), nil).want(t, http.StatusOK).decode(t, &mine)
			if len(mine.Items) != 2 {
				t.Fatalf("alice lists %d DMs, want 2", len(mine.Items))
			}
		})

		t.Run("a third person and the owner see neither the DM nor its messages nor its events", func(t *testing.T) {
			for name, c := range map[string]*client{"carol": carol, "owner": w.in.owner} {
				c.do(t, http.MethodGet, api("channels", dm.ID), nil).want(t, http.StatusNotFound)
				c.do(t, http.MethodGet, api("threads", dm.MainThreadID, "messages"), nil).want(t, http.StatusNotFound)
				c.do(t, http.MethodGet, api("messages", hello.ID), nil).want(t, http.StatusNotFound)
				c.do(t, http.MethodPost, api("threads", dm.MainThreadID, "messages"), map[string]any{"content": "hi"}).want(t, http.StatusNotFound)
				evs, _ := c.mustAllEvents(t, start)
				for _, e := range evs {
					if e.ChannelID == dm.ID {
						t.Errorf("%s reads %s of the DM over REST", name, e.Type)
					}
				}
				var theirs page[dmView]
				c.do(t, http.MethodGet, api("dms"), nil).want(t, http.StatusOK).decode(t, &theirs)
				for _, d := range theirs.Items {
					if d.ID == dm.ID {
						t.Errorf("%s lists the DM", name)
					}
				}
			}
			w.in.owner.do(t, http.MethodGet, api("spaces", dm.SpaceID), nil).want(t, http.StatusNotFound)
			fence := w.mustFence(t)
			for _, b := range []*bot{carolBot, ownerBot} {
				b.waitSeq(t, fence, 10*time.Second)
				for _, e := range b.handed() {
					if e.ChannelID == dm.ID {
						t.Errorf("%s was handed %s of the DM over the gateway", b.name, e.Type)
					}
				}
			}
			bobBot.waitSeq(t, fence, 10*time.Second)
			var got []string
			for _, e := range bobBot.handed() {
				if e.ChannelID == dm.ID {
					got = append(got, e.Type)
				}
			}
			if !slices.Contains(got, "dm.created") || !slices.Contains(got, "message.created") {
				t.Errorf("bob was handed %v of the DM, want dm.created and message.created", got)
			}
		})

		t.Run("a group DM can be left, a DM between two cannot", func(t *testing.T) {
			group := w.alice.mustDM(t, http.StatusOK, w.bobU.ID, carolU.ID)
			w.alice.do(t, http.MethodPost, api("dms", dm.ID, "leave"), nil).want(t, http.StatusConflict).wantProblem(t, "dm_cannot_leave")
			w.in.owner.do(t, http.MethodPost, api("dms", group.ID, "leave"), nil).want(t, http.StatusNotFound)
			var left dmView
			carol.do(t, http.MethodPost, api("dms", group.ID, "leave"), nil).want(t, http.StatusOK).decode(t, &left)
			if len(left.Participants) != 2 || slices.Contains(left.Participants, carolU.ID) {
				t.Fatalf("after carol left: %v", left.Participants)
			}
			carol.do(t, http.MethodGet, api("channels", group.ID), nil).want(t, http.StatusNotFound)
		})

		t.Run("nine others, an unknown and a disabled participant are refused and create nothing", func(t *testing.T) {
			var nine []string
			for i := range 9 {
				u, _ := w.in.mustCreateUser(t, uniqueName("p")+string(rune('a'+i)))
				nine = append(nine, u.ID)
			}
			w.alice.do(t, http.MethodPost, api("dms"), map[string]any{"participant_ids": nine}, breaksDocument()).want(t, http.StatusBadRequest).wantProblem(t, "validation_failed")
			w.alice.do(t, http.MethodPost, api("dms"), map[string]any{"participant_ids": []string{w.bobU.ID, "0190a000-0000-7000-8000-000000000000"}}).want(t, http.StatusNotFound)
			w.in.owner.do(t, http.MethodPost, api("users", nine[0], "disable"), nil).want(t, http.StatusOK)
			afterDisable := w.in.owner.mustHead(t)
			w.alice.do(t, http.MethodPost, api("dms"), map[string]any{"participant_ids": []string{nine[0]}}).want(t, http.StatusNotFound)
			if head := w.in.owner.mustHead(t); head != afterDisable {
				t.Fatalf("refused DMs moved the head from %d to %d", afterDisable, head)
			}
		})
	})
}

// wantProblem checks the stable code of a problem answer.
func (r *response) wantProblem(tb testing.TB, code string) {
	tb.Helper()
	if got := r.code(); got != code {
		tb.Fatalf("%s: code %q, want %q", r, got, code)
	}
}

// TestDirectMessageWithAnAgent: a DM with an agent is a conversation with it: a person's message
// there, without a mention, invokes the agent, which answers in the DM; its answer invokes
// nothing more.
func TestDirectMessageWithAnAgent(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		a, ac := w.in.mustCreateAgent(t, "pinger")
		start := w.in.owner.mustHead(t)
		ac.do(t, http.MethodPost, api("agents", "me", "ack"), map[string]any{"seq": start}).want(t, http.StatusNoContent)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- botclient.NewAgent(w.in.srv.public, a.Token).Run(ctx, pong(t, nil)) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Agent.Run = %v", err)
			}
		})

		dm := w.alice.mustDM(t, http.StatusCreated, a.ID)
		mid, state := postedMessage(t, w.alice, dm.MainThreadID, "ping, without naming you")
		if state != "triggered" {
			t.Fatalf("trigger state %v", state)
		}
		answer := answerOf(t, w.alice, dm.MainThreadID, start)
		if answer["content"] != "pong" || answer["author_id"] != a.ID {
			t.Fatalf("answer %v", answer)
		}
		var pg page[runView]
		w.alice.do(t, http.MethodGet, api("threads", dm.MainThreadID, "runs"), nil).want(t, http.StatusOK).decode(t, &pg)
		if len(pg.Items) != 1 || pg.Items[0].TriggerMessageID == nil || *pg.Items[0].TriggerMessageID != mid {
			t.Fatalf("runs in the DM %+v, want the one of alice's message", pg.Items)
		}
	})
}
