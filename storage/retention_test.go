package storage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

func TestPruneEventsBefore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		clock := kernel.NewManualClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		db := e.Open(t, storage.Options{Clock: clock})
		appendEvents := func(n int) {
			t.Helper()
			for range n {
				if err := db.Do(ctx, func(ctx context.Context) error {
					db.Append(ctx, kernel.Event{Type: "test.retention", Payload: map[string]any{}})
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		retained := func() int64 {
			t.Helper()
			after, err := db.RetainedAfter(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return after
		}

		if n, err := db.PruneEventsBefore(ctx, clock.Now().Add(time.Hour), 10); err != nil || n != 0 || retained() != 0 {
			t.Fatalf("an empty log: pruned %d (%v), retained after %d", n, err, retained())
		}
		appendEvents(5)
		clock.Advance(2 * time.Hour)
		appendEvents(2)
		head := db.Head()
		if retained() != 0 {
			t.Fatalf("nothing pruned yet, but retained after %d", retained())
		}

		cutoff := clock.Now().Add(-time.Hour)
		for i, want := range []int64{2, 2, 1, 0} {
			n, err := db.PruneEventsBefore(ctx, cutoff, 2)
			if err != nil || n != want {
				t.Fatalf("batch %d pruned %d (%v), want %d", i, n, err, want)
			}
		}
		if got := retained(); got != head-2 {
			t.Fatalf("retained after %d, want %d (the five old events pruned)", got, head-2)
		}
		if evs := storetest.LogAfter(t, db, 0); len(evs) != 2 || evs[0].Seq != head-1 || evs[1].Seq != head {
			t.Fatalf("kept %+v, want the two young events", evs)
		}

		// Everything is old now: the newest event stays all the same, so the head is known.
		clock.Advance(24 * time.Hour)
		if n, err := db.PruneEventsBefore(ctx, clock.Now(), 1000); err != nil || n != 1 {
			t.Fatalf("pruned %d (%v), want 1: all but the newest", n, err)
		}
		if n, err := db.PruneEventsBefore(ctx, clock.Now(), 1000); err != nil || n != 0 {
			t.Fatalf("pruned %d (%v) of a log of one event", n, err)
		}
		if evs := storetest.LogAfter(t, db, 0); len(evs) != 1 || evs[0].Seq != head || retained() != head-1 {
			t.Fatalf("kept %+v, retained after %d; want the head %d alone", evs, retained(), head)
		}
		// The seq goes on after the head.
		appendEvents(1)
		if evs := storetest.LogAfter(t, db, head); len(evs) != 1 || evs[0].Seq != head+1 {
			t.Fatalf("after the prune the next event is %+v, want seq %d", evs, head+1)
		}
	})
}

func TestPruneRevisionsBefore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newMsgEnv(t, eng)
		old := e.post(t, e.alice, e.mainID, "v1", "")
		for _, c := range []string{"v2", "v3"} {
			if _, err := e.svc.EditMessage(ctx, e.alice, old.ID, c); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(48 * time.Hour)
		young := e.post(t, e.alice, e.mainID, "w1", "")
		if _, err := e.svc.EditMessage(ctx, e.alice, young.ID, "w2"); err != nil {
			t.Fatal(err)
		}
		cutoff := e.clock.Now().Add(-24 * time.Hour)
		for i, want := range []int64{1, 1, 0} {
			if n, err := e.db.PruneRevisionsBefore(ctx, cutoff, 1); err != nil || n != want {
				t.Fatalf("batch %d pruned %d (%v), want %d", i, n, err, want)
			}
		}
		if revs, err := e.msgs.Revisions(ctx, old.ID); err != nil || len(revs) != 0 {
			t.Fatalf("the old message keeps %+v (%v)", revs, err)
		}
		if revs, err := e.msgs.Revisions(ctx, young.ID); err != nil || len(revs) != 1 || revs[0].Content != "w1" {
			t.Fatalf("the young message keeps %+v (%v), want its revision w1", revs, err)
		}
		m, err := e.svc.GetMessage(ctx, e.alice, old.ID)
		if err != nil || m.Content != "v3" {
			t.Fatalf("the old message reads %q (%v), want its current content v3", m.Content, err)
		}
	})
}

func TestPruneRunOutputBefore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newRunEnv(t, eng)
		end := func(r runs.Run) {
			t.Helper()
			at := e.clock.Now()
			r.Status, r.Reason, r.EndedAt, r.UpdatedAt = runs.StatusSucceeded, "", &at, at
			if err := e.db.Do(bg, func(ctx context.Context) error { return e.runs.UpdateRun(ctx, r) }); err != nil {
				t.Fatal(err)
			}
		}
		newRun := func(content string) runs.Run {
			t.Helper()
			all := e.threadRuns(t, e.post(t, e.pia, content).ThreadID)
			return all[len(all)-1]
		}
		ended := newRun("@echo one")
		ended = mustPatchRun(t, e, ended, runs.Patch{Version: 1, OutputAppend: "old answer"})
		end(ended)
		running := newRun("@echo two")
		running = mustPatchRun(t, e, running, runs.Patch{Version: 1, OutputAppend: "still going"})
		e.clock.Advance(48 * time.Hour)
		recent := newRun("@echo three")
		recent = mustPatchRun(t, e, recent, runs.Patch{Version: 1, OutputAppend: "new answer"})
		end(recent)

		cutoff := e.clock.Now().Add(-24 * time.Hour)
		for i, want := range []int64{1, 0} {
			if n, err := e.db.PruneRunOutputBefore(bg, cutoff, 1); err != nil || n != want {
				t.Fatalf("batch %d emptied %d runs (%v), want %d", i, n, err, want)
			}
		}
		got, err := e.runs.Run(bg, ended.ID)
		if err != nil || got.Document.Output != "" || got.OutputBytes != 0 || got.Status != runs.StatusSucceeded || e.parts(t, ended.ID) != 0 {
			t.Fatalf("the old ended run: %+v (%v), %d parts", got, err, e.parts(t, ended.ID))
		}
		wantOutput(t, e, running.ID, 1, "still going")
		wantOutput(t, e, recent.ID, 1, "new answer")
	})
}

func TestExpireMessages(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newMsgEnv(t, eng)
		old1 := e.post(t, e.alice, e.mainID, "old secret one", "")
		old2 := e.post(t, e.alice, e.mainID, "old secret two", "")
		e.clock.Advance(48 * time.Hour)
		young := e.post(t, e.alice, e.mainID, "young words", "")
		cutoff := e.clock.Now().Add(-24 * time.Hour)

		for i, want := range []int64{1, 1, 0} {
			if n, err := e.svc.ExpireMessages(ctx, e.msgs, cutoff, 1); err != nil || n != want {
				t.Fatalf("batch %d looked at %d (%v), want %d", i, n, err, want)
			}
		}
		for _, id := range []kernel.ID{old1.ID, old2.ID} {
			m, err := e.svc.GetMessage(ctx, e.alice, id)
			if err != nil || !m.Deleted || m.Content != "" {
				t.Fatalf("an old message after retention: %+v (%v), want its tombstone", m, err)
			}
		}
		if m, err := e.svc.GetMessage(ctx, e.alice, young.ID); err != nil || m.Deleted || m.Content != "young words" {
			t.Fatalf("the young message: %+v (%v)", m, err)
		}
		// As a person's delete: message.deleted is logged (with no actor) and the content of the
		// message.created before it is redacted.
		deleted := 0
		for _, ev := range storetest.LogAfter(t, e.db, e.startSeq) {
			if strings.Contains(string(ev.Payload), "old secret") {
				t.Fatalf("the log still holds the content: %s %s", ev.Type, ev.Payload)
			}
			if ev.Type == "message.deleted" {
				deleted++
				if !ev.ActorID.IsZero() {
					t.Fatalf("retention's message.deleted names the actor %s", ev.ActorID)
				}
			}
		}
		if deleted != 2 {
			t.Fatalf("%d message.deleted logged, want 2", deleted)
		}
	})
}
