package chat_test

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// fakeScoper answers a visibility built from sets.
type fakeScoper struct {
	Spaces, Channels map[kernel.ID]bool
}

var _ kernel.Scoper = (*fakeScoper)(nil)

func (s *fakeScoper) Visible(ctx context.Context, actor kernel.Actor, action kernel.Action) (kernel.Visibility, error) {
	if !actor.Authenticated() {
		return nil, kernel.Errorf(kernel.CodeUnauthenticated, "no principal")
	}
	kernel.RecordCheck(ctx, action)
	return setVisibility{s.Spaces, s.Channels}, nil
}

type setVisibility struct{ spaces, channels map[kernel.ID]bool }

func (v setVisibility) Space(id kernel.ID) bool   { return v.spaces[id] }
func (v setVisibility) Channel(id kernel.ID) bool { return v.channels[id] }
func (v setVisibility) All() bool                 { return false }

// store is the real chat repository; thread and bumpThread, when set, answer instead.
type store struct {
	*storage.ChatStore
	thread     func(ctx context.Context, id kernel.ID) (chat.Thread, error)
	bumpThread func(ctx context.Context, id kernel.ID, delta int, at time.Time) error
}

func (s *store) BumpThread(ctx context.Context, id kernel.ID, delta int, messageID kernel.ID, at time.Time) error {
	if s.bumpThread != nil {
		return s.bumpThread(ctx, id, delta, at)
	}
	return s.ChatStore.BumpThread(ctx, id, delta, messageID, at)
}

func (s *store) Thread(ctx context.Context, id kernel.ID) (chat.Thread, error) {
	if s.thread != nil {
		return s.thread(ctx, id)
	}
	return s.ChatStore.Thread(ctx, id)
}

// chatFixture is the service on a real store (SQLite in a temp dir), with alice as a principal.
type chatFixture struct {
	svc    *chat.Service
	db     *storage.DB
	store  *store
	authz  *kerneltest.Authz
	scoper *fakeScoper
	clock  *kernel.ManualClock
}

func mustChat(tb testing.TB) *chatFixture {
	tb.Helper()
	clock := kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC))
	db := storetest.Open(tb, storage.Options{Clock: clock})
	storetest.Principal(tb, db, alice)
	f := &chatFixture{db: db, store: &store{ChatStore: storage.NewChatStore(db)}, authz: &kerneltest.Authz{},
		scoper: &fakeScoper{Spaces: map[kernel.ID]bool{}, Channels: map[kernel.ID]bool{}}, clock: clock}
	f.svc = f.node()
	return f
}

// node returns another service on the fixture's store: a second node of a cluster.
func (f *chatFixture) node() *chat.Service {
	return chat.New(chat.Deps{Store: f.store, Principals: f.store, UoW: f.db, Events: f.db, Authz: f.authz,
		Scoper: f.scoper, Clock: f.clock})
}

// events returns the log.
func (f *chatFixture) events(tb testing.TB) []kernel.LoggedEvent { return storetest.Log(tb, f.db) }

// channel returns the channel as stored (not found once archived).
func (f *chatFixture) channel(tb testing.TB, id kernel.ID) chat.Channel {
	tb.Helper()
	c, err := f.store.Channel(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func mustSpace(tb testing.TB, f *chatFixture, actor kernel.Actor, name string) chat.Space {
	tb.Helper()
	sp, err := f.svc.CreateSpace(context.Background(), actor, name)
	if err != nil {
		tb.Fatal(err)
	}
	return sp
}

func mustChannel(tb testing.TB, f *chatFixture, actor kernel.Actor, spaceID kernel.ID, name string) chat.Channel {
	tb.Helper()
	c, err := f.svc.CreateChannel(context.Background(), actor, spaceID, chat.NewChannel{Name: name})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// spaces returns the spaces as stored (without the archived).
func (f *chatFixture) spaces(tb testing.TB) []chat.Space {
	tb.Helper()
	sps, err := f.store.Spaces(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return sps
}

// space returns a space as stored.
func (f *chatFixture) space(tb testing.TB, id kernel.ID) chat.Space {
	tb.Helper()
	sp, err := f.store.Space(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return sp
}
