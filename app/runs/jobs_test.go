package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// wantJob fails unless j is the job name for run id, due at.
func wantJob(t *testing.T, j kernel.Job, name string, id kernel.ID, at time.Time) {
	t.Helper()
	args, _ := json.Marshal(j.Args)
	if j.Name != name || string(args) != `{"run_id":"`+string(id)+`"}` || !j.At.Equal(at) || j.Key != string(id) {
		t.Fatalf("job %+v (args %s), want %s for %s at %v", j, args, name, id, at)
	}
}

// lastState is the payload of the last run.state_changed.
func lastState(t *testing.T, f *fixture) runs.StateChange {
	t.Helper()
	evs := f.events(t)
	e := evs[len(evs)-1]
	var sc runs.StateChange
	if err := json.Unmarshal(e.Payload, &sc); e.Type != runs.EvRunStateChanged.Name || err != nil {
		t.Fatalf("last event %s %s: %v", e.Type, e.Payload, err)
	}
	if !e.ActorID.IsZero() {
		t.Fatalf("a job's state change has actor %s", e.ActorID)
	}
	return sc
}

func TestQueuedExpiry(t *testing.T) {
	t.Run("the run and its expiry job are made in the message's unit", func(t *testing.T) {
		f := mustRuns(t)
		f.post(t, invoker, f.message(invoker, echo), false)
		r := f.onlyRun(t)
		jobs := f.jobs.Jobs()
		if len(jobs) != 1 {
			t.Fatalf("jobs %+v", jobs)
		}
		wantJob(t, jobs[0], runs.JobQueuedExpiry, r.ID, r.CreatedAt.Add(2*time.Minute))
	})

	t.Run("a unit that rolls back leaves no job", func(t *testing.T) {
		f := mustRuns(t)
		var state string
		err := f.db.Do(bg, func(ctx context.Context) error {
			if err := f.posted(ctx, invoker, f.message(invoker, echo), false, &state); err != nil {
				return err
			}
			return errors.New("the message's insert failed")
		})
		if err == nil || len(f.jobs.Jobs()) != 0 {
			t.Fatalf("err %v, jobs %+v", err, f.jobs.Jobs())
		}
	})

	t.Run("a run still queued fails agent_unavailable, with no actor", func(t *testing.T) {
		f := mustRuns(t)
		f.post(t, invoker, f.message(invoker, echo), false)
		r := f.onlyRun(t)
		f.clock.Advance(2 * time.Minute)
		if err := f.svc.ExpireQueued(bg, r.ID); err != nil {
			t.Fatal(err)
		}
		got := f.run(t, r.ID)
		if got.Status != runs.StatusFailed || got.Reason != runs.ReasonAgentUnavailable || got.EndedAt == nil {
			t.Fatalf("run %+v", got)
		}
		if sc := lastState(t, f); sc.Status != runs.StatusFailed || *sc.PreviousStatus != runs.StatusQueued {
			t.Fatalf("state change %+v", sc)
		}
		n := len(f.events(t))
		if err := f.svc.ExpireQueued(bg, r.ID); err != nil || len(f.events(t)) != n {
			t.Fatalf("a second run of the job: %v, %d events", err, len(f.events(t))-n)
		}
	})

	t.Run("a started run, and a run that is gone, are left alone", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		n := len(f.events(t))
		if err := f.svc.ExpireQueued(bg, r.ID); err != nil || f.run(t, r.ID).Status != runs.StatusRunning || len(f.events(t)) != n {
			t.Fatalf("err %v, run %+v", err, f.run(t, r.ID))
		}
		if err := f.svc.ExpireQueued(bg, kernel.NewID()); err != nil {
			t.Fatalf("an unknown run: %v", err)
		}
	})
}

func TestCancelTimeout(t *testing.T) {
	t.Run("a cancel of a running run enqueues the timeout in its unit; a queued run's cancel needs none", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		got, err := f.svc.Cancel(bg, manager, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		jobs := f.jobs.Jobs()
		if len(jobs) != 2 {
			t.Fatalf("jobs %+v", jobs)
		}
		wantJob(t, jobs[1], runs.JobCancelTimeout, r.ID, got.CancelRequestedAt.Add(30*time.Second))
		if _, err := f.svc.Cancel(bg, manager, r.ID); err != nil || len(f.jobs.Jobs()) != 2 {
			t.Fatalf("asking again: %v, %d jobs", err, len(f.jobs.Jobs()))
		}

		f2 := mustRuns(t)
		f2.post(t, invoker, f2.message(invoker, echo), false)
		if _, err := f2.svc.Cancel(bg, manager, f2.onlyRun(t).ID); err != nil || len(f2.jobs.Jobs()) != 1 {
			t.Fatalf("queued: %v, jobs %+v", err, f2.jobs.Jobs())
		}
	})

	t.Run("a cancel that fails leaves no job", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		f.store.fail = errors.New("disk full")
		if _, err := f.svc.Cancel(bg, manager, r.ID); err == nil || len(f.jobs.Jobs()) != 1 {
			t.Fatalf("err %v, jobs %+v", err, f.jobs.Jobs())
		}
	})

	t.Run("a run the agent did not confirm ends cancelled with cancel_timeout; a confirmed one is left", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Cancel(bg, manager, r.ID); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(30 * time.Second)
		if err := f.svc.TimeoutCancel(bg, r.ID); err != nil {
			t.Fatal(err)
		}
		got := f.run(t, r.ID)
		if got.Status != runs.StatusCancelled || got.Reason != runs.ReasonCancelTimeout {
			t.Fatalf("run %+v", got)
		}
		if sc := lastState(t, f); *sc.PreviousStatus != runs.StatusRunning {
			t.Fatalf("state change %+v", sc)
		}

		f, r, tok = invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Cancel(bg, manager, r.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Finish(bg, echoActor, r.ID, tok, runs.Finish{Outcome: runs.OutcomeCancelled}); err != nil {
			t.Fatal(err)
		}
		n := len(f.events(t))
		if err := f.svc.TimeoutCancel(bg, r.ID); err != nil || len(f.events(t)) != n || f.run(t, r.ID).Reason != "" {
			t.Fatalf("confirmed: %v, run %+v", err, f.run(t, r.ID))
		}
	})
}

func TestStallCheck(t *testing.T) {
	t.Run("fails the active runs idle past the timeout, a batch at a time, and spares the rest", func(t *testing.T) {
		f := mustRuns(t)
		now := f.clock.Now().UTC().Truncate(time.Microsecond)
		f.seen(t, echo, now) // the agent's consumer is alive: its idle runs are stale
		var made []runs.Run
		for _, c := range []struct {
			status runs.Status
			idle   time.Duration
		}{
			{runs.StatusRunning, 4 * time.Minute},
			{runs.StatusWaitingInput, 5 * time.Minute},
			{runs.StatusRunning, 10 * time.Minute},
			{runs.StatusRunning, time.Minute},       // fresh
			{runs.StatusQueued, 10 * time.Minute},   // queued: the expiry's business
			{runs.StatusSucceeded, 9 * time.Minute}, // ended
		} {
			r := runs.Run{Summary: runs.Summary{ID: kernel.NewID(), AgentID: echo, ThreadID: f.main.ID, ChannelID: f.channel.ID,
				SpaceID: f.channel.SpaceID, InvokedBy: invoker.ID, Status: c.status, CreatedAt: now.Add(-time.Hour),
				LastActivityAt: now.Add(-c.idle), UpdatedAt: now}}
			f.putRun(t, r)
			made = append(made, r)
		}
		n, err := f.svc.FailStalled(bg) // the batch is 2: the two idle longest
		if err != nil || n != 2 {
			t.Fatalf("first check: %d, %v", n, err)
		}
		for _, i := range []int{1, 2} {
			if got := f.run(t, made[i].ID); got.Status != runs.StatusFailed || got.Reason != runs.ReasonStale {
				t.Fatalf("run %d: %+v", i, got)
			}
		}
		if got := typesOf(f.events(t)); !slices.Equal(got, []string{runs.EvRunStateChanged.Name, runs.EvRunStateChanged.Name}) {
			t.Fatalf("events %v", got)
		}
		f.clock.Advance(time.Minute) // run 0 is now 5 minutes idle, run 3 two
		if n, err := f.svc.FailStalled(bg); err != nil || n != 1 || f.run(t, made[0].ID).Reason != runs.ReasonStale {
			t.Fatalf("second check: %d, %v, run %+v", n, err, f.run(t, made[0].ID))
		}
		for _, i := range []int{3, 4, 5} {
			if got := f.run(t, made[i].ID); got.Status != made[i].Status {
				t.Fatalf("run %d changed: %+v", i, got)
			}
		}
		if n, err := f.svc.FailStalled(bg); err != nil || n != 0 {
			t.Fatalf("third check: %d, %v", n, err)
		}
	})

	t.Run("tells interrupted (no consumer seen within the timeout) from stale (consumer alive)", func(t *testing.T) {
		f := mustRuns(t)
		now := f.clock.Now().UTC().Truncate(time.Microsecond)
		f.seen(t, echo, now.Add(-2*time.Minute))   // acked two minutes ago: alive
		f.seen(t, helper, now.Add(-4*time.Minute)) // last seen before the stall timeout of 3m
		// mute's consumer was never seen at all.
		made := map[kernel.ID]runs.Run{}
		for i, agent := range []kernel.ID{echo, helper, mute} {
			r := runs.Run{Summary: runs.Summary{ID: kernel.NewID(), AgentID: agent, ThreadID: f.main.ID, ChannelID: f.channel.ID,
				SpaceID: f.channel.SpaceID, InvokedBy: invoker.ID, Status: runs.StatusRunning, CreatedAt: now.Add(-time.Hour),
				LastActivityAt: now.Add(-time.Duration(6-i) * time.Minute), UpdatedAt: now}}
			f.putRun(t, r)
			made[agent] = r
		}
		if n, err := f.svc.FailStalled(bg); err != nil || n != 2 || f.agents.seenReads != 1 {
			t.Fatalf("first check: %d, %v, %d reads of the consumers", n, err, f.agents.seenReads)
		}
		if n, err := f.svc.FailStalled(bg); err != nil || n != 1 {
			t.Fatalf("second check: %d, %v", n, err)
		}
		for agent, want := range map[kernel.ID]runs.Reason{echo: runs.ReasonStale, helper: runs.ReasonInterrupted, mute: runs.ReasonInterrupted} {
			if got := f.run(t, made[agent].ID); got.Status != runs.StatusFailed || got.Reason != want {
				t.Fatalf("run of %s: %s with %s, want failed with %s", agent, got.Status, got.Reason, want)
			}
		}
		if sc := lastState(t, f); sc.Reason != runs.ReasonInterrupted || *sc.PreviousStatus != runs.StatusRunning {
			t.Fatalf("state change %+v", sc)
		}
		if n, err := f.svc.FailStalled(bg); err != nil || n != 0 || f.agents.seenReads != 2 {
			t.Fatalf("nothing left: %d, %v, %d reads (an empty check reads no consumers)", n, err, f.agents.seenReads)
		}
	})

	t.Run("a patch keeps a run alive", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Minute)
		fresh, err := f.svc.RenewToken(bg, echoActor, r.ID) // the fixture's tokens live a minute
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Patch(bg, echoActor, r.ID, fresh.Token, runs.Patch{Version: 1}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Minute)
		if n, err := f.svc.FailStalled(bg); err != nil || n != 0 {
			t.Fatalf("%d, %v", n, err)
		}
		f.clock.Advance(time.Minute + time.Microsecond)
		if n, err := f.svc.FailStalled(bg); err != nil || n != 1 {
			t.Fatalf("%d, %v", n, err)
		}
	})
}

func TestSigningKeyRotationJob(t *testing.T) {
	t.Run("replaces the key once it has signed for the default rotation", func(t *testing.T) {
		f := mustRuns(t)
		tok, err := f.svc.IssueToken(bg, tokenRun)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(runs.DefaultKeyringOptions().Rotation - time.Second)
		if r, err := f.svc.RotateSigningKey(bg); err != nil || r.Rotated {
			t.Fatalf("rotation before due %+v, %v", r, err)
		}
		f.clock.Advance(time.Second)
		r, err := f.svc.RotateSigningKey(bg)
		if err != nil || !r.Rotated || r.KID == kidOf(t, tok.Token) {
			t.Fatalf("rotation when due %+v, %v", r, err)
		}
	})

	t.Run("a service without a keyring has nothing to rotate", func(t *testing.T) {
		f := mustRuns(t)
		svc := runs.New(runs.Deps{Store: f.store, Agents: f.agents, Structure: f.structure, UoW: f.db, Events: f.db, Authz: f.authz, Clock: f.clock, Jobs: f.jobs}, runs.DefaultConfig())
		if r, err := svc.RotateSigningKey(bg); err != nil || r != (runs.KeyRotation{}) {
			t.Fatalf("rotation %+v, %v", r, err)
		}
	})
}
