package messaging_test

import (
	"bothy.dev/bothy/app/kernel/kerneltest"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// The kernel fakes are shared with the other modules' tests.
type (
	fakeTx    = kerneltest.Tx
	fakeAuthz = kerneltest.Authz
)

// fakeThreads is chat's Threads port over maps.
type fakeThreads struct {
	mu       sync.Mutex
	events   kernel.EventLog
	channels map[kernel.ID]chat.Channel
	threads  map[kernel.ID]chat.Thread
	// race, when set, runs in CreateThreadUnder before it looks for the thread: a test makes
	// the thread of a concurrent request there.
	race func(parent kernel.ID)
}

var _ chat.Threads = (*fakeThreads)(nil)

func (f *fakeThreads) Channel(ctx context.Context, id kernel.ID) (chat.Channel, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.channels[id]
	if !ok {
		return c, kernel.ErrNotFound
	}
	return c, nil
}

func (f *fakeThreads) ThreadRef(ctx context.Context, id kernel.ID) (chat.Thread, error) {
	return f.Thread(ctx, id)
}

func (f *fakeThreads) Thread(ctx context.Context, id kernel.ID) (chat.Thread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.threads[id]
	if !ok {
		return t, kernel.ErrNotFound
	}
	return t, nil
}

func (f *fakeThreads) CreateThread(ctx context.Context, actorID kernel.ID, ch chat.Channel, title string) (chat.Thread, error) {
	title, err := chat.CleanOptional("title", title, chat.MaxTitleLen)
	if err != nil {
		return chat.Thread{}, err
	}
	t := chat.Thread{ID: kernel.NewID(), ChannelID: ch.ID, SpaceID: ch.SpaceID, Title: title, CreatedBy: actorID, ChannelKind: ch.Kind}
	f.mu.Lock()
	f.threads[t.ID] = t
	f.mu.Unlock()
	f.events.Append(ctx, kernel.Event{Type: chat.EvThreadCreated.Name, Scope: t.Scope(), SubjectID: t.ID, ActorID: actorID, Payload: t})
	return t, nil
}

func (f *fakeThreads) CreateThreadUnder(ctx context.Context, actorID kernel.ID, ch chat.Channel, parent kernel.ID) (chat.Thread, bool, error) {
	if f.race != nil {
		f.race(parent) // a concurrent request makes the thread first
	}
	if t, err := f.ThreadByParent(ctx, parent); err == nil {
		return t, false, nil
	}
	t := chat.Thread{ID: kernel.NewID(), ChannelID: ch.ID, SpaceID: ch.SpaceID, CreatedBy: actorID, ChannelKind: ch.Kind,
		ParentMessageID: &parent}
	f.mu.Lock()
	f.threads[t.ID] = t
	f.mu.Unlock()
	f.events.Append(ctx, kernel.Event{Type: chat.EvThreadCreated.Name, Scope: t.Scope(), SubjectID: t.ID, ActorID: actorID, Payload: t})
	return t, true, nil
}

func (f *fakeThreads) ThreadByParent(ctx context.Context, messageID kernel.ID) (chat.Thread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.threads {
		if t.ParentMessageID != nil && *t.ParentMessageID == messageID {
			return t, nil
		}
	}
	return chat.Thread{}, kernel.ErrNotFound
}

func (f *fakeThreads) AppendToThread(ctx context.Context, id kernel.ID, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.threads[id]
	if !ok {
		return kernel.ErrNotFound
	}
	t.MessageCount++
	t.LastMessageAt = &at
	f.threads[id] = t
	return nil
}

func (f *fakeThreads) RemoveFromThread(ctx context.Context, id kernel.ID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.threads[id]
	if !ok {
		return kernel.ErrNotFound
	}
	t.MessageCount--
	f.threads[id] = t
	return nil
}

// fakeStore keeps messaging's rows in maps.
type fakeStore struct {
	mu        sync.Mutex
	messages  map[kernel.ID]messaging.Message
	revisions map[kernel.ID][]messaging.Revision
	reactions map[string]messaging.Reaction
}

var _ messaging.Store = (*fakeStore)(nil)

func (f *fakeStore) InsertMessage(ctx context.Context, m messaging.Message) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.ClientMsgID != "" {
		for _, o := range f.messages {
			if o.AuthorID == m.AuthorID && o.ClientMsgID == m.ClientMsgID {
				return false, nil
			}
		}
	}
	f.messages[m.ID] = m
	return true, nil
}

func (f *fakeStore) MessageByClientID(ctx context.Context, author kernel.ID, cmid string) (messaging.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.messages {
		if cmid != "" && o.AuthorID == author && string(o.ClientMsgID) == cmid {
			return o, nil
		}
	}
	return messaging.Message{}, kernel.ErrNotFound
}

func (f *fakeStore) Message(ctx context.Context, id kernel.ID) (messaging.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.messages[id]
	if !ok {
		return m, kernel.ErrNotFound
	}
	return m, nil
}

func (f *fakeStore) Messages(ctx context.Context, threadID kernel.ID, p chat.Page) ([]messaging.Message, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []messaging.Message
	for _, m := range f.messages {
		if m.ThreadID == threadID {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b messaging.Message) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	more := len(out) > p.Limit
	if more {
		out = out[len(out)-p.Limit:]
	}
	return out, more, nil
}

func (f *fakeStore) UpdateMessage(ctx context.Context, m messaging.Message, prev messaging.Revision) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.messages[m.ID] = m
	f.revisions[m.ID] = append(f.revisions[m.ID], prev)
	return nil
}

func (f *fakeStore) SetTriggerState(ctx context.Context, id kernel.ID, state string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.messages[id]
	if !ok {
		return kernel.ErrNotFound
	}
	m.TriggerState = &state
	f.messages[id] = m
	return nil
}

func (f *fakeStore) DeleteMessage(ctx context.Context, m messaging.Message, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.messages[m.ID] = m
	delete(f.revisions, m.ID)
	return nil
}

func (f *fakeStore) Revisions(ctx context.Context, id kernel.ID) ([]messaging.Revision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.revisions[id]), nil
}

func (f *fakeStore) AddReaction(ctx context.Context, r messaging.Reaction) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := string(r.MessageID) + "/" + string(r.PrincipalID) + "/" + r.Emoji
	if _, ok := f.reactions[k]; ok {
		return false, nil
	}
	f.reactions[k] = r
	return true, nil
}

func (f *fakeStore) RemoveReaction(ctx context.Context, mid, pid kernel.ID, emoji string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := string(mid) + "/" + string(pid) + "/" + emoji
	if _, ok := f.reactions[k]; !ok {
		return false, nil
	}
	delete(f.reactions, k)
	return true, nil
}

// fakeDirectory knows a fixed set of handle keys.
type fakeDirectory struct{ handles map[string]kernel.ID }

var _ messaging.Directory = (*fakeDirectory)(nil)

func (d *fakeDirectory) ResolveHandles(ctx context.Context, keys []string) (map[string]kernel.ID, error) {
	out := map[string]kernel.ID{}
	for _, k := range keys {
		if id, ok := d.handles[k]; ok {
			out[k] = id
		}
	}
	return out, nil
}

// fakeRedactor records its calls.
type fakeRedactor struct {
	calls []redaction
}

type redaction struct {
	Subject kernel.ID
	Types   []string
	Payload any
}

var _ messaging.Redactor = (*fakeRedactor)(nil)

func (r *fakeRedactor) RedactEvents(ctx context.Context, subject kernel.ID, types []string, payload any) error {
	if !kerneltest.InUnit(ctx) {
		panic("redaction outside a unit of work")
	}
	r.calls = append(r.calls, redaction{subject, types, payload})
	return nil
}

// msgFixture is a messaging service over fakes, with one space, a channel and its main thread.
type msgFixture struct {
	svc      *messaging.Service
	tx       *fakeTx
	authz    *fakeAuthz
	threads  *fakeThreads
	store    *fakeStore
	redactor *fakeRedactor
	bus      *kernel.TxBus
	posted   []messaging.MessagePosted
	deleted  []messaging.MessageDeleted
	veto     error
	trigger  string // what the subscriber records as the trigger state
	channel  chat.Channel
	main     chat.Thread
}

var (
	alice = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "alice"}
	bob   = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "Bob"}
	carol = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindAgent, Handle: "carol"}
)

func mustMessaging(tb testing.TB) *msgFixture {
	tb.Helper()
	f := &msgFixture{tx: &fakeTx{}, authz: &fakeAuthz{}, redactor: &fakeRedactor{}, bus: kernel.NewTxBus(),
		store: &fakeStore{messages: map[kernel.ID]messaging.Message{}, revisions: map[kernel.ID][]messaging.Revision{},
			reactions: map[string]messaging.Reaction{}}}
	space := kernel.NewID()
	f.channel = chat.Channel{ID: kernel.NewID(), SpaceID: space, Name: "general", Kind: chat.KindChannel}
	f.main = chat.Thread{ID: kernel.NewID(), ChannelID: f.channel.ID, SpaceID: space, IsMain: true, ChannelKind: chat.KindChannel}
	f.channel.MainThreadID = f.main.ID
	f.threads = &fakeThreads{events: f.tx, channels: map[kernel.ID]chat.Channel{f.channel.ID: f.channel},
		threads: map[kernel.ID]chat.Thread{f.main.ID: f.main}}
	kernel.Subscribe(f.bus, "test", func(ctx context.Context, ev messaging.MessageDeciding) error {
		if f.trigger != "" {
			ev.Trigger.State = f.trigger
		}
		return nil
	})
	kernel.Subscribe(f.bus, "test", func(ctx context.Context, ev messaging.MessagePosted) error {
		if f.veto != nil {
			return f.veto
		}
		f.posted = append(f.posted, ev)
		return nil
	})
	kernel.Subscribe(f.bus, "test", func(ctx context.Context, ev messaging.MessageDeleted) error {
		f.deleted = append(f.deleted, ev)
		return nil
	})
	f.bus.Seal()
	dir := &fakeDirectory{handles: map[string]kernel.ID{"alice": alice.ID, "bob": bob.ID, "carol": carol.ID}}
	f.svc = messaging.New(messaging.Deps{Store: f.store, Threads: f.threads, Directory: dir, Redactor: f.redactor,
		UoW: f.tx, Events: f.tx, Authz: f.authz, Bus: f.bus,
		Clock: kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 999, time.UTC))})
	return f
}

func mustPost(tb testing.TB, f *msgFixture, actor kernel.Actor, content string) messaging.Message {
	tb.Helper()
	m, created, err := f.svc.CreateMessage(context.Background(), actor, f.main.ID, messaging.NewMessage{Content: content})
	if err != nil || !created {
		tb.Fatalf("post: %v (created %v)", err, created)
	}
	return m
}
