package runs_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
)

var echoActor = kernel.Actor{ID: echo, Kind: kernel.KindAgent}

// invoked is the fixture with one queued run of echo and a token for it.
func invoked(t *testing.T) (*fixture, runs.Run, string) {
	t.Helper()
	f := mustRuns(t)
	f.post(t, invoker, f.message(invoker, echo), false)
	r := f.onlyRun(t)
	tok, err := f.svc.IssueToken(bg, r)
	if err != nil {
		t.Fatal(err)
	}
	if !tok.ExpiresAt.Equal(f.clock.Now().Truncate(time.Second).Add(time.Minute)) {
		t.Fatalf("expires at %v", tok.ExpiresAt)
	}
	return f, r, tok.Token
}

func TestAgentCalls(t *testing.T) {
	t.Run("the agent starts, patches in version order and succeeds, and each state change is logged", func(t *testing.T) {
		f, r, tok := invoked(t)
		n := len(f.events(t))
		got, err := f.svc.Start(bg, echoActor, r.ID, tok)
		if err != nil || got.Status != runs.StatusRunning || got.StartedAt == nil {
			t.Fatalf("start: %+v, %v", got, err)
		}
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); !kernel.IsCode(err, runs.CodeAlreadyStarted) {
			t.Fatalf("second start: %v", err)
		}
		out := "hel"
		if got, err = f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 1, Output: &out}); err != nil || got.Version != 1 {
			t.Fatalf("patch 1: %+v, %v", got, err)
		}
		if _, err := f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 1, OutputAppend: "x"}); !kernel.IsCode(err, runs.CodeRunVersionConflict) {
			t.Fatalf("a replayed patch: %v", err)
		}
		if got, err = f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 2, OutputAppend: "lo"}); err != nil ||
			got.Version != 2 || got.Document.Output != "hello" {
			t.Fatalf("patch 2: %+v, %v", got, err)
		}
		if stored := f.run(t, r.ID); stored.Version != 2 || stored.Document.Output != "hello" || stored.OutputBytes != 5 {
			t.Fatalf("stored %+v", stored)
		}
		if got, err = f.svc.Finish(bg, echoActor, r.ID, tok, runs.Finish{Outcome: runs.OutcomeSucceeded}); err != nil ||
			got.Status != runs.StatusSucceeded || got.EndedAt == nil {
			t.Fatalf("finish: %+v, %v", got, err)
		}
		if got := typesOf(f.eventsSince(t, n)); !slices.Equal(got, []string{runs.EvRunStateChanged.Name, runs.EvRunStateChanged.Name}) {
			t.Fatalf("events %v: patches must not be logged", got)
		}
		if _, err := f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 3}); !kernel.IsCode(err, runs.CodeRunEnded) {
			t.Fatalf("patch after the end: %v", err)
		}
		if _, err := f.svc.RenewToken(bg, echoActor, r.ID); !kernel.IsCode(err, runs.CodeRunEnded) {
			t.Fatalf("renew after the end: %v", err)
		}
	})

	t.Run("a patch is bounded by the stored output's length and answers the whole output", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		full := strings.Repeat("o", runs.MaxOutputBytes-1)
		if _, err := f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 1, Output: &full}); err != nil {
			t.Fatal(err)
		}
		got, err := f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 2, OutputAppend: "!"})
		if err != nil || got.Document.Output != full+"!" || got.OutputBytes != runs.MaxOutputBytes {
			t.Fatalf("patch 2: %d bytes, %v", len(got.Document.Output), err)
		}
		_, err = f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 3, OutputAppend: "?"})
		if kernel.CodeOf(err) != kernel.CodeValidation {
			t.Fatalf("an append past the bound: %v", err)
		}
		if stored := f.run(t, r.ID); stored.Version != 2 || stored.OutputBytes != runs.MaxOutputBytes {
			t.Fatalf("stored version %d, %d bytes", stored.Version, stored.OutputBytes)
		}
		// A change of state leaves the document as the patches left it.
		if got, err := f.svc.Finish(bg, echoActor, r.ID, tok, runs.Finish{Outcome: runs.OutcomeSucceeded}); err != nil ||
			got.Document.Output != full+"!" || got.Version != 2 {
			t.Fatalf("finish: version %d, %d bytes, %v", got.Version, len(got.Document.Output), err)
		}
	})

	t.Run("a failure takes the agent's code as the reason, never a server's", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Finish(bg, echoActor, r.ID, tok, runs.Finish{Outcome: runs.OutcomeFailed,
			Error: &runs.RunError{Code: runs.ReasonStale}}); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("a server's reason: %v", err)
		}
		got, err := f.svc.Finish(bg, echoActor, r.ID, tok, runs.Finish{Outcome: runs.OutcomeFailed, Error: &runs.RunError{Code: "quota"}})
		if err != nil || got.Status != runs.StatusFailed || got.Reason != "quota" {
			t.Fatalf("finish: %+v, %v", got, err)
		}
	})

	t.Run("a failure keeps the agent's message for the thread's readers; a message with control characters is refused", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"bell\a", strings.Repeat("x", runs.MaxErrorMessageBytes+1)} {
			if _, err := f.svc.Finish(bg, echoActor, r.ID, tok, runs.Finish{Outcome: runs.OutcomeFailed,
				Error: &runs.RunError{Code: "quota", Message: bad}}); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Fatalf("message %.20q: %v", bad, err)
			}
		}
		const msg = "The model's quota is used up until 14:00.\nAsk again later."
		got, err := f.svc.Finish(bg, echoActor, r.ID, tok, runs.Finish{Outcome: runs.OutcomeFailed, Error: &runs.RunError{Code: "quota", Message: msg}})
		if err != nil || got.ErrorMessage == nil || *got.ErrorMessage != msg {
			t.Fatalf("finish: %+v, %v", got, err)
		}
		if stored, err := f.svc.Get(bg, viewer, r.ID); err != nil || stored.ErrorMessage == nil || *stored.ErrorMessage != msg {
			t.Fatalf("stored: %+v, %v", stored, err)
		}
	})

	t.Run("the agent confirms a cancel only after one was asked for", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Finish(bg, echoActor, r.ID, tok, runs.Finish{Outcome: runs.OutcomeCancelled}); !kernel.IsCode(err, kernel.CodeConflict) {
			t.Fatalf("cancelled without a request: %v", err)
		}
		if _, err := f.svc.Cancel(bg, invoker, r.ID); err != nil {
			t.Fatal(err)
		}
		got, err := f.svc.Finish(bg, echoActor, r.ID, tok, runs.Finish{Outcome: runs.OutcomeCancelled})
		if err != nil || got.Status != runs.StatusCancelled || got.Reason != "" {
			t.Fatalf("finish: %+v, %v", got, err)
		}
	})

	t.Run("refuses a missing, foreign, expired or other run's token", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, ""); !kernel.IsCode(err, runs.CodeInvocationTokenInvalid) {
			t.Fatalf("no token: %v", err)
		}
		if _, err := f.svc.Start(bg, kernel.Actor{ID: helper, Kind: kernel.KindAgent}, r.ID, tok); !kernel.IsCode(err, runs.CodeInvocationTokenInvalid) {
			t.Fatalf("another agent: %v", err)
		}
		if _, err := f.svc.Start(bg, echoActor, kernel.NewID(), tok); !kernel.IsCode(err, runs.CodeInvocationTokenInvalid) {
			t.Fatalf("another run: %v", err)
		}
		if _, err := f.svc.Patch(bg, echoActor, r.ID, tok, runs.Patch{Version: 1}); !kernel.IsCode(err, kernel.CodeConflict) {
			t.Fatalf("a patch before start: %v", err)
		}
		f.clock.Advance(time.Minute + time.Second)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); !kernel.IsCode(err, runs.CodeInvocationTokenExpired) {
			t.Fatalf("expired: %v", err)
		}
		renewed, err := f.svc.RenewToken(bg, echoActor, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := f.svc.Start(bg, echoActor, r.ID, renewed.Token); err != nil || got.Status != runs.StatusRunning {
			t.Fatalf("start with the renewed token: %+v, %v", got, err)
		}
		if _, err := f.svc.RenewToken(bg, kernel.Actor{ID: helper, Kind: kernel.KindAgent}, r.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("renew by another agent: %v", err)
		}
	})

	t.Run("an agent that may no longer read the thread cannot act for its run", func(t *testing.T) {
		f, r, tok := invoked(t)
		f.levels[echo] = none
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("start: %v", err)
		}
		if _, err := f.svc.RenewToken(bg, echoActor, r.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("renew: %v", err)
		}
	})
}

// loggedInvocation is the agent.invocation of r as the log hands it out.
func loggedInvocation(t *testing.T, f *fixture, r runs.Run) kernel.LoggedEvent {
	t.Helper()
	for _, e := range f.events(t) {
		if e.Type == runs.EvAgentInvocation.Name && e.SubjectID == r.ID {
			return e
		}
	}
	t.Fatal("no agent.invocation")
	return kernel.LoggedEvent{}
}

func TestPrepare(t *testing.T) {
	t.Run("adds a token the agent's calls accept to its invocation", func(t *testing.T) {
		f, r, _ := invoked(t)
		payload, deliver, err := f.svc.Prepare(bg, echoActor, loggedInvocation(t, f, r))
		if err != nil || !deliver {
			t.Fatalf("deliver %v, %v", deliver, err)
		}
		var d struct {
			RunID     kernel.ID `json:"run_id"`
			MessageID kernel.ID `json:"message_id"`
			Token     string    `json:"invocation_token"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		if err := json.Unmarshal(payload, &d); err != nil || d.RunID != r.ID || d.MessageID == "" || d.Token == "" || d.ExpiresAt.IsZero() {
			t.Fatalf("payload %s, %v", payload, err)
		}
		if got, err := f.svc.Start(bg, echoActor, r.ID, d.Token); err != nil || got.Status != runs.StatusRunning {
			t.Fatalf("start with the delivered token: %+v, %v", got, err)
		}
	})

	t.Run("passes other events and other principals' events unchanged", func(t *testing.T) {
		f, r, _ := invoked(t)
		e := kernel.LoggedEvent{Type: messaging.EvMessageCreated.Name, Payload: []byte(`{"x":1}`)}
		if p, ok, err := f.svc.Prepare(bg, echoActor, e); err != nil || !ok || string(p) != `{"x":1}` {
			t.Fatalf("%s %v %v", p, ok, err)
		}
		inv := loggedInvocation(t, f, r)
		if p, ok, err := f.svc.Prepare(bg, kernel.Actor{ID: helper, Kind: kernel.KindAgent}, inv); err != nil || !ok || string(p) != string(inv.Payload) {
			t.Fatalf("%s %v %v", p, ok, err)
		}
	})

	t.Run("holds back the invocation of a run that has ended", func(t *testing.T) {
		f, r, _ := invoked(t)
		if _, err := f.svc.Cancel(bg, invoker, r.ID); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := f.svc.Prepare(bg, echoActor, loggedInvocation(t, f, r)); err != nil || ok {
			t.Fatalf("delivered %v, %v", ok, err)
		}
	})

	t.Run("an agent that may no longer read the thread gets nothing, and its queued run fails", func(t *testing.T) {
		f, r, _ := invoked(t)
		f.levels[echo] = none
		n := len(f.events(t))
		if _, ok, err := f.svc.Prepare(bg, echoActor, loggedInvocation(t, f, r)); err != nil || ok {
			t.Fatalf("delivered %v, %v", ok, err)
		}
		if got := f.run(t, r.ID); got.Status != runs.StatusFailed || got.Reason != runs.ReasonPermissionRevoked {
			t.Fatalf("run %+v", got)
		}
		if got := typesOf(f.eventsSince(t, n)); !slices.Equal(got, []string{runs.EvRunStateChanged.Name}) {
			t.Fatalf("events %v", got)
		}
	})
	t.Run("the invoker who lost invoke gets the agent nothing, and the queued run fails", func(t *testing.T) {
		f, r, _ := invoked(t)
		f.levels[invoker.ID] = post
		n := len(f.events(t))
		if _, ok, err := f.svc.Prepare(bg, echoActor, loggedInvocation(t, f, r)); err != nil || ok {
			t.Fatalf("delivered %v, %v", ok, err)
		}
		if got := f.run(t, r.ID); got.Status != runs.StatusFailed || got.Reason != runs.ReasonPermissionRevoked {
			t.Fatalf("run %+v", got)
		}
		if got := typesOf(f.eventsSince(t, n)); !slices.Equal(got, []string{runs.EvRunStateChanged.Name}) {
			t.Fatalf("events %v", got)
		}
	})

	t.Run("a disabled invoker gets the agent nothing either", func(t *testing.T) {
		f, r, _ := invoked(t)
		f.disable(t, invoker.ID)
		if _, ok, err := f.svc.Prepare(bg, echoActor, loggedInvocation(t, f, r)); err != nil || ok {
			t.Fatalf("delivered %v, %v", ok, err)
		}
		if got := f.run(t, r.ID); got.Reason != runs.ReasonPermissionRevoked {
			t.Fatalf("run %+v", got)
		}
	})

	t.Run("a started run is not delivered again after the invoker lost invoke, and goes on", func(t *testing.T) {
		f, r, tok := invoked(t)
		if _, err := f.svc.Start(bg, echoActor, r.ID, tok); err != nil {
			t.Fatal(err)
		}
		f.levels[invoker.ID] = view
		if _, ok, err := f.svc.Prepare(bg, echoActor, loggedInvocation(t, f, r)); err != nil || ok {
			t.Fatalf("delivered %v, %v", ok, err)
		}
		if got := f.run(t, r.ID); got.Status != runs.StatusRunning {
			t.Fatalf("run %+v", got)
		}
	})

	t.Run("an operator's run from a new thread asks its author only to still open threads there", func(t *testing.T) {
		f := mustRuns(t)
		f.setOperator(t, echo)
		if state := f.post(t, poster, f.newThread(t, poster), true); state != string(runs.TriggerTriggered) {
			t.Fatalf("trigger state %q", state)
		}
		r := f.onlyRun(t)
		if _, ok, err := f.svc.Prepare(bg, echoActor, loggedInvocation(t, f, r)); err != nil || !ok {
			t.Fatalf("a poster's thread: delivered %v, %v", ok, err)
		}
		f.levels[poster.ID] = view
		if _, ok, err := f.svc.Prepare(bg, echoActor, loggedInvocation(t, f, r)); err != nil || ok {
			t.Fatalf("a viewer now: delivered %v, %v", ok, err)
		}
		if got := f.run(t, r.ID); got.Reason != runs.ReasonPermissionRevoked {
			t.Fatalf("run %+v", got)
		}
	})

	t.Run("a mention of the operator in a reply still needs invoke", func(t *testing.T) {
		f := mustRuns(t)
		f.setOperator(t, echo)
		f.post(t, invoker, f.message(invoker, echo), false) // the main thread, which the invoker did not open
		r := f.onlyRun(t)
		f.levels[invoker.ID] = post
		if _, ok, err := f.svc.Prepare(bg, echoActor, loggedInvocation(t, f, r)); err != nil || ok {
			t.Fatalf("delivered %v, %v", ok, err)
		}
		if got := f.run(t, r.ID); got.Reason != runs.ReasonPermissionRevoked {
			t.Fatalf("run %+v", got)
		}
	})
}
