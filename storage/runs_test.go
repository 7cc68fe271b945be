package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/jobs"
	"bothy.dev/bothy/storage/storetest"
)

// runEnv is the appliance's modules on one store, wired as appliance/wire.go does: runs subscribed
// to MessagePosted and AgentDisabled on the bus of messaging and agents, the real rules.
type runEnv struct {
	*idEnv
	az      *authz.Service
	chats   *chat.Service
	agents  *agents.Service
	msgs    *messaging.Service
	msgRepo *storage.MessageStore
	runs    *storage.RunStore
	svc     *runs.Service
	olga    kernel.Actor // the owner
	pia     kernel.Actor // invoke on the channel
	paul    kernel.Actor // post on the channel
	echo    agents.Agent // view on the channel
	channel chat.Channel
}

func newRunEnv(t *testing.T, eng storetest.Engine) *runEnv {
	t.Helper()
	e := &runEnv{idEnv: newIDEnv(t, eng, identity.DefaultConfig())}
	db := e.db
	azStore := storage.NewAuthzStore(db)
	e.az = authz.New(authz.Deps{Store: azStore, Structure: azStore, UoW: db, Events: db, Clock: e.clock})
	chatStore := storage.NewChatStore(db)
	e.chats = chat.New(chat.Deps{Store: chatStore, Principals: chatStore, UoW: db, Events: db, Authz: e.az, Scoper: e.az, Clock: e.clock})
	bus := kernel.NewTxBus()
	agentStore := storage.NewAgentStore(db)
	e.agents = agents.New(agents.Deps{Store: agentStore, Principals: e.id, UoW: db, Events: db, Authz: e.az, Bus: bus})
	e.msgRepo = storage.NewMessageStore(db)
	e.msgs = messaging.New(messaging.Deps{Store: e.msgRepo, Threads: e.chats, Directory: e.msgRepo, Redactor: db, UoW: db,
		Events: db, Authz: e.az, Bus: bus, Clock: e.clock})
	e.runs = storage.NewRunStore(db)
	q := jobs.NewQueue(db, jobs.QueueOptions{})
	for _, name := range []string{runs.JobQueuedExpiry, runs.JobCancelTimeout} {
		q.Register(name, func(context.Context, json.RawMessage) error { return nil })
	}
	e.svc = runs.New(runs.Deps{Store: e.runs, Agents: agentStore, Structure: e.chats, UoW: db, Events: db, Authz: e.az, Clock: e.clock, Jobs: q}, runs.DefaultConfig())
	kernel.Subscribe(bus, "runs.trigger", e.svc.OnMessageDeciding)
	kernel.Subscribe(bus, "runs.invoke", e.svc.OnMessagePosted)
	kernel.Subscribe(bus, "runs.agent_disabled", e.svc.OnAgentDisabled)
	bus.Seal()

	e.olga = e.owner(t)
	e.pia, e.paul = e.person(t, e.olga, "pia"), e.person(t, e.olga, "paul")
	var err error
	if e.echo, _, err = e.agents.Create(bg, e.olga, agents.NewAgent{Handle: "echo", DisplayName: "Echo"}); err != nil {
		t.Fatal(err)
	}
	sp, err := e.chats.CreateSpace(bg, e.olga, "Home")
	if err != nil {
		t.Fatal(err)
	}
	if e.channel, err = e.chats.CreateChannel(bg, e.olga, sp.ID, chat.NewChannel{Name: "help"}); err != nil {
		t.Fatal(err)
	}
	e.grant(t, e.pia.ID, authz.LevelInvoke)
	e.grant(t, e.paul.ID, authz.LevelPost)
	e.grant(t, e.echo.ID, authz.LevelView)
	return e
}

func (e *runEnv) grant(t *testing.T, who kernel.ID, level authz.Level) {
	t.Helper()
	if _, _, err := e.az.CreateGrant(bg, e.olga, e.channel.ID, who, level); err != nil {
		t.Fatal(err)
	}
}

func (e *runEnv) post(t *testing.T, by kernel.Actor, content string) messaging.Message {
	t.Helper()
	m, _, err := e.msgs.CreateMessage(bg, by, e.channel.MainThreadID, messaging.NewMessage{Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *runEnv) threadRuns(t *testing.T, threadID kernel.ID) []runs.Run {
	t.Helper()
	items, _, err := e.runs.ThreadRuns(bg, threadID, chat.Page{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func TestRunStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		t.Run("a mention by a person with invoke commits the message, its run and the events in that order", func(t *testing.T) {
			e := newRunEnv(t, eng)
			head := e.db.Head()
			m := e.post(t, e.pia, "@echo summarise this")
			if m.TriggerState == nil || *m.TriggerState != "triggered" || m.RunID != nil {
				t.Fatalf("answer %+v", m)
			}
			stored, err := e.msgRepo.Message(bg, m.ID)
			if err != nil || !reflect.DeepEqual(stored, m) {
				t.Fatalf("stored %+v (%v), answered %+v", stored, err, m)
			}
			rs := e.threadRuns(t, m.ThreadID)
			if len(rs) != 1 {
				t.Fatalf("%d runs", len(rs))
			}
			r := rs[0]
			if r.AgentID != e.echo.ID || r.InvokedBy != e.pia.ID || *r.TriggerMessageID != m.ID || r.Status != runs.StatusQueued ||
				r.Version != 0 || r.ChannelKind != chat.KindChannel || !r.CreatedAt.Equal(m.CreatedAt) {
				t.Fatalf("run %+v", r)
			}
			one, err := e.runs.Run(bg, r.ID)
			if err != nil || !reflect.DeepEqual(one, r) {
				t.Fatalf("Run %+v (%v), listed %+v", one, err, r)
			}
			got, err := e.svc.Get(bg, e.paul, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			for _, want := range []string{`"status":"queued"`, `"reason":null`, `"document":{"version":0,"status":"","steps":[],"output":""}`,
				`"trigger_message_id":"` + string(m.ID) + `"`, `"started_at":null`} {
				if !strings.Contains(string(b), want) {
					t.Errorf("GET answers %s, without %s", b, want)
				}
			}
			evs, err := e.db.EventsAfter(bg, head, 100)
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, ev := range evs {
				types = append(types, ev.Type)
			}
			if !slices.Equal(types, []string{messaging.EvMessageCreated.Name, runs.EvAgentInvocation.Name, runs.EvRunStateChanged.Name}) {
				t.Fatalf("events %v", types)
			}
			if !strings.Contains(string(evs[0].Payload), `"trigger_state":"triggered"`) {
				t.Errorf("message.created %s", evs[0].Payload)
			}
			if evs[1].Scope != (kernel.Scope{PrincipalID: e.echo.ID}) || !strings.Contains(string(evs[1].Payload), `"run_id":"`+string(r.ID)+`"`) {
				t.Errorf("agent.invocation %+v %s", evs[1].Scope, evs[1].Payload)
			}
			if evs[2].Scope != r.Scope() || !strings.Contains(string(evs[2].Payload), `"previous_status":null`) {
				t.Errorf("run.state_changed %+v %s", evs[2].Scope, evs[2].Payload)
			}
		})

		t.Run("a mention without invoke keeps its reason on the message and makes no run", func(t *testing.T) {
			e := newRunEnv(t, eng)
			m := e.post(t, e.paul, "@echo hello?")
			stored, _ := e.msgRepo.Message(bg, m.ID)
			if stored.TriggerState == nil || *stored.TriggerState != "no_invoke_right" || len(e.threadRuns(t, m.ThreadID)) != 0 {
				t.Fatalf("stored %+v", stored)
			}
			page, _, err := e.msgRepo.Messages(bg, m.ThreadID, chat.Page{Limit: 10})
			if err != nil || len(page) != 1 || page[0].TriggerState == nil || *page[0].TriggerState != "no_invoke_right" {
				t.Fatalf("listed %+v (%v)", page, err)
			}
		})

		t.Run("an operator is invoked by a new thread and the thread's runs page both ways", func(t *testing.T) {
			e := newRunEnv(t, eng)
			if _, err := e.chats.SetOperator(bg, e.olga, e.channel.ID, e.echo.ID); err != nil {
				t.Fatal(err)
			}
			th, m, _, err := e.msgs.CreateThread(bg, e.paul, e.channel.ID, messaging.NewThread{Title: "Help", Content: "it broke"})
			if err != nil || m.TriggerState == nil || *m.TriggerState != "triggered" {
				t.Fatalf("thread: %+v %v", m, err)
			}
			for i := 0; i < 2; i++ {
				if _, _, err := e.msgs.CreateMessage(bg, e.pia, th.ID, messaging.NewMessage{Content: "@echo again"}); err != nil {
					t.Fatal(err)
				}
			}
			all := e.threadRuns(t, th.ID)
			if len(all) != 3 || all[0].InvokedBy != e.paul.ID {
				t.Fatalf("%d runs", len(all))
			}
			newest, more, err := e.runs.ThreadRuns(bg, th.ID, chat.Page{Limit: 2})
			if err != nil || !more || len(newest) != 2 || newest[0].ID != all[1].ID || newest[1].ID != all[2].ID {
				t.Fatalf("newest page %v, more %v, %v", len(newest), more, err)
			}
			older, more, err := e.runs.ThreadRuns(bg, th.ID, chat.Page{Before: newest[0].ID, Limit: 2})
			if err != nil || more || len(older) != 1 || older[0].ID != all[0].ID {
				t.Fatalf("older page %v, more %v, %v", len(older), more, err)
			}
			after, more, err := e.runs.ThreadRuns(bg, th.ID, chat.Page{After: all[0].ID, Limit: 1})
			if err != nil || !more || len(after) != 1 || after[0].ID != all[1].ID {
				t.Fatalf("after page %v, more %v, %v", len(after), more, err)
			}
		})

		t.Run("one run per message and agent", func(t *testing.T) {
			e := newRunEnv(t, eng)
			m := e.post(t, e.pia, "@echo and @ECHO again")
			r := e.threadRuns(t, m.ThreadID)
			if len(r) != 1 {
				t.Fatalf("%d runs", len(r))
			}
			twin := r[0]
			twin.ID = kernel.NewID()
			err := e.db.Do(bg, func(ctx context.Context) error { return e.runs.CreateRun(ctx, twin) })
			wantCode(t, err, kernel.CodeConflict)
		})

		t.Run("a run's document, state and times round-trip", func(t *testing.T) {
			e := newRunEnv(t, eng)
			m := e.post(t, e.pia, "@echo go")
			r := e.threadRuns(t, m.ThreadID)[0]
			at := e.clock.Now().Add(time.Second).UTC().Truncate(time.Microsecond)
			r.Status, r.StartedAt, r.LastActivityAt, r.UpdatedAt = runs.StatusRunning, &at, at, at
			if err := e.db.Do(bg, func(ctx context.Context) error { return e.runs.UpdateRun(ctx, r) }); err != nil {
				t.Fatal(err)
			}
			r = mustPatchRun(t, e, r, runs.Patch{Version: 1, Status: ptrTo("Reading — ü"),
				Steps: []runs.Step{{ID: "s1", Kind: runs.StepToolCall, Title: "search", Detail: `{"q":"?"}`}}, OutputAppend: "$1 and ?"})
			got, err := e.runs.Run(bg, r.ID)
			if err != nil || !reflect.DeepEqual(got, r) {
				t.Fatalf("read back %+v (%v)\nwant %+v", got, err, r)
			}
			head := r
			head.Document.Output = ""
			if got, err := e.runs.RunHead(bg, r.ID); err != nil || !reflect.DeepEqual(got, head) {
				t.Fatalf("head %+v (%v)\nwant %+v", got, err, head)
			}
			unknown := r
			unknown.ID = kernel.NewID()
			err = e.db.Do(bg, func(ctx context.Context) error { return e.runs.UpdateRun(ctx, unknown) })
			wantCode(t, err, kernel.CodeNotFound)
			_, err = e.runs.Run(bg, unknown.ID)
			wantCode(t, err, kernel.CodeNotFound)
		})

		t.Run("a failed run keeps the agent's error message", func(t *testing.T) {
			e := newRunEnv(t, eng)
			r := e.threadRuns(t, e.post(t, e.pia, "@echo fail").ThreadID)[0]
			if r.ErrorMessage != nil {
				t.Fatalf("a new run has the error message %q", *r.ErrorMessage)
			}
			at := e.clock.Now().Add(time.Second).UTC().Truncate(time.Microsecond)
			r.Status, r.Reason, r.ErrorMessage, r.EndedAt, r.UpdatedAt = runs.StatusFailed, "quota", ptrTo("Out of quota — ü"), &at, at
			if err := e.db.Do(bg, func(ctx context.Context) error { return e.runs.UpdateRun(ctx, r) }); err != nil {
				t.Fatal(err)
			}
			for _, read := range []func(context.Context, kernel.ID) (runs.Run, error){e.runs.Run, e.runs.RunHead} {
				if got, err := read(bg, r.ID); err != nil || got.ErrorMessage == nil || *got.ErrorMessage != "Out of quota — ü" {
					t.Fatalf("read back %+v (%v)", got, err)
				}
			}
		})

		t.Run("the output is stored in parts and read back whole, in order", func(t *testing.T) {
			e := newRunEnv(t, eng)
			r := e.threadRuns(t, e.post(t, e.pia, "@echo stream").ThreadID)[0]
			if r.Document.Output != "" || r.OutputBytes != 0 {
				t.Fatalf("a new run: %+v", r)
			}
			want := ""
			for v := 1; v <= 300; v++ {
				chunk := fmt.Sprintf("%d—ü ", v)
				if v%7 == 0 {
					chunk = "" // a patch without output writes no part
				}
				r = mustPatchRun(t, e, r, runs.Patch{Version: v, OutputAppend: chunk})
				want += chunk
			}
			wantOutput(t, e, r.ID, 300, want)
			// The parts are folded as they come (a Fenwick tree over the versions): few remain.
			if n := e.parts(t, r.ID); n < 2 || n > 9 {
				t.Fatalf("%d parts after 300 patches", n)
			}

			// Nor do they pile up when only every other patch carries output.
			all := e.threadRuns(t, e.post(t, e.pia, "@echo heartbeat").ThreadID)
			odd := all[len(all)-1]
			wantOdd := ""
			for v := 1; v <= 256; v++ {
				chunk := ""
				if v%2 == 1 {
					chunk = fmt.Sprintf("<%d>", v)
				}
				odd = mustPatchRun(t, e, odd, runs.Patch{Version: v, OutputAppend: chunk})
				wantOdd += chunk
			}
			wantOutput(t, e, odd.ID, 256, wantOdd)
			if n := e.parts(t, odd.ID); n > 9 {
				t.Fatalf("%d parts after 256 patches, every other one with output", n)
			}

			r = mustPatchRun(t, e, r, runs.Patch{Version: 301, Output: ptrTo("replaced"), OutputAppend: " and more"})
			wantOutput(t, e, r.ID, 301, "replaced and more")
			if n := e.parts(t, r.ID); n != 1 {
				t.Fatalf("%d parts after a replace", n)
			}
			r = mustPatchRun(t, e, r, runs.Patch{Version: 302, OutputAppend: "!"})
			wantOutput(t, e, r.ID, 302, "replaced and more!")
			r = mustPatchRun(t, e, r, runs.Patch{Version: 303, Output: ptrTo("")})
			wantOutput(t, e, r.ID, 303, "")
			if n := e.parts(t, r.ID); n != 0 {
				t.Fatalf("%d parts after clearing the output", n)
			}
			r = mustPatchRun(t, e, r, runs.Patch{Version: 304, OutputAppend: "again"})

			// A change of state keeps the document and its output as they are.
			r.Status = runs.StatusSucceeded
			if err := e.db.Do(bg, func(ctx context.Context) error { return e.runs.UpdateRun(ctx, r) }); err != nil {
				t.Fatal(err)
			}
			wantOutput(t, e, r.ID, 304, "again")
			if list := e.threadRuns(t, r.ThreadID); list[0].Document.Output != "again" || list[0].OutputBytes != 5 {
				t.Fatalf("listed %+v", list[0].Document)
			}
		})

		t.Run("a patch of a version stored already writes nothing", func(t *testing.T) {
			e := newRunEnv(t, eng)
			r := e.threadRuns(t, e.post(t, e.pia, "@echo twice").ThreadID)[0]
			r = mustPatchRun(t, e, r, runs.Patch{Version: 1, OutputAppend: "once"})
			stale := r
			stale.Version, stale.OutputBytes = 1, 8
			err := e.db.Do(bg, func(ctx context.Context) error {
				return e.runs.PatchRun(ctx, stale, runs.Patch{Version: 1, OutputAppend: "once"})
			})
			wantCode(t, err, runs.CodeRunVersionConflict)
			wantOutput(t, e, r.ID, 1, "once")
			unknown := r
			unknown.ID, unknown.Version = kernel.NewID(), 2
			err = e.db.Do(bg, func(ctx context.Context) error { return e.runs.PatchRun(ctx, unknown, runs.Patch{Version: 2}) })
			wantCode(t, err, kernel.CodeNotFound)
		})

		t.Run("stalled runs are the active ones idle since before the cutoff, least recently active first", func(t *testing.T) {
			e := newRunEnv(t, eng)
			base := e.clock.Now().UTC().Truncate(time.Microsecond)
			var made []runs.Run
			for i, st := range []runs.Status{runs.StatusRunning, runs.StatusWaitingInput, runs.StatusRunning, runs.StatusQueued, runs.StatusRunning} {
				all := e.threadRuns(t, e.post(t, e.pia, fmt.Sprintf("@echo %d", i)).ThreadID)
				r := all[len(all)-1]
				// the first three idle from 10, 20, 5 minutes ago; the queued and the fresh one are not stalled
				idle := []time.Duration{10, 20, 5, 30, 0}[i] * time.Minute
				r.Status, r.LastActivityAt = st, base.Add(-idle)
				if err := e.db.Do(bg, func(ctx context.Context) error { return e.runs.UpdateRun(ctx, r) }); err != nil {
					t.Fatal(err)
				}
				made = append(made, r)
			}
			got, err := e.runs.StalledRuns(bg, base.Add(-time.Minute), 10)
			if err != nil {
				t.Fatal(err)
			}
			var ids []kernel.ID
			for _, r := range got {
				ids = append(ids, r.ID)
			}
			if want := []kernel.ID{made[1].ID, made[0].ID, made[2].ID}; !reflect.DeepEqual(ids, want) {
				t.Fatalf("stalled %v, want %v", ids, want)
			}
			if got, err := e.runs.StalledRuns(bg, base.Add(-time.Minute), 2); err != nil || len(got) != 2 || got[0].ID != made[1].ID {
				t.Fatalf("a batch of 2: %d runs (%v)", len(got), err)
			}
		})

		t.Run("a message linked to a run reads back its run_id", func(t *testing.T) {
			e := newRunEnv(t, eng)
			r := e.threadRuns(t, e.post(t, e.pia, "@echo answer me").ThreadID)[0]
			m := e.post(t, e.paul, "plain")
			answer := m
			answer.ID, answer.AuthorID, answer.RunID, answer.Content = kernel.NewID(), e.echo.ID, &r.ID, "the answer"
			err := e.db.Do(bg, func(ctx context.Context) error {
				_, err := e.msgRepo.InsertMessage(ctx, answer)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.msgRepo.Message(bg, answer.ID)
			if err != nil || got.RunID == nil || *got.RunID != r.ID || got.TriggerState != nil {
				t.Fatalf("read back %+v (%v)", got, err)
			}
		})

		t.Run("cancel ends a queued run, and disabling the agent fails the others", func(t *testing.T) {
			e := newRunEnv(t, eng)
			first := e.threadRuns(t, e.post(t, e.pia, "@echo one").ThreadID)[0]
			got, err := e.svc.Cancel(bg, e.pia, first.ID)
			if err != nil || got.Status != runs.StatusCancelled {
				t.Fatalf("cancel: %+v %v", got, err)
			}
			if stored, _ := e.runs.Run(bg, first.ID); !reflect.DeepEqual(stored, got) {
				t.Fatalf("stored %+v\nanswered %+v", stored, got)
			}
			_, err = e.svc.Cancel(bg, e.pia, first.ID)
			wantCode(t, err, runs.CodeRunEnded)
			e.post(t, e.pia, "@echo two")
			e.post(t, e.pia, "@echo three")
			head := e.db.Head()
			if _, err := e.agents.Disable(bg, e.olga, e.echo.ID); err != nil {
				t.Fatal(err)
			}
			var statuses []runs.Status
			for _, r := range e.threadRuns(t, e.channel.MainThreadID) {
				statuses = append(statuses, r.Status)
				if r.Status == runs.StatusFailed && (r.Reason != runs.ReasonAgentDisabled || r.EndedAt == nil) {
					t.Errorf("run %+v", r)
				}
			}
			if !slices.Equal(statuses, []runs.Status{runs.StatusCancelled, runs.StatusFailed, runs.StatusFailed}) {
				t.Fatalf("statuses %v", statuses)
			}
			evs, _ := e.db.EventsAfter(bg, head, 100)
			var types []string
			for _, ev := range evs {
				types = append(types, ev.Type)
			}
			if !slices.Equal(types, []string{runs.EvRunStateChanged.Name, runs.EvRunStateChanged.Name, agents.EvAgentUpdated.Name}) {
				t.Fatalf("events %v", types)
			}
			if runsLeft, err := e.runs.UnendedRuns(bg, e.echo.ID); err != nil || len(runsLeft) != 0 {
				t.Fatalf("unended %d, %v", len(runsLeft), err)
			}
		})
	})
}

func ptrTo[T any](v T) *T { return &v }

func TestRunStoreAgentRuns(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newRunEnv(t, eng)
		for i := 0; i < 3; i++ {
			e.post(t, e.pia, fmt.Sprintf("@echo number %d", i))
		}
		all := e.threadRuns(t, e.channel.MainThreadID)
		if len(all) != 3 {
			t.Fatalf("%d runs", len(all))
		}
		t.Run("lists an agent's runs newest first, up to the limit", func(t *testing.T) {
			got, err := e.runs.AgentRuns(bg, e.echo.ID, 2)
			if err != nil || len(got) != 2 || got[0].ID != all[2].ID || got[1].ID != all[1].ID {
				t.Fatalf("got %d runs, %v", len(got), err)
			}
			if got[0].AgentID != e.echo.ID || got[0].ChannelKind != chat.KindChannel || got[0].Status != runs.StatusQueued {
				t.Fatalf("run %+v", got[0].Summary)
			}
		})
		t.Run("lists nothing for another principal", func(t *testing.T) {
			got, err := e.runs.AgentRuns(bg, e.pia.ID, 10)
			if err != nil || len(got) != 0 {
				t.Fatalf("got %d runs, %v", len(got), err)
			}
		})
	})
}

// mustPatchRun applies p to r as the agent's patch does (ApplyHead, then PatchRun in a unit) and
// returns r as it is now, with its output as the store keeps it.
func mustPatchRun(tb testing.TB, e *runEnv, r runs.Run, p runs.Patch) runs.Run {
	tb.Helper()
	doc, n, err := runs.ApplyHead(runs.Document{Version: r.Version, Status: r.Document.Status, Steps: r.Document.Steps}, r.OutputBytes, p)
	if err != nil {
		tb.Fatal(err)
	}
	out := r.Document.Output
	if p.Output != nil {
		out = *p.Output
	}
	doc.Output = out + p.OutputAppend
	r.Document, r.Version, r.OutputBytes = doc, doc.Version, n
	if err := e.db.Do(bg, func(ctx context.Context) error { return e.runs.PatchRun(ctx, r, p) }); err != nil {
		tb.Fatalf("patch %d: %v", p.Version, err)
	}
	return r
}

// wantOutput reads run id whole and as its head and checks its version and output.
func wantOutput(tb testing.TB, e *runEnv, id kernel.ID, version int, output string) {
	tb.Helper()
	got, err := e.runs.Run(bg, id)
	if err != nil || got.Version != version || got.Document.Version != version || got.Document.Output != output || got.OutputBytes != len(output) {
		tb.Fatalf("run at version %d, %d bytes, output %q (%v); want version %d, output %q", got.Version, got.OutputBytes,
			got.Document.Output, err, version, output)
	}
	head, err := e.runs.RunHead(bg, id)
	if err != nil || head.Version != version || head.Document.Output != "" || head.OutputBytes != len(output) ||
		!reflect.DeepEqual(head.Document.Steps, got.Document.Steps) || head.Document.Status != got.Document.Status {
		tb.Fatalf("head %+v (%v)", head, err)
	}
}

// parts counts the rows of run_output of run id.
func (e *runEnv) parts(tb testing.TB, id kernel.ID) int {
	tb.Helper()
	var n int
	if err := storage.ScanIn(bg, e.db, `SELECT COUNT(*) FROM run_output WHERE run_id = ?`, &n, string(id)); err != nil {
		tb.Fatal(err)
	}
	return n
}
