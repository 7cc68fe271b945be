package notify_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/notify"
)

// fakeLog is a log in memory.
type fakeLog struct {
	mu    sync.Mutex
	evs   []kernel.LoggedEvent
	reads int // EventsAfter calls
}

func (l *fakeLog) EventsAfter(_ context.Context, after int64, limit int) ([]kernel.LoggedEvent, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	var out []kernel.LoggedEvent
	for _, e := range l.evs {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// count is the seq of the newest event.
func (l *fakeLog) count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.evs))
}

func (l *fakeLog) ReadHead(context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.evs)), nil
}

func (l *fakeLog) append(tb testing.TB, typ string, payload any) int64 {
	tb.Helper()
	return l.appendAbout(tb, typ, kernel.NilID, payload)
}

// appendAbout appends an event about subject.
func (l *fakeLog) appendAbout(tb testing.TB, typ string, subject kernel.ID, payload any) int64 {
	tb.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		tb.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := int64(len(l.evs) + 1)
	l.evs = append(l.evs, kernel.LoggedEvent{Seq: seq, Type: typ, SubjectID: subject, Payload: b})
	return seq
}

// fakeStore is notify.Store in memory; the reads the notifier makes come from its maps.
type fakeStore struct {
	mu       sync.Mutex                    // the cursor, which Run's goroutine moves
	levels   map[[2]kernel.ID]notify.Level // principal, channel
	subs     map[[2]kernel.ID]notify.Level // principal, thread
	mentions map[kernel.ID][]kernel.ID
	people   map[kernel.ID]notify.Person
	cursor   *int64
	moves    int
}

var _ notify.Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore {
	return &fakeStore{levels: map[[2]kernel.ID]notify.Level{}, subs: map[[2]kernel.ID]notify.Level{},
		mentions: map[kernel.ID][]kernel.ID{}, people: map[kernel.ID]notify.Person{}}
}

func (s *fakeStore) Level(_ context.Context, p, c kernel.ID) (notify.Level, bool, error) {
	l, ok := s.levels[[2]kernel.ID{p, c}]
	return l, ok, nil
}
func (s *fakeStore) SetLevel(_ context.Context, p, c kernel.ID, l notify.Level, _ time.Time) error {
	s.levels[[2]kernel.ID{p, c}] = l
	return nil
}
func (s *fakeStore) Subscription(_ context.Context, p, th kernel.ID) (notify.Level, bool, error) {
	l, ok := s.subs[[2]kernel.ID{p, th}]
	return l, ok, nil
}
func (s *fakeStore) SetSubscription(_ context.Context, p, th kernel.ID, l notify.Level, _ time.Time) error {
	s.subs[[2]kernel.ID{p, th}] = l
	return nil
}
func (s *fakeStore) Follow(_ context.Context, th, p, parent kernel.ID, _ time.Time) error {
	if _, ok := s.subs[[2]kernel.ID{p, th}]; !ok && !p.IsZero() {
		s.subs[[2]kernel.ID{p, th}] = notify.LevelAll
	}
	return nil
}
func (s *fakeStore) Mentioned(_ context.Context, m kernel.ID) ([]kernel.ID, error) {
	return s.mentions[m], nil
}
func (s *fakeStore) ChannelChoosing(_ context.Context, c kernel.ID, l notify.Level) ([]kernel.ID, error) {
	var out []kernel.ID
	for k, v := range s.levels {
		if k[1] == c && v == l {
			out = append(out, k[0])
		}
	}
	return out, nil
}
func (s *fakeStore) ChannelLevels(_ context.Context, c kernel.ID, ids []kernel.ID) (map[kernel.ID]notify.Level, error) {
	out := map[kernel.ID]notify.Level{}
	for _, id := range ids {
		if l, ok := s.levels[[2]kernel.ID{id, c}]; ok {
			out[id] = l
		}
	}
	return out, nil
}
func (s *fakeStore) ThreadLevels(_ context.Context, th kernel.ID) (map[kernel.ID]notify.Level, error) {
	out := map[kernel.ID]notify.Level{}
	for k, v := range s.subs {
		if k[1] == th {
			out[k[0]] = v
		}
	}
	return out, nil
}
func (s *fakeStore) People(_ context.Context, ids []kernel.ID) (map[kernel.ID]notify.Person, error) {
	out := map[kernel.ID]notify.Person{}
	for _, id := range ids {
		if p, ok := s.people[id]; ok {
			out[id] = p
		}
	}
	return out, nil
}

// cursorIs is the cursor, nil before the first start.
func (s *fakeStore) cursorIs() *int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor
}

func (s *fakeStore) Cursor(_ context.Context, _ string, start int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cursor == nil {
		s.cursor = &start
	}
	return *s.cursor, nil
}
func (s *fakeStore) MoveCursor(ctx context.Context, _ string, from, to int64, _ time.Time) (bool, error) {
	if !kerneltest.InUnit(ctx) {
		panic("MoveCursor outside a unit")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if *s.cursor != from {
		return false, nil
	}
	*s.cursor = to
	s.moves++
	return true, nil
}

type fakeThreads map[kernel.ID]chat.Thread

func (f fakeThreads) Channel(context.Context, kernel.ID) (chat.Channel, error) {
	return chat.Channel{}, kernel.ErrNotFound
}
func (f fakeThreads) Thread(_ context.Context, id kernel.ID) (chat.Thread, error) {
	if th, ok := f[id]; ok {
		return th, nil
	}
	return chat.Thread{}, kernel.ErrNotFound
}
func (f fakeThreads) ThreadRef(ctx context.Context, id kernel.ID) (chat.Thread, error) {
	return f.Thread(ctx, id)
}

type fakeDMs map[kernel.ID][]kernel.ID

func (f fakeDMs) Participants(_ context.Context, id kernel.ID) ([]kernel.ID, bool, error) {
	p, ok := f[id]
	return p, ok, nil
}

type fakeFocus map[[2]kernel.ID]bool

func (f fakeFocus) Focused(p, th kernel.ID) bool { return f[[2]kernel.ID{p, th}] }

type fakePusher struct{ got []notify.Push }

func (f *fakePusher) Enqueue(ctx context.Context, _ kernel.ID, p notify.Push) error {
	if !kerneltest.InUnit(ctx) {
		panic("Enqueue outside a unit")
	}
	f.got = append(f.got, p)
	return nil
}

// notifierWorld is a channel, a DM and a thread under the channel's main thread, with people,
// an agent and one person who may not read the channel.
type notifierWorld struct {
	log                          *fakeLog
	store                        *fakeStore
	tx                           *kerneltest.Tx
	az                           *kerneltest.Authz
	focus                        fakeFocus
	push                         *fakePusher
	n                            *notify.Notifier
	threads                      fakeThreads
	space, channel, main, thread kernel.ID
	dm, dmMain                   kernel.ID
	ann, ben, cat, outsider, bot kernel.ID
}

func newNotifierWorld(t *testing.T) *notifierWorld {
	w := &notifierWorld{log: &fakeLog{}, store: newFakeStore(), tx: &kerneltest.Tx{}, focus: fakeFocus{}, push: &fakePusher{}}
	for _, p := range []*kernel.ID{&w.space, &w.channel, &w.main, &w.thread, &w.dm, &w.dmMain, &w.ann, &w.ben, &w.cat, &w.outsider, &w.bot} {
		*p = kernel.NewID()
	}
	for _, p := range []kernel.ID{w.ann, w.ben, w.cat, w.outsider} {
		w.store.people[p] = notify.Person{ID: p}
	}
	w.threads = fakeThreads{
		w.main:   {ID: w.main, ChannelID: w.channel, SpaceID: w.space, IsMain: true, ChannelKind: chat.KindChannel},
		w.thread: {ID: w.thread, ChannelID: w.channel, SpaceID: w.space, ChannelKind: chat.KindChannel},
		w.dmMain: {ID: w.dmMain, ChannelID: w.dm, SpaceID: w.space, IsMain: true, ChannelKind: chat.KindDM},
	}
	w.az = &kerneltest.Authz{Fn: func(a kernel.Actor, act kernel.Action, r kernel.Resource) error {
		if a.ID == w.outsider && r.ChannelID == w.channel {
			return kernel.ErrNotFound
		}
		return nil
	}}
	w.n = notify.NewNotifier(notify.NotifierDeps{Log: w.log, Store: w.store, Threads: w.threads,
		DMs: fakeDMs{w.dm: {w.ann, w.ben}}, Authz: w.az, UoW: w.tx, Events: w.tx, Focus: w.focus, Pusher: w.push})
	return w
}

func (w *notifierWorld) post(t *testing.T, author, thread kernel.ID, content string, mentions ...kernel.ID) messaging.Message {
	t.Helper()
	ch := w.channel
	if thread == w.dmMain {
		ch = w.dm
	}
	m := messaging.Message{ID: kernel.NewID(), ThreadID: thread, ChannelID: ch, SpaceID: w.space, AuthorID: author, Content: content,
		Mentions: mentions}
	w.store.mentions[m.ID] = mentions
	w.log.append(t, messaging.EvMessageCreated.Name, m)
	return m
}

// setLevel stores who's level for the channel (none: no choice) and appends its event, as
// notify.Service.SetLevel does.
func (w *notifierWorld) setLevel(t *testing.T, who kernel.ID, l notify.Level) {
	t.Helper()
	if l == "" {
		delete(w.store.levels, [2]kernel.ID{who, w.channel})
		l = notify.LevelMentions
	} else {
		w.store.levels[[2]kernel.ID{who, w.channel}] = l
	}
	w.log.appendAbout(t, notify.EvLevelUpdated.Name, w.channel, notify.ChannelLevel{ChannelID: w.channel, Level: l})
}

// step runs the notifier over what the log holds and returns the notifications it appended.
func (w *notifierWorld) step(t *testing.T) []kernel.Event {
	t.Helper()
	before := len(w.tx.Events())
	for {
		more, err := w.n.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
	}
	return w.tx.Events()[before:]
}

// to lists the recipients and reasons of evs as "recipient:reason".
func to(t *testing.T, evs []kernel.Event, names map[kernel.ID]string) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		n := e.Payload.(notify.Notification)
		if e.Type != notify.EvNotificationCreated.Name || e.Scope != (kernel.Scope{PrincipalID: e.Scope.PrincipalID}) || e.SubjectID != n.MessageID {
			t.Fatalf("event %+v", e)
		}
		out = append(out, names[e.Scope.PrincipalID]+":"+n.Reason)
	}
	slices.Sort(out)
	return out
}

func TestNotifier(t *testing.T) {
	ctx := context.Background()
	w := newNotifierWorld(t)
	names := map[kernel.ID]string{w.ann: "ann", w.ben: "ben", w.cat: "cat", w.outsider: "outsider", w.bot: "bot"}
	w.post(t, w.ann, w.main, "history @ben", w.ben)
	if err := w.n.Start(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("what the log held before the first start is never notified", func(t *testing.T) {
		if got := w.step(t); len(got) != 0 || w.store.cursor == nil || *w.store.cursor != 1 {
			t.Fatalf("got %v, cursor %v", to(t, got, names), w.store.cursor)
		}
	})

	t.Run("the mentioned people who may read the channel are notified, not the author, an agent or an outsider", func(t *testing.T) {
		m := w.post(t, w.ann, w.main, "@ben @cat @bot @outsider @ann look", w.ben, w.cat, w.bot, w.outsider, w.ann)
		got := to(t, w.step(t), names)
		if want := []string{"ben:mention", "cat:mention"}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		if len(w.push.got) != 2 || w.push.got[0].MessageID != m.ID || w.push.got[0].Preview != m.Content || w.push.got[0].Reason != notify.ReasonMention {
			t.Fatalf("pushes %+v", w.push.got)
		}
	})

	t.Run("a plain message notifies only who chose level all, and level none silences a mention", func(t *testing.T) {
		w.setLevel(t, w.cat, notify.LevelAll)
		w.setLevel(t, w.ben, notify.LevelNone)
		w.post(t, w.ann, w.main, "@ben lunch?", w.ben)
		if got := to(t, w.step(t), names); !slices.Equal(got, []string{"cat:all"}) {
			t.Fatalf("got %v", got)
		}
		w.setLevel(t, w.cat, "")
		w.setLevel(t, w.ben, "")
		w.post(t, w.ann, w.main, "@ben back to normal", w.ben)
		if got := to(t, w.step(t), names); !slices.Equal(got, []string{"ben:mention"}) {
			t.Fatalf("after the levels went back to the default: got %v", got)
		}
	})

	t.Run("a level chosen between two messages of one batch counts from its place in the log", func(t *testing.T) {
		w.post(t, w.ann, w.main, "before") // decided first: the channel's choosers are read now
		w.setLevel(t, w.cat, notify.LevelAll)
		w.post(t, w.ann, w.main, "after")
		got := to(t, w.step(t), names)
		// The first message was decided on the store as it is when it is read, cat's choice
		// included or not; the second must reach cat, whatever the first did.
		if n := len(got); n < 1 || n > 2 || got[n-1] != "cat:all" {
			t.Fatalf("got %v, want cat:all for the message after the choice", got)
		}
		w.setLevel(t, w.cat, "")
		w.post(t, w.ann, w.main, "once more")
		if got := to(t, w.step(t), names); len(got) != 0 {
			t.Fatalf("after cat went back to the default: got %v", got)
		}
	})

	t.Run("a DM's other participant is notified of every message", func(t *testing.T) {
		w.post(t, w.ann, w.dmMain, "hi")
		if got := to(t, w.step(t), names); !slices.Equal(got, []string{"ben:dm"}) {
			t.Fatalf("got %v", got)
		}
	})

	t.Run("a thread's followers hear of its replies, unless they look at it", func(t *testing.T) {
		w.store.subs[[2]kernel.ID{w.ben, w.thread}] = notify.LevelAll
		w.store.subs[[2]kernel.ID{w.cat, w.thread}] = notify.LevelAll
		w.store.subs[[2]kernel.ID{w.ann, w.thread}] = notify.LevelAll
		w.focus[[2]kernel.ID{w.cat, w.thread}] = true
		w.post(t, w.ann, w.thread, "a reply")
		if got := to(t, w.step(t), names); !slices.Equal(got, []string{"ben:thread"}) {
			t.Fatalf("got %v", got)
		}
	})

	t.Run("each batch that notifies moves the cursor once, to its last event", func(t *testing.T) {
		moves := w.store.moves
		w.post(t, w.ann, w.main, "@ben one", w.ben)
		w.post(t, w.ann, w.main, "@ben two", w.ben)
		w.post(t, w.ann, w.main, "@ben three", w.ben)
		if got := w.step(t); len(got) != 3 {
			t.Fatalf("got %d notifications", len(got))
		}
		if w.store.moves != moves+1 || *w.store.cursor != int64(len(w.log.evs)) {
			t.Fatalf("moves %d (was %d), cursor %d, head %d", w.store.moves, moves, *w.store.cursor, len(w.log.evs))
		}
	})

	t.Run("a batch another node notified first appends nothing, and the notifier goes on from that node's cursor", func(t *testing.T) {
		w.post(t, w.ann, w.main, "@ben raced", w.ben)
		*w.store.cursor = int64(len(w.log.evs)) // the other node did it
		if got := w.step(t); len(got) != 0 {
			t.Fatalf("got %v", to(t, got, names))
		}
		w.post(t, w.ann, w.main, "@ben after", w.ben)
		if got := to(t, w.step(t), names); !slices.Equal(got, []string{"ben:mention"}) {
			t.Fatalf("got %v", got)
		}
	})

	t.Run("a batch with nothing to notify writes no cursor", func(t *testing.T) {
		moves := w.store.moves
		w.post(t, w.ann, w.main, "nobody hears this")
		if got := w.step(t); len(got) != 0 || w.store.moves != moves {
			t.Fatalf("got %d notifications, %d moves", len(got), w.store.moves-moves)
		}
	})

	t.Run("a long message's preview is cut", func(t *testing.T) {
		w.push.got = nil
		w.post(t, w.ann, w.main, "@ben "+strings.Repeat("ü", 300), w.ben)
		w.step(t)
		if len(w.push.got) != 1 || len([]rune(w.push.got[0].Preview)) != notify.PreviewLen {
			t.Fatalf("pushes %+v", w.push.got)
		}
	})
}

// fakeWaker is a head that advances when told.
type fakeWaker struct {
	mu sync.Mutex
	ch chan struct{}
}

func (w *fakeWaker) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *fakeWaker) advance() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
	}
	w.ch = make(chan struct{})
}

func TestNotifierRun(t *testing.T) {
	w := newNotifierWorld(t)
	wk := &fakeWaker{}
	w.n = notify.NewNotifier(notify.NotifierDeps{Log: w.log, Store: w.store, Threads: w.threads, DMs: fakeDMs{},
		Authz: w.az, UoW: w.tx, Events: w.tx, Wake: wk, PollInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.n.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	wait := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for len(w.tx.Events()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d notifications, want %d", len(w.tx.Events()), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Run's start stores the head: wait for it before the first message.
	deadline := time.Now().Add(5 * time.Second)
	for w.store.cursorIs() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no cursor")
		}
		time.Sleep(time.Millisecond)
	}

	t.Run("this process's commit of a message.created wakes it (Observe)", func(t *testing.T) {
		w.post(t, w.ann, w.main, "@ben one", w.ben)
		w.n.Observe([]kernel.LoggedEvent{{Type: messaging.EvMessageCreated.Name}})
		wait(1)
	})

	t.Run("a commit without one does not, and the head's advance (another node) does", func(t *testing.T) {
		w.post(t, w.ann, w.main, "@ben two", w.ben)
		w.n.Observe([]kernel.LoggedEvent{{Type: notify.EvNotificationCreated.Name}})
		time.Sleep(50 * time.Millisecond)
		if n := len(w.tx.Events()); n != 1 {
			t.Fatalf("%d notifications before the wake", n)
		}
		wk.advance()
		wait(2)
	})
}

// The events the writer hands over after COMMIT (Observe) serve the next step without a read
// of the log, as long as they follow the cursor; a gap (another node's commits) is read from
// the log, and the kept events serve again once the cursor reaches them.
func TestNotifierTakesCommittedEvents(t *testing.T) {
	ctx := context.Background()
	w := newNotifierWorld(t)
	if err := w.n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	names := map[kernel.ID]string{w.ann: "ann", w.ben: "ben", w.cat: "cat"}
	handOver := func(seqs ...int64) {
		var evs []kernel.LoggedEvent
		for _, s := range seqs {
			evs = append(evs, w.log.evs[s-1])
		}
		w.n.Observe(evs)
	}

	t.Run("events that follow the cursor are not read back", func(t *testing.T) {
		w.post(t, w.ann, w.main, "@ben hi", w.ben)
		handOver(w.log.count())
		reads := w.log.reads
		if got := to(t, w.step(t), names); !slices.Equal(got, []string{"ben:mention"}) {
			t.Fatalf("got %v", got)
		}
		if w.log.reads != reads {
			t.Fatalf("the step read the log %d times, want none", w.log.reads-reads)
		}
	})

	t.Run("a gap before the handed events is read from the log, then the handed ones serve", func(t *testing.T) {
		w.post(t, w.ann, w.main, "@cat from another node", w.cat) // never handed over
		w.post(t, w.ann, w.main, "@ben here again", w.ben)
		handOver(w.log.count())
		if got := to(t, w.step(t), names); !slices.Equal(got, []string{"ben:mention", "cat:mention"}) {
			t.Fatalf("got %v, want both, none lost or repeated", got)
		}
		if got := w.step(t); len(got) != 0 {
			t.Fatalf("a further step notified %d more", len(got))
		}
	})
}

// A notifier that jumps to another node's cursor has not read the level changes up to there:
// it reads every channel's choosers again.
func TestNotifierForgetsChoosersAtAnotherNodesCursor(t *testing.T) {
	ctx := context.Background()
	w := newNotifierWorld(t)
	names := map[kernel.ID]string{w.ann: "ann", w.ben: "ben", w.cat: "cat"}
	w.n = notify.NewNotifier(notify.NotifierDeps{Log: w.log, Store: w.store, Threads: w.threads, DMs: fakeDMs{},
		Authz: w.az, UoW: w.tx, Events: w.tx, BatchSize: 1})
	if err := w.n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	w.post(t, w.ann, w.main, "@ben first", w.ben) // the channel's choosers are read: nobody
	if got := to(t, w.step(t), names); !slices.Equal(got, []string{"ben:mention"}) {
		t.Fatalf("first: got %v", got)
	}
	w.post(t, w.ann, w.main, "@ben raced", w.ben)
	w.setLevel(t, w.cat, notify.LevelAll) // after the raced message: this node never reads it
	*w.store.cursor = int64(len(w.log.evs))
	if got := w.step(t); len(got) != 0 {
		t.Fatalf("raced: got %v", to(t, got, names))
	}
	w.post(t, w.ann, w.main, "after")
	if got := to(t, w.step(t), names); !slices.Equal(got, []string{"cat:all"}) {
		t.Fatalf("after the jump: got %v, want cat:all", got)
	}
}
