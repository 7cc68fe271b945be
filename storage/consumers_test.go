package storage_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

func TestConsumerStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := storage.NewConsumerStore(db)
		bot := mustPrincipal(t, db, "bot", false, "active").ID
		other := mustPrincipal(t, db, "other", false, "active").ID
		at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		acked := func(t *testing.T, agent kernel.ID) (int64, bool) {
			t.Helper()
			seq, ok, err := s.AckedSeq(ctx, agent)
			if err != nil {
				t.Fatal(err)
			}
			return seq, ok
		}
		if _, ok := acked(t, bot); ok {
			t.Fatal("a cursor before any ack")
		}
		if err := s.SaveAcks(ctx, map[kernel.ID]int64{bot: 7, other: 3}, at); err != nil {
			t.Fatal(err)
		}
		if seq, ok := acked(t, bot); !ok || seq != 7 {
			t.Fatalf("bot's cursor %d %v, want 7", seq, ok)
		}
		if err := s.SaveAcks(ctx, map[kernel.ID]int64{bot: 5, other: 9}, at.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if seq, _ := acked(t, bot); seq != 7 {
			t.Fatalf("a lower ack moved bot's cursor back to %d", seq)
		}
		if seq, _ := acked(t, other); seq != 9 {
			t.Fatalf("other's cursor %d, want 9", seq)
		}
		if err := s.SaveAcks(ctx, map[kernel.ID]int64{bot: 8, kernel.NewID(): 1}, at); err == nil {
			t.Fatal("saved the cursor of a principal that does not exist")
		}
		if seq, _ := acked(t, bot); seq != 7 {
			t.Fatalf("a failed save changed bot's cursor to %d: the acks are saved together or not at all", seq)
		}
	})
}

func TestConsumersSeen(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := storage.NewConsumerStore(db)
		a := storage.NewAgentStore(db)
		bot := mustPrincipal(t, db, "bot", false, "active").ID
		other := mustPrincipal(t, db, "other", false, "active").ID
		never := mustPrincipal(t, db, "never", false, "active").ID
		at := time.Date(2026, 3, 1, 10, 0, 0, 123456000, time.UTC)
		seen := func(t *testing.T) map[kernel.ID]time.Time {
			t.Helper()
			got, err := a.ConsumersSeen(ctx, []kernel.ID{bot, other, never})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := seen(t); len(got) != 0 {
			t.Fatalf("seen before any save: %v", got)
		}
		if err := s.SaveAcks(ctx, map[kernel.ID]int64{bot: 7, other: 3}, at); err != nil {
			t.Fatal(err)
		}
		if got := seen(t); len(got) != 2 || !got[bot].Equal(at) || !got[other].Equal(at) {
			t.Fatalf("after the first save %v", got)
		}

		t.Run("an ack that does not move the cursor still counts as a sign of life", func(t *testing.T) {
			later := at.Add(time.Minute)
			if err := s.SaveAcks(ctx, map[kernel.ID]int64{bot: 7, other: 2}, later); err != nil {
				t.Fatal(err)
			}
			if got := seen(t); !got[bot].Equal(later) || !got[other].Equal(later) {
				t.Fatalf("seen %v, want both at %v", got, later)
			}
			if seq, _, _ := s.AckedSeq(ctx, other); seq != 3 {
				t.Fatalf("a lower ack moved the cursor to %d", seq)
			}
		})

		t.Run("a late save never moves seen back", func(t *testing.T) {
			if err := s.SaveAcks(ctx, map[kernel.ID]int64{bot: 9}, at); err != nil {
				t.Fatal(err)
			}
			if got := seen(t); !got[bot].Equal(at.Add(time.Minute)) {
				t.Fatalf("seen %v", got[bot])
			}
			if seq, _, _ := s.AckedSeq(ctx, bot); seq != 9 {
				t.Fatalf("the late save's higher ack did not move the cursor: %d", seq)
			}
		})

		t.Run("seeing a consumer raises seen_at only, and never for an agent without a cursor", func(t *testing.T) {
			later := at.Add(2 * time.Minute)
			if err := s.SeeConsumers(ctx, []kernel.ID{bot, never}, later); err != nil {
				t.Fatal(err)
			}
			got := seen(t)
			if !got[bot].Equal(later) || !got[other].Equal(at.Add(time.Minute)) || len(got) != 2 {
				t.Fatalf("seen %v", got)
			}
			if seq, _, _ := s.AckedSeq(ctx, bot); seq != 9 {
				t.Fatalf("seeing moved the cursor to %d", seq)
			}
			if err := s.SeeConsumers(ctx, []kernel.ID{bot}, at); err != nil {
				t.Fatal(err)
			}
			if got := seen(t); !got[bot].Equal(later) {
				t.Fatalf("an earlier sighting moved seen back to %v", got[bot])
			}
		})

		t.Run("asking for nobody reads nothing", func(t *testing.T) {
			if got, err := a.ConsumersSeen(ctx, nil); err != nil || len(got) != 0 {
				t.Fatalf("%v, %v", got, err)
			}
		})
	})
}

func TestAgentStorePrincipal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		a := storage.NewAgentStore(db)
		for _, c := range []struct {
			handle string
			owner  bool
			status string
		}{{"olga", true, "active"}, {"paul", false, "active"}, {"gone", false, "disabled"}} {
			want := mustPrincipal(t, db, c.handle, c.owner, c.status)
			got, active, err := a.Principal(ctx, want.ID)
			if err != nil || got != want || active != (c.status == "active") {
				t.Fatalf("%s: %+v active %v (%v), want %+v", c.handle, got, active, err, want)
			}
		}
		if _, _, err := a.Principal(ctx, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("an unknown principal: %v", err)
		}
	})
}

// TestAgentConsumerStartsAtCreation holds that a new agent's consumer has its cursor from the
// agent's creation on, so that a mention made before the agent's first connection is delivered
// to it, and that an agent created before cursors began there starts before its creation too.
func TestAgentConsumerStartsAtCreation(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newAgentEnv(t, eng)
		s := storage.NewConsumerStore(e.db)
		createdSeq := func(t *testing.T, agent kernel.ID) int64 {
			t.Helper()
			for _, ev := range e.events(t) {
				if ev.Type == agents.EvAgentCreated.Name && ev.SubjectID == agent {
					return ev.Seq
				}
			}
			t.Fatalf("no agent.created for %s", agent)
			return 0
		}

		t.Run("the cursor is stored with the agent, just before its agent.created, in a batch shared with other writes", func(t *testing.T) {
			// Units that run in one group commit: the cursor of each agent must not count the
			// events of the units before it in the batch as its own, nor miss its own.
			var wg sync.WaitGroup
			made := make(chan kernel.ID, 8)
			for i := range 8 {
				wg.Add(2)
				go func() {
					defer wg.Done()
					_ = e.db.Do(bg, func(ctx context.Context) error {
						e.db.Append(ctx, kernel.Event{Type: "test.noise", Payload: struct{}{}})
						e.db.Append(ctx, kernel.Event{Type: "test.noise", Payload: struct{}{}})
						return nil
					})
				}()
				go func() {
					defer wg.Done()
					a, _, err := e.svc.Create(bg, e.olga, agents.NewAgent{Handle: fmt.Sprintf("batch%d", i), DisplayName: "Batch"})
					if err != nil {
						t.Error(err)
						return
					}
					made <- a.ID
				}()
			}
			wg.Wait()
			close(made)
			var ids []kernel.ID
			for id := range made {
				ids = append(ids, id)
				seq, ok, err := s.AckedSeq(bg, id)
				if err != nil || !ok || seq != createdSeq(t, id)-1 {
					t.Fatalf("cursor %d (stored %v, %v), want %d, the seq before its agent.created", seq, ok, err, createdSeq(t, id)-1)
				}
			}
			if len(ids) != 8 {
				t.Fatalf("%d agents made, want 8", len(ids))
			}
			if seen, err := e.agents.ConsumersSeen(bg, ids); err != nil || len(seen) != 0 {
				t.Fatalf("a consumer that never connected counts as seen: %v (%v)", seen, err)
			}
		})

		t.Run("a refused create stores no cursor", func(t *testing.T) {
			before := e.count(t, "agent_consumers")
			if _, _, err := e.svc.Create(bg, e.olga, agents.NewAgent{Handle: "batch0", DisplayName: "Again"}); !kernel.IsCode(err, kernel.CodeConflict) {
				t.Fatalf("a taken handle: %v", err)
			}
			if n := e.count(t, "agent_consumers"); n != before {
				t.Fatalf("%d cursors after a refused create, want %d", n, before)
			}
		})

		t.Run("an agent whose cursor was never stored starts just before its agent.created", func(t *testing.T) {
			a, _ := e.create(t, "older")
			if err := e.db.Do(bg, func(ctx context.Context) error {
				_, err := e.db.Exec(ctx, `DELETE FROM agent_consumers WHERE agent_id = ?`, string(a.ID)) // as an older version left it
				return err
			}); err != nil {
				t.Fatal(err)
			}
			e.create(t, "later") // the head moves on
			seq, ok, err := s.AckedSeq(bg, a.ID)
			if err != nil || ok || seq != createdSeq(t, a.ID)-1 {
				t.Fatalf("cursor %d (stored %v, %v), want %d, not stored", seq, ok, err, createdSeq(t, a.ID)-1)
			}
		})

		t.Run("a principal whose creation the log does not hold starts at the head", func(t *testing.T) {
			p := mustPrincipal(t, e.db, "bare", false, "active").ID
			head, err := e.db.ReadHead(bg)
			if err != nil {
				t.Fatal(err)
			}
			if seq, ok, err := s.AckedSeq(bg, p); err != nil || ok || seq != head {
				t.Fatalf("cursor %d (stored %v, %v), want the head %d", seq, ok, err, head)
			}
		})
	})
}
