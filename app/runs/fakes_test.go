package runs_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
)

// fakeStore keeps runs in a map; writes must run in a unit of the fake Tx, as in the store.
type fakeStore struct {
	mu   sync.Mutex
	runs map[kernel.ID]runs.Run
	// fail, when set, is what CreateRun and UpdateRun answer.
	fail error
}

var _ runs.Store = (*fakeStore)(nil)

func (f *fakeStore) CreateRun(ctx context.Context, r runs.Run) error {
	if !kerneltest.InUnit(ctx) {
		panic("CreateRun outside a unit of work")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	for _, o := range f.runs {
		if o.AgentID == r.AgentID && o.TriggerMessageID != nil && r.TriggerMessageID != nil && *o.TriggerMessageID == *r.TriggerMessageID {
			return kernel.Errorf(kernel.CodeConflict, "run already exists")
		}
	}
	f.runs[r.ID] = r
	return nil
}

func (f *fakeStore) Run(ctx context.Context, id kernel.ID) (runs.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return r, kernel.ErrNotFound
	}
	return r, nil
}

func (f *fakeStore) sorted(keep func(runs.Run) bool) []runs.Run {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []runs.Run{}
	for _, r := range f.runs {
		if keep(r) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b runs.Run) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return out
}

func (f *fakeStore) ThreadRuns(ctx context.Context, threadID kernel.ID, p chat.Page) ([]runs.Run, bool, error) {
	out := f.sorted(func(r runs.Run) bool { return r.ThreadID == threadID })
	more := len(out) > p.Limit
	if more {
		out = out[len(out)-p.Limit:]
	}
	return out, more, nil
}

func (f *fakeStore) UnendedRuns(ctx context.Context, agentID kernel.ID) ([]runs.Run, error) {
	return f.sorted(func(r runs.Run) bool { return r.AgentID == agentID && !r.Status.Terminal() }), nil
}

func (f *fakeStore) StalledRuns(ctx context.Context, before time.Time, limit int) ([]runs.Run, error) {
	out := f.sorted(func(r runs.Run) bool {
		return (r.Status == runs.StatusRunning || r.Status == runs.StatusWaitingInput) && r.LastActivityAt.Before(before)
	})
	slices.SortStableFunc(out, func(a, b runs.Run) int { return a.LastActivityAt.Compare(b.LastActivityAt) })
	return out[:min(limit, len(out))], nil
}

func (f *fakeStore) UpdateRun(ctx context.Context, r runs.Run) error {
	if !kerneltest.InUnit(ctx) {
		panic("UpdateRun outside a unit of work")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	old, ok := f.runs[r.ID]
	if !ok {
		return kernel.ErrNotFound
	}
	// As the store: the document (and its version) is PatchRun's to write.
	r.Version, r.Document, r.OutputBytes = old.Version, old.Document, old.OutputBytes
	f.runs[r.ID] = r
	return nil
}

// RunHead is Run without the output, with its length.
func (f *fakeStore) RunHead(ctx context.Context, id kernel.ID) (runs.Run, error) {
	r, err := f.Run(ctx, id)
	r.OutputBytes, r.Document.Output = len(r.Document.Output), ""
	return r, err
}

// PatchRun writes r as the store does: the stored output changes by p's output only, never by
// r.Document.Output, which a patched run does not hold.
func (f *fakeStore) PatchRun(ctx context.Context, r runs.Run, p runs.Patch) error {
	if !kerneltest.InUnit(ctx) {
		panic("PatchRun outside a unit of work")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	old, ok := f.runs[r.ID]
	if !ok {
		return kernel.ErrNotFound
	}
	if old.Version != p.BaseVersion() {
		return kernel.Errorf(runs.CodeRunVersionConflict, "stored version %d", old.Version)
	}
	out := old.Document.Output
	if p.Output != nil {
		out = *p.Output
	}
	out += p.OutputAppend
	if len(out) != r.OutputBytes {
		panic(fmt.Sprintf("PatchRun: output_bytes %d for an output of %d bytes", r.OutputBytes, len(out)))
	}
	r.Document.Output = out
	f.runs[r.ID] = r
	return nil
}

// fakeAgents knows the status of each agent, when each agent's consumer was last seen, and the
// principals as actors (disabled: not active); it counts its reads of statuses and of seen times.
type fakeAgents struct {
	status     map[kernel.ID]string
	reads      int
	seen       map[kernel.ID]time.Time
	seenReads  int
	principals map[kernel.ID]kernel.Actor
	disabled   map[kernel.ID]bool
}

func (f *fakeAgents) ConsumersSeen(ctx context.Context, ids []kernel.ID) (map[kernel.ID]time.Time, error) {
	f.seenReads++
	out := map[kernel.ID]time.Time{}
	for _, id := range ids {
		if at, ok := f.seen[id]; ok {
			out[id] = at
		}
	}
	return out, nil
}

func (f *fakeAgents) Principal(ctx context.Context, id kernel.ID) (kernel.Actor, bool, error) {
	a, ok := f.principals[id]
	if !ok {
		return kernel.Actor{}, false, kernel.ErrNotFound
	}
	return a, !f.disabled[id], nil
}

var _ runs.Agents = (*fakeAgents)(nil)

func (f *fakeAgents) AgentStatuses(ctx context.Context, ids []kernel.ID) (map[kernel.ID]string, error) {
	f.reads++
	out := map[kernel.ID]string{}
	for _, id := range ids {
		if s, ok := f.status[id]; ok {
			out[id] = s
		}
	}
	return out, nil
}

// fakeStructure holds one channel and its threads.
type fakeStructure struct {
	channel chat.Channel
	threads map[kernel.ID]chat.Thread
	reads   int
}

var _ runs.Structure = (*fakeStructure)(nil)

func (f *fakeStructure) Channel(ctx context.Context, id kernel.ID) (chat.Channel, error) {
	f.reads++
	if id != f.channel.ID {
		return chat.Channel{}, kernel.ErrNotFound
	}
	return f.channel, nil
}

func (f *fakeStructure) Thread(ctx context.Context, id kernel.ID) (chat.Thread, error) {
	f.reads++
	th, ok := f.threads[id]
	if !ok {
		return th, kernel.ErrNotFound
	}
	return th, nil
}

// Levels of the fake rules, as authz has them.
const (
	none = iota
	view
	post
	invoke
	manage
)

// fixture is a runs service over fakes: one channel with its main thread; people and agents hold
// the levels of levels on the channel; owner is an owner.
type fixture struct {
	svc       *runs.Service
	tx        *kerneltest.Tx
	authz     *kerneltest.Authz
	store     *fakeStore
	agents    *fakeAgents
	structure *fakeStructure
	clock     *kernel.ManualClock
	levels    map[kernel.ID]int
	channel   chat.Channel
	main      chat.Thread
}

var (
	owner    = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, IsOwner: true}
	invoker  = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // invoke
	poster   = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // post
	viewer   = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // view
	manager  = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // manage
	stranger = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // nothing
	echo     = kernel.NewID()                                            // an active agent with view
	mute     = kernel.NewID()                                            // an active agent without a grant
	off      = kernel.NewID()                                            // a disabled agent with view
	helper   = kernel.NewID()                                            // another active agent with view
)

func mustRuns(tb testing.TB) *fixture {
	tb.Helper()
	f := &fixture{tx: &kerneltest.Tx{}, store: &fakeStore{runs: map[kernel.ID]runs.Run{}},
		clock: kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 999, time.UTC)),
		agents: &fakeAgents{status: map[kernel.ID]string{echo: agents.StatusActive, mute: agents.StatusActive,
			off: agents.StatusDisabled, helper: agents.StatusActive}, seen: map[kernel.ID]time.Time{},
			principals: map[kernel.ID]kernel.Actor{}, disabled: map[kernel.ID]bool{off: true}},
		levels: map[kernel.ID]int{invoker.ID: invoke, poster.ID: post, viewer.ID: view, manager.ID: manage,
			echo: view, off: view, helper: view}}
	for _, a := range []kernel.Actor{owner, invoker, poster, viewer, manager, stranger} {
		f.agents.principals[a.ID] = a
	}
	for _, id := range []kernel.ID{echo, mute, off, helper} {
		f.agents.principals[id] = kernel.Actor{ID: id, Kind: kernel.KindAgent}
	}
	space := kernel.NewID()
	f.channel = chat.Channel{ID: kernel.NewID(), SpaceID: space, Name: "help", Kind: chat.KindChannel}
	f.main = chat.Thread{ID: kernel.NewID(), ChannelID: f.channel.ID, SpaceID: space, IsMain: true, ChannelKind: chat.KindChannel}
	f.channel.MainThreadID = f.main.ID
	f.structure = &fakeStructure{channel: f.channel, threads: map[kernel.ID]chat.Thread{f.main.ID: f.main}}
	f.authz = &kerneltest.Authz{Fn: f.decide}
	f.svc = runs.New(runs.Deps{Store: f.store, Agents: f.agents, Structure: f.structure, UoW: f.tx, Events: f.tx,
		Authz: f.authz, Clock: f.clock, Keys: runs.NewKeyring(&fakeKeys{}, f.clock), TokenTTL: time.Minute,
		Jobs: f.tx, QueuedTimeout: 2 * time.Minute, StallTimeout: 3 * time.Minute, CancelGrace: 30 * time.Second, StallBatch: 2})
	return f
}

// decide is the fake of authz's rules on the fixture's one channel.
func (f *fixture) decide(actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
	if !actor.Authenticated() {
		return kernel.Errorf(kernel.CodeUnauthenticated, "no principal")
	}
	if r.ChannelID != f.channel.ID {
		return kernel.ErrNotFound
	}
	level := f.levels[actor.ID]
	if actor.IsOwner && actor.Kind == kernel.KindPerson {
		level = manage
	}
	if level == none {
		return kernel.ErrNotFound
	}
	allowed := false
	switch action {
	case chat.ActChannelRead, runs.ActRunRead:
		allowed = true
	case chat.ActThreadCreate, messaging.ActMessageCreate:
		allowed = level >= post
	case runs.ActAgentInvoke:
		allowed = level >= invoke
	case runs.ActRunCancel:
		allowed = r.OwnerID == actor.ID || level >= manage
	}
	if !allowed {
		return kernel.Errorf(kernel.CodeForbidden, "not allowed")
	}
	return nil
}

// message is a message by author in the fixture's main thread (or in th when given), mentioning
// mentions.
func (f *fixture) message(author kernel.Actor, mentions ...kernel.ID) messaging.Message {
	return messaging.Message{ID: kernel.NewID(), ThreadID: f.main.ID, ChannelID: f.channel.ID, SpaceID: f.channel.SpaceID,
		AuthorID: author.ID, Content: "hello", Mentions: mentions, Version: 1, CreatedAt: f.clock.Now(),
		ChannelKind: chat.KindChannel}
}

// post delivers MessageDeciding and MessagePosted for m inside a unit, as messaging does, and
// returns the trigger state decided.
func (f *fixture) post(tb testing.TB, author kernel.Actor, m messaging.Message, newThread bool) string {
	tb.Helper()
	var state string
	err := f.tx.Do(context.Background(), func(ctx context.Context) error {
		return f.posted(ctx, author, m, newThread, &state)
	})
	if err != nil {
		tb.Fatalf("post: %v", err)
	}
	return state
}

// posted publishes, in the unit of ctx, what messaging does for a new message m: MessageDeciding,
// whose trigger state it puts in state, then (m stored) MessagePosted with the agents decided.
func (f *fixture) posted(ctx context.Context, author kernel.Actor, m messaging.Message, newThread bool, state *string) error {
	var trigger messaging.Trigger
	if err := f.svc.OnMessageDeciding(ctx, messaging.MessageDeciding{Message: m, NewThread: newThread, Author: author, Trigger: &trigger}); err != nil {
		return err
	}
	*state = trigger.State
	return f.svc.OnMessagePosted(ctx, messaging.MessagePosted{Message: m, NewThread: newThread, Author: author, Invoke: trigger.Invoke})
}

// newThread adds a thread to the fixture's channel and returns its first message by author.
func (f *fixture) newThread(author kernel.Actor, mentions ...kernel.ID) messaging.Message {
	th := chat.Thread{ID: kernel.NewID(), ChannelID: f.channel.ID, SpaceID: f.channel.SpaceID, CreatedBy: author.ID,
		ChannelKind: chat.KindChannel}
	f.structure.threads[th.ID] = th
	m := f.message(author, mentions...)
	m.ThreadID = th.ID
	return m
}

// setOperator names agent the channel's operator.
func (f *fixture) setOperator(agent kernel.ID) {
	f.channel.OperatorID = &agent
	f.structure.channel = f.channel
}

// events returns the types of the events the committed units appended since n.
func (f *fixture) eventsSince(n int) []kernel.Event { return f.tx.Events()[n:] }

func typesOf(evs []kernel.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}
