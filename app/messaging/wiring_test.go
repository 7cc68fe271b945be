package messaging_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// threads is chat's service; race, when set, runs in CreateThreadUnder before it looks for the
// thread: a test makes the thread of a concurrent request there.
type threads struct {
	*chat.Service
	race func(ctx context.Context, parent kernel.ID)
}

func (t *threads) CreateThreadUnder(ctx context.Context, actorID kernel.ID, ch chat.Channel, parent kernel.ID) (chat.Thread, bool, error) {
	if t.race != nil {
		t.race(ctx, parent)
	}
	return t.Service.CreateThreadUnder(ctx, actorID, ch, parent)
}

// redactor is the store's, and records its calls.
type redactor struct {
	db    *storage.DB
	calls []redaction
}

type redaction struct {
	Subject kernel.ID
	Types   []string
	Payload any
}

func (r *redactor) RedactEvents(ctx context.Context, subject kernel.ID, types []string, payload any) error {
	r.calls = append(r.calls, redaction{subject, types, payload})
	return r.db.RedactEvents(ctx, subject, types, payload)
}

// msgFixture is the messaging service on a real store (SQLite in a temp dir) with chat's service
// for the threads, and one space, a channel and its main thread made by alice. The log and the
// decisions start empty after them.
type msgFixture struct {
	svc      *messaging.Service
	db       *storage.DB
	store    *storage.MessageStore
	chats    *storage.ChatStore
	authz    *kerneltest.Authz
	threads  *threads
	redactor *redactor
	clock    *kernel.ManualClock
	after    int64 // the log's seq after the fixture's own events

	mu      sync.Mutex
	posted  []messaging.MessagePosted
	deleted []messaging.MessageDeleted
	veto    error
	trigger string // what the subscriber records as the trigger state
	channel chat.Channel
	main    chat.Thread
}

var (
	alice = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "alice"}
	bob   = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "Bob"}
	carol = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindAgent, Handle: "carol"}
)

func mustMessaging(tb testing.TB) *msgFixture {
	tb.Helper()
	ctx := context.Background()
	clock := kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 999, time.UTC))
	db := storetest.Open(tb, storage.Options{Clock: clock})
	for _, a := range []kernel.Actor{alice, bob, carol} {
		storetest.Principal(tb, db, a)
	}
	f := &msgFixture{db: db, store: storage.NewMessageStore(db), chats: storage.NewChatStore(db), authz: &kerneltest.Authz{},
		redactor: &redactor{db: db}, clock: clock}
	f.threads = &threads{Service: chat.New(chat.Deps{Store: f.chats, Principals: f.chats, UoW: db, Events: db, Authz: f.authz,
		Scoper: kerneltest.Everything{}, Clock: clock})}
	sp, err := f.threads.CreateSpace(ctx, alice, "home")
	if err != nil {
		tb.Fatal(err)
	}
	if f.channel, err = f.threads.CreateChannel(ctx, alice, sp.ID, chat.NewChannel{Name: "general"}); err != nil {
		tb.Fatal(err)
	}
	if f.main, err = f.threads.Thread(ctx, f.channel.MainThreadID); err != nil {
		tb.Fatal(err)
	}
	f.after, f.authz.Calls = db.Head(), nil

	bus := kernel.NewTxBus()
	kernel.Subscribe(bus, "test", func(ctx context.Context, ev messaging.MessageDeciding) error {
		if f.trigger != "" {
			ev.Trigger.State = f.trigger
		}
		return nil
	})
	kernel.Subscribe(bus, "test", func(ctx context.Context, ev messaging.MessagePosted) error {
		if f.veto != nil {
			return f.veto
		}
		f.mu.Lock()
		f.posted = append(f.posted, ev)
		f.mu.Unlock()
		return nil
	})
	kernel.Subscribe(bus, "test", func(ctx context.Context, ev messaging.MessageDeleted) error {
		f.mu.Lock()
		f.deleted = append(f.deleted, ev)
		f.mu.Unlock()
		return nil
	})
	bus.Seal()
	f.svc = messaging.New(messaging.Deps{Store: f.store, Threads: f.threads, Directory: f.store, Redactor: f.redactor,
		UoW: db, Events: db, Authz: f.authz, Bus: bus, Clock: clock})
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

// events returns the log after the fixture's own events.
func (f *msgFixture) events(tb testing.TB) []kernel.LoggedEvent {
	tb.Helper()
	return storetest.LogAfter(tb, f.db, f.after)
}

// thread returns a thread as stored.
func (f *msgFixture) thread(tb testing.TB, id kernel.ID) chat.Thread {
	tb.Helper()
	th, err := f.chats.Thread(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return th
}

// allThreads returns the channel's threads, the main one among them.
func (f *msgFixture) allThreads(tb testing.TB) []chat.Thread {
	tb.Helper()
	ths, _, err := f.chats.Threads(context.Background(), f.channel.ID, chat.Page{Limit: 200})
	if err != nil {
		tb.Fatal(err)
	}
	return ths
}

// messageCount counts the messages of every thread of the channel.
func (f *msgFixture) messageCount(tb testing.TB) int {
	tb.Helper()
	n := 0
	for _, th := range f.allThreads(tb) {
		ms, _, err := f.store.Messages(context.Background(), th.ID, chat.Page{Limit: 200})
		if err != nil {
			tb.Fatal(err)
		}
		n += len(ms)
	}
	return n
}

// message returns a message as stored.
func (f *msgFixture) message(tb testing.TB, id kernel.ID) messaging.Message {
	tb.Helper()
	m, err := f.store.Message(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
