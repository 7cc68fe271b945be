package runs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// store is the real runs repository; fail, when set, is what CreateRun, UpdateRun and PatchRun
// answer.
type store struct {
	*storage.RunStore
	fail error
}

func (s *store) CreateRun(ctx context.Context, r runs.Run) error {
	if s.fail != nil {
		return s.fail
	}
	return s.RunStore.CreateRun(ctx, r)
}

func (s *store) UpdateRun(ctx context.Context, r runs.Run) error {
	if s.fail != nil {
		return s.fail
	}
	return s.RunStore.UpdateRun(ctx, r)
}

func (s *store) PatchRun(ctx context.Context, r runs.Run, p runs.Patch) error {
	if s.fail != nil {
		return s.fail
	}
	return s.RunStore.PatchRun(ctx, r, p)
}

// agentStore is the real agents' side of runs; it counts its reads of statuses and of seen times.
type agentStore struct {
	*storage.AgentStore
	mu               sync.Mutex
	reads, seenReads int
}

func (a *agentStore) AgentStatuses(ctx context.Context, ids []kernel.ID) (map[kernel.ID]string, error) {
	a.mu.Lock()
	a.reads++
	a.mu.Unlock()
	return a.AgentStore.AgentStatuses(ctx, ids)
}

func (a *agentStore) ConsumersSeen(ctx context.Context, ids []kernel.ID) (map[kernel.ID]time.Time, error) {
	a.mu.Lock()
	a.seenReads++
	a.mu.Unlock()
	return a.AgentStore.ConsumersSeen(ctx, ids)
}

// structure is the real chat store; it counts its reads.
type structure struct {
	*storage.ChatStore
	mu    sync.Mutex
	reads int
}

func (s *structure) Channel(ctx context.Context, id kernel.ID) (chat.Channel, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.ChatStore.Channel(ctx, id)
}

func (s *structure) Thread(ctx context.Context, id kernel.ID) (chat.Thread, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.ChatStore.Thread(ctx, id)
}

// jobQueue records the jobs of the units that commit; a job enqueued outside a unit gets one
// of its own, as with the queue.
type jobQueue struct {
	db   *storage.DB
	mu   sync.Mutex
	jobs []kernel.Job
}

func (q *jobQueue) Enqueue(ctx context.Context, j kernel.Job) error {
	if j.Name == "" {
		return errors.New("a job without a name")
	}
	return q.db.Do(ctx, func(ctx context.Context) error {
		q.db.AfterCommit(ctx, func() {
			q.mu.Lock()
			q.jobs = append(q.jobs, j)
			q.mu.Unlock()
		})
		return nil
	})
}

func (q *jobQueue) Jobs() []kernel.Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]kernel.Job(nil), q.jobs...)
}

// Levels of the fake rules, as authz has them.
const (
	none = iota
	view
	post
	invoke
	manage
)

// fixture is a runs service on a real store (SQLite in a temp dir): one channel with its main
// thread; people and agents hold the levels of levels on the channel (the rules are decide);
// owner is an owner. The log starts empty after the fixture's own events.
type fixture struct {
	svc       *runs.Service
	db        *storage.DB
	authz     *kerneltest.Authz
	store     *store
	agents    *agentStore
	structure *structure
	jobs      *jobQueue
	messages  *storage.MessageStore
	clock     *kernel.ManualClock
	levels    map[kernel.ID]int
	channel   chat.Channel
	main      chat.Thread
	threads   []kernel.ID // the channel's, the main one first
	after     int64
	dms       *fakeDMs
	// decided is the last decision posted took, with the message it stored.
	decided messaging.Trigger
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
	ctx := context.Background()
	clock := kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 999, time.UTC))
	db := storetest.Open(tb, storage.Options{Clock: clock})
	for _, a := range []kernel.Actor{owner, invoker, poster, viewer, manager, stranger} {
		storetest.Principal(tb, db, a)
	}
	for _, id := range []kernel.ID{echo, mute, off, helper} {
		storetest.Agent(tb, db, id, owner.ID, id != off)
	}
	chats := storage.NewChatStore(db)
	f := &fixture{db: db, store: &store{RunStore: storage.NewRunStore(db)}, agents: &agentStore{AgentStore: storage.NewAgentStore(db)},
		structure: &structure{ChatStore: chats}, jobs: &jobQueue{db: db}, messages: storage.NewMessageStore(db), clock: clock,
		levels: map[kernel.ID]int{invoker.ID: invoke, poster.ID: post, viewer.ID: view, manager.ID: manage,
			echo: view, off: view, helper: view}}
	// The channel is chat's to make, under rules that allow it.
	cs := chat.New(chat.Deps{Store: chats, Principals: chats, UoW: db, Events: db, Authz: &kerneltest.Authz{},
		Scoper: kerneltest.Everything{}, Clock: clock})
	sp, err := cs.CreateSpace(ctx, owner, "home")
	if err != nil {
		tb.Fatal(err)
	}
	if f.channel, err = cs.CreateChannel(ctx, owner, sp.ID, chat.NewChannel{Name: "help"}); err != nil {
		tb.Fatal(err)
	}
	if f.main, err = chats.Thread(ctx, f.channel.MainThreadID); err != nil {
		tb.Fatal(err)
	}
	f.threads, f.after = []kernel.ID{f.main.ID}, db.Head()
	f.authz = &kerneltest.Authz{Fn: f.decide}
	f.dms = &fakeDMs{}
	f.svc = runs.New(runs.Deps{Store: f.store, Agents: f.agents, Structure: f.structure, UoW: db, Events: db, Authz: f.authz, Clock: f.clock, Keys: runs.NewKeyring(&fakeKeys{}, f.clock), Jobs: f.jobs, DMs: f.dms}, kerneltest.With(runs.DefaultConfig(), func(c *runs.Config) {
		c.TokenTTL, c.QueuedTimeout, c.StallTimeout, c.CancelGrace, c.StallBatch = time.Minute, 2*time.Minute, 3*time.Minute, 30*time.Second, 2
	}))
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
// mentions; post stores it.
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
	err := f.db.Do(context.Background(), func(ctx context.Context) error {
		return f.posted(ctx, author, m, newThread, &state)
	})
	if err != nil {
		tb.Fatalf("post: %v", err)
	}
	return state
}

// posted does, in the unit of ctx, what messaging does for a new message m: MessageDeciding,
// whose trigger state it puts in state (and the whole decision in f.decided), then m stored
// with it, then MessagePosted with the agents decided.
func (f *fixture) posted(ctx context.Context, author kernel.Actor, m messaging.Message, newThread bool, state *string) error {
	var trigger messaging.Trigger
	if err := f.svc.OnMessageDeciding(ctx, messaging.MessageDeciding{Message: m, NewThread: newThread, Author: author, Trigger: &trigger}); err != nil {
		return err
	}
	*state, f.decided = trigger.State, trigger
	if trigger.State != "" {
		m.TriggerState = &trigger.State
	}
	m.Triggers = trigger.Agents
	if _, err := f.messages.InsertMessage(ctx, m); err != nil {
		return err
	}
	return f.svc.OnMessagePosted(ctx, messaging.MessagePosted{Message: m, NewThread: newThread, Author: author, Invoke: trigger.Invoke})
}

// newThread adds a thread, opened by author, to the fixture's channel and returns its first
// message by author.
func (f *fixture) newThread(tb testing.TB, author kernel.Actor, mentions ...kernel.ID) messaging.Message {
	tb.Helper()
	now := f.clock.Now().UTC().Truncate(time.Microsecond)
	th := chat.Thread{ID: kernel.NewID(), ChannelID: f.channel.ID, SpaceID: f.channel.SpaceID, CreatedBy: author.ID,
		CreatedAt: now, UpdatedAt: now}
	f.do(tb, func(ctx context.Context) error { return f.structure.CreateThread(ctx, th) })
	f.threads = append(f.threads, th.ID)
	m := f.message(author, mentions...)
	m.ThreadID = th.ID
	return m
}

// setOperator names agent the channel's operator, whatever its state (chat checks that, not runs).
func (f *fixture) setOperator(tb testing.TB, agent kernel.ID) {
	tb.Helper()
	f.channel.OperatorID = &agent
	f.do(tb, func(ctx context.Context) error { return f.structure.SetOperator(ctx, f.channel) })
}

// do runs fn in a unit of the fixture's store.
func (f *fixture) do(tb testing.TB, fn func(ctx context.Context) error) {
	tb.Helper()
	if err := f.db.Do(context.Background(), fn); err != nil {
		tb.Fatal(err)
	}
}

// events returns the log after the fixture's own events.
func (f *fixture) events(tb testing.TB) []kernel.LoggedEvent {
	tb.Helper()
	return storetest.LogAfter(tb, f.db, f.after)
}

// eventsSince returns the events after the first n of events.
func (f *fixture) eventsSince(tb testing.TB, n int) []kernel.LoggedEvent { return f.events(tb)[n:] }

// run returns a run as stored.
func (f *fixture) run(tb testing.TB, id kernel.ID) runs.Run {
	tb.Helper()
	r, err := f.store.Run(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// allRuns returns the runs of every thread of the channel.
func (f *fixture) allRuns(tb testing.TB) []runs.Run {
	tb.Helper()
	var out []runs.Run
	for _, th := range f.threads {
		rs, _, err := f.store.ThreadRuns(context.Background(), th, chat.Page{Limit: 200})
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range rs {
			out = append(out, f.run(tb, r.ID))
		}
	}
	return out
}

// putRun stores r's state as it is: a run the store does not have yet is created.
func (f *fixture) putRun(tb testing.TB, r runs.Run) {
	tb.Helper()
	f.do(tb, func(ctx context.Context) error {
		if _, err := f.store.RunStore.Run(ctx, r.ID); kernel.IsCode(err, kernel.CodeNotFound) {
			return f.store.RunStore.CreateRun(ctx, r)
		}
		return f.store.RunStore.UpdateRun(ctx, r)
	})
}

// seen records that agent's consumer was last seen at.
func (f *fixture) seen(tb testing.TB, agent kernel.ID, at time.Time) {
	tb.Helper()
	if err := storage.NewConsumerStore(f.db).SaveAcks(context.Background(), map[kernel.ID]int64{agent: 0}, at); err != nil {
		tb.Fatal(err)
	}
}

// disable disables a principal.
func (f *fixture) disable(tb testing.TB, id kernel.ID) {
	tb.Helper()
	f.do(tb, func(ctx context.Context) error {
		return storage.NewIdentityStore(f.db).DisablePrincipal(ctx, id, f.clock.Now())
	})
}

func typesOf(evs []kernel.LoggedEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}
