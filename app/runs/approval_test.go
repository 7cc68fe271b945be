package runs_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage"
)

// asking is the fixture's service with the real approvals store, and a started run of echo,
// invoked by invoker, with its token. Reading a thread is allowed as reading its runs is, and
// anyone signed in reads their own inbox.
func asking(t *testing.T) (*fixture, runs.Run, string) {
	t.Helper()
	f := mustRuns(t)
	f.authz = &kerneltest.Authz{Fn: func(actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
		switch action {
		case runs.ActApprovalInbox:
			if !actor.Authenticated() {
				return kernel.Errorf(kernel.CodeUnauthenticated, "no principal")
			}
			return nil
		case chat.ActThreadRead:
			action = runs.ActRunRead
		}
		return f.decide(actor, action, r)
	}}
	f.svc = runs.New(runs.Deps{Store: f.store, Agents: f.agents, Structure: f.structure, UoW: f.db, Events: f.db, Authz: f.authz,
		Clock: f.clock, Keys: runs.NewKeyring(&fakeKeys{}, f.clock), Jobs: f.jobs, DMs: f.dms, Approvals: storage.NewApprovalStore(f.db)},
		kerneltest.With(runs.DefaultConfig(), func(c *runs.Config) {
			c.TokenTTL, c.QueuedTimeout, c.StallTimeout, c.CancelGrace, c.StallBatch = time.Hour, 2*time.Minute, 3*time.Minute, 30*time.Second, 2
		}))
	f.post(t, invoker, f.message(invoker, echo), false)
	r := f.onlyRun(t)
	tok, err := f.svc.IssueToken(bg, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Start(bg, echoActor, r.ID, tok.Token); err != nil {
		t.Fatal(err)
	}
	return f, r, tok.Token
}

func (f *fixture) ask(tb testing.TB, r runs.Run, tok string, in runs.ApprovalInput) runs.Approval {
	tb.Helper()
	a, err := f.svc.RequestApproval(bg, echoActor, r.ID, tok, in)
	if err != nil {
		tb.Fatalf("request %+v: %v", in, err)
	}
	return a
}

func TestApprovals(t *testing.T) {
	t.Run("a request makes a pending approval for the invoker, waits the run and enqueues its timeout", func(t *testing.T) {
		f, r, tok := asking(t)
		n := len(f.events(t))
		a := f.ask(t, r, tok, runs.ApprovalInput{Title: "Delete the branch", Detail: "feature/x", TimeoutS: 30})
		if a.State != runs.ApprovalPending || !slices.Equal(a.ApproverIDs, []kernel.ID{invoker.ID}) || a.RunID != r.ID ||
			a.ThreadID != r.ThreadID || !a.ExpiresAt.Equal(a.CreatedAt.Add(30*time.Second)) || a.Decision != nil || a.By != nil {
			t.Fatalf("approval %+v", a)
		}
		if got := f.run(t, r.ID); got.Status != runs.StatusWaitingInput {
			t.Fatalf("run is %s", got.Status)
		}
		evs := f.eventsSince(t, n)
		if got := typesOf(evs); !slices.Equal(got, []string{runs.EvApprovalRequested.Name, runs.EvRunStateChanged.Name}) {
			t.Fatalf("events %v", got)
		}
		if evs[0].Scope != (kernel.Scope{SpaceID: r.SpaceID, ChannelID: r.ChannelID, ThreadID: r.ThreadID}) ||
			!strings.Contains(string(evs[0].Payload), `"approver_ids":["`+string(invoker.ID)+`"]`) {
			t.Fatalf("approval.requested %+v %s", evs[0].Scope, evs[0].Payload)
		}
		jobs := f.jobs.Jobs()
		last := jobs[len(jobs)-1]
		if last.Name != runs.JobApprovalTimeout || !last.At.Equal(a.ExpiresAt) || last.Key != string(a.ID) {
			t.Fatalf("job %+v", last)
		}
		got, err := f.svc.GetApproval(bg, viewer, a.ID)
		if err != nil || got.ID != a.ID || got.Title != "Delete the branch" {
			t.Fatalf("get %+v %v", got, err)
		}
		if _, err := f.svc.GetApproval(bg, stranger, a.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("a stranger reads it: %v", err)
		}
	})

	t.Run("a request refuses bad input and approvers who cannot read the thread, and changes nothing", func(t *testing.T) {
		f, r, tok := asking(t)
		n := len(f.events(t))
		for _, c := range []struct {
			in    runs.ApprovalInput
			code  kernel.Code
			field string
		}{
			{runs.ApprovalInput{}, kernel.CodeValidation, "title"},
			{runs.ApprovalInput{Title: strings.Repeat("t", runs.MaxApprovalTitleBytes+1)}, kernel.CodeValidation, "title"},
			{runs.ApprovalInput{Title: "ok", Detail: strings.Repeat("d", runs.MaxApprovalDetailBytes+1)}, kernel.CodeValidation, "detail"},
			{runs.ApprovalInput{Title: "ok", TimeoutS: 86401}, kernel.CodeValidation, "timeout_s"},
			{runs.ApprovalInput{Title: "ok", TimeoutS: -1}, kernel.CodeValidation, "timeout_s"},
			{runs.ApprovalInput{Title: "ok", ApproverIDs: []kernel.ID{stranger.ID}}, runs.CodeApproverInvalid, "approver_ids"},
			{runs.ApprovalInput{Title: "ok", ApproverIDs: []kernel.ID{viewer.ID, echo}}, runs.CodeApproverInvalid, "approver_ids"},
			{runs.ApprovalInput{Title: "ok", ApproverIDs: []kernel.ID{kernel.NewID()}}, runs.CodeApproverInvalid, "approver_ids"},
		} {
			_, err := f.svc.RequestApproval(bg, echoActor, r.ID, tok, c.in)
			var e *kernel.Error
			if !kernel.IsCode(err, c.code) || !asError(err, &e) || e.Field != c.field {
				t.Errorf("%+v: %v, want %s on %s", c.in, err, c.code, c.field)
			}
		}
		if _, err := f.svc.RequestApproval(bg, echoActor, r.ID, "", runs.ApprovalInput{Title: "ok"}); !kernel.IsCode(err, runs.CodeInvocationTokenInvalid) {
			t.Errorf("without a token: %v", err)
		}
		if got := f.eventsSince(t, n); len(got) != 0 {
			t.Fatalf("refused requests logged %v", typesOf(got))
		}
		if got := f.run(t, r.ID); got.Status != runs.StatusRunning {
			t.Fatalf("run is %s", got.Status)
		}
	})

	t.Run("an approver's decision is logged and resumes the run; others are refused, and a second decision too", func(t *testing.T) {
		f, r, tok := asking(t)
		a := f.ask(t, r, tok, runs.ApprovalInput{Title: "Deploy", ApproverIDs: []kernel.ID{viewer.ID, manager.ID}})
		if _, err := f.svc.Decide(bg, poster, a.ID, runs.Decision{Decision: "approve"}); !kernel.IsCode(err, runs.CodeNotAnApprover) {
			t.Fatalf("a reader who is no approver: %v", err)
		}
		if _, err := f.svc.Decide(bg, stranger, a.ID, runs.Decision{Decision: "approve"}); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("someone who cannot read the thread: %v", err)
		}
		if _, err := f.svc.Decide(bg, viewer, a.ID, runs.Decision{Decision: "maybe"}); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("a bad decision: %v", err)
		}
		n := len(f.events(t))
		got, err := f.svc.Decide(bg, manager, a.ID, runs.Decision{Decision: "deny"})
		if err != nil || got.State != runs.ApprovalDenied || *got.Decision != "deny" || *got.Scope != "once" || *got.By != manager.ID ||
			got.DecidedAt == nil || got.TimedOut {
			t.Fatalf("decide %+v %v", got, err)
		}
		evs := f.eventsSince(t, n)
		if types := typesOf(evs); !slices.Equal(types, []string{runs.EvApprovalDecided.Name, runs.EvRunStateChanged.Name}) {
			t.Fatalf("events %v", types)
		}
		var payload map[string]any
		_ = json.Unmarshal(evs[0].Payload, &payload)
		if payload["decision"] != "deny" || payload["by"] != string(manager.ID) || payload["timed_out"] != false || payload["run_id"] != string(r.ID) {
			t.Fatalf("approval.decided %s", evs[0].Payload)
		}
		if run := f.run(t, r.ID); run.Status != runs.StatusRunning {
			t.Fatalf("run is %s", run.Status)
		}
		if _, err := f.svc.Decide(bg, viewer, a.ID, runs.Decision{Decision: "approve"}); !kernel.IsCode(err, runs.CodeApprovalDecided) {
			t.Fatalf("a second decision: %v", err)
		}
	})

	t.Run("the run waits until none of its approvals is pending", func(t *testing.T) {
		f, r, tok := asking(t)
		a := f.ask(t, r, tok, runs.ApprovalInput{Title: "one"})
		b := f.ask(t, r, tok, runs.ApprovalInput{Title: "two"})
		if _, err := f.svc.Decide(bg, invoker, a.ID, runs.Decision{Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		if run := f.run(t, r.ID); run.Status != runs.StatusWaitingInput {
			t.Fatalf("with one left pending the run is %s", run.Status)
		}
		if _, err := f.svc.Decide(bg, invoker, b.ID, runs.Decision{Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		if run := f.run(t, r.ID); run.Status != runs.StatusRunning {
			t.Fatalf("with none pending the run is %s", run.Status)
		}
	})

	t.Run("approved for the run, a later request of the same title passes at once without a card", func(t *testing.T) {
		f, r, tok := asking(t)
		a := f.ask(t, r, tok, runs.ApprovalInput{Title: "Run the tests"})
		if _, err := f.svc.Decide(bg, invoker, a.ID, runs.Decision{Decision: "approve", Scope: "run"}); err != nil {
			t.Fatal(err)
		}
		n := len(f.events(t))
		b := f.ask(t, r, tok, runs.ApprovalInput{Title: "Run the tests"})
		if b.State != runs.ApprovalApproved || *b.Scope != "run" || *b.By != invoker.ID || b.ID == a.ID {
			t.Fatalf("second request %+v", b)
		}
		if got := f.eventsSince(t, n); len(got) != 0 {
			t.Fatalf("a granted request logged %v", typesOf(got))
		}
		if run := f.run(t, r.ID); run.Status != runs.StatusRunning {
			t.Fatalf("run is %s", run.Status)
		}
		if c := f.ask(t, r, tok, runs.ApprovalInput{Title: "Something else"}); c.State != runs.ApprovalPending {
			t.Fatalf("another title %+v", c)
		}
	})

	t.Run("the timeout denies a pending approval at its expiry, and a job that comes early is tried again", func(t *testing.T) {
		f, r, tok := asking(t)
		a := f.ask(t, r, tok, runs.ApprovalInput{Title: "wait", TimeoutS: 3})
		if err := f.svc.TimeoutApproval(bg, a.ID); err == nil {
			t.Fatal("a job seconds before the expiry succeeded: it would not be tried again")
		}
		if got, _ := f.svc.GetApproval(bg, invoker, a.ID); got.State != runs.ApprovalPending {
			t.Fatalf("before its expiry it is %s", got.State)
		}
		f.clock.Advance(2 * time.Second) // within a second of the expiry: another node's clock

		n := len(f.events(t))
		if err := f.svc.TimeoutApproval(bg, a.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := f.svc.GetApproval(bg, invoker, a.ID)
		if got.State != runs.ApprovalTimedOut || !got.TimedOut || *got.Decision != "deny" || got.By != nil {
			t.Fatalf("after its expiry %+v", got)
		}
		if types := typesOf(f.eventsSince(t, n)); !slices.Equal(types, []string{runs.EvApprovalDecided.Name, runs.EvRunStateChanged.Name}) {
			t.Fatalf("events %v", types)
		}
		if err := f.svc.TimeoutApproval(bg, a.ID); err != nil || len(f.events(t)) != n+2 {
			t.Fatalf("a second run of the job: %v", err)
		}
	})

	t.Run("a cancel request or the end of the run cancels its pending approvals", func(t *testing.T) {
		f, r, tok := asking(t)
		a := f.ask(t, r, tok, runs.ApprovalInput{Title: "x"})
		if _, err := f.svc.Cancel(bg, invoker, r.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := f.svc.GetApproval(bg, invoker, a.ID)
		if got.State != runs.ApprovalCancelled || *got.Decision != "deny" || got.By != nil {
			t.Fatalf("after the cancel request %+v", got)
		}
		if run := f.run(t, r.ID); run.Status != runs.StatusRunning || run.CancelRequestedAt == nil {
			t.Fatalf("run %s", run.Status)
		}
		b := f.ask(t, r, tok, runs.ApprovalInput{Title: "y"})
		if _, err := f.svc.Finish(bg, echoActor, r.ID, tok, runs.Finish{Outcome: runs.OutcomeCancelled}); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.svc.GetApproval(bg, invoker, b.ID); got.State != runs.ApprovalCancelled {
			t.Fatalf("after the run ended %+v", got)
		}
		if _, err := f.svc.RequestApproval(bg, echoActor, r.ID, tok, runs.ApprovalInput{Title: "z"}); !kernel.IsCode(err, runs.CodeRunEnded) {
			t.Fatalf("a request of an ended run: %v", err)
		}
	})

	t.Run("the inbox lists the pending approvals of the caller, newest first", func(t *testing.T) {
		f, r, tok := asking(t)
		a := f.ask(t, r, tok, runs.ApprovalInput{Title: "a", ApproverIDs: []kernel.ID{viewer.ID}})
		b := f.ask(t, r, tok, runs.ApprovalInput{Title: "b", ApproverIDs: []kernel.ID{viewer.ID, invoker.ID}})
		c := f.ask(t, r, tok, runs.ApprovalInput{Title: "c", ApproverIDs: []kernel.ID{viewer.ID}})
		f.ask(t, r, tok, runs.ApprovalInput{Title: "d", ApproverIDs: []kernel.ID{invoker.ID}})
		if _, err := f.svc.Decide(bg, viewer, b.ID, runs.Decision{Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		ids := func(as []runs.Approval) []kernel.ID {
			var out []kernel.ID
			for _, a := range as {
				out = append(out, a.ID)
			}
			return out
		}
		got, more, err := f.svc.Inbox(bg, viewer, runs.InboxPage{State: runs.ApprovalPending})
		if err != nil || more || !slices.Equal(ids(got), []kernel.ID{c.ID, a.ID}) {
			t.Fatalf("pending %v more %v %v; want %v", ids(got), more, err, []kernel.ID{c.ID, a.ID})
		}
		first, more, err := f.svc.Inbox(bg, viewer, runs.InboxPage{Limit: 1})
		if err != nil || !more || !slices.Equal(ids(first), []kernel.ID{c.ID}) {
			t.Fatalf("a page of one %v %v %v", ids(first), more, err)
		}
		all, _, err := f.svc.Inbox(bg, viewer, runs.InboxPage{})
		if err != nil || !slices.Equal(ids(all), []kernel.ID{c.ID, b.ID, a.ID}) {
			t.Fatalf("every state %v %v", ids(all), err)
		}
		if none, _, err := f.svc.Inbox(bg, stranger, runs.InboxPage{}); err != nil || len(none) != 0 {
			t.Fatalf("a stranger's inbox %v %v", ids(none), err)
		}
		if _, _, err := f.svc.Inbox(bg, viewer, runs.InboxPage{State: "soon"}); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("a bad state: %v", err)
		}
	})

	t.Run("a run waiting for a person is not failed as stalled", func(t *testing.T) {
		f, r, tok := asking(t)
		f.ask(t, r, tok, runs.ApprovalInput{Title: "slow", TimeoutS: 3600})
		f.clock.Advance(10 * time.Minute)
		n, err := f.svc.FailStalled(context.Background())
		if err != nil || n != 0 {
			t.Fatalf("failed %d, %v", n, err)
		}
		if run := f.run(t, r.ID); run.Status != runs.StatusWaitingInput {
			t.Fatalf("run is %s", run.Status)
		}
	})
}

func asError(err error, target **kernel.Error) bool {
	e, ok := err.(*kernel.Error)
	if ok {
		*target = e
	}
	return ok
}
