package chat_test

import (
	"bothy.dev/bothy/app/kernel/kerneltest"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// The kernel fakes are shared with the other modules' tests.
type (
	fakeTx    = kerneltest.Tx
	fakeAuthz = kerneltest.Authz
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

// fakeStore keeps chat's rows in maps.
type fakeStore struct {
	mu       sync.Mutex
	spaces   map[kernel.ID]chat.Space
	channels map[kernel.ID]chat.Channel
	threads  map[kernel.ID]chat.Thread
}

var _ chat.Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore {
	return &fakeStore{spaces: map[kernel.ID]chat.Space{}, channels: map[kernel.ID]chat.Channel{}, threads: map[kernel.ID]chat.Thread{}}
}

func (f *fakeStore) CreateSpace(ctx context.Context, s chat.Space) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spaces[s.ID] = s
	return nil
}

func (f *fakeStore) Space(ctx context.Context, id kernel.ID) (chat.Space, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.spaces[id]
	if !ok {
		return s, kernel.ErrNotFound
	}
	return s, nil
}

func (f *fakeStore) Spaces(ctx context.Context) ([]chat.Space, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []chat.Space
	for _, s := range f.spaces {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b chat.Space) int { return cmpID(a.ID, b.ID) })
	return out, nil
}

func (f *fakeStore) UpdateSpace(ctx context.Context, s chat.Space) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.spaces[s.ID]; !ok {
		return kernel.ErrNotFound
	}
	f.spaces[s.ID] = s
	return nil
}

func (f *fakeStore) CreateChannel(ctx context.Context, c chat.Channel) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.channels[c.ID] = c
	return nil
}

func (f *fakeStore) Channel(ctx context.Context, id kernel.ID) (chat.Channel, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.channels[id]
	if !ok {
		return c, kernel.ErrNotFound
	}
	return c, nil
}

func (f *fakeStore) Channels(ctx context.Context, spaceID kernel.ID) ([]chat.Channel, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []chat.Channel
	for _, c := range f.channels {
		if c.SpaceID == spaceID {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b chat.Channel) int { return cmpID(a.ID, b.ID) })
	return out, nil
}

func (f *fakeStore) UpdateChannel(ctx context.Context, c chat.Channel) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.channels[c.ID]; !ok {
		return kernel.ErrNotFound
	}
	f.channels[c.ID] = c
	return nil
}

func (f *fakeStore) SetOperator(ctx context.Context, c chat.Channel) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.channels[c.ID]
	if !ok {
		return kernel.ErrNotFound
	}
	old.OperatorID, old.UpdatedAt = c.OperatorID, c.UpdatedAt
	f.channels[c.ID] = old
	return nil
}

func (f *fakeStore) ArchiveChannel(ctx context.Context, c chat.Channel) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.channels[c.ID]; !ok {
		return kernel.ErrNotFound
	}
	delete(f.channels, c.ID) // the store never loads an archived channel
	return nil
}

func (f *fakeStore) ArchiveSpace(ctx context.Context, sp chat.Space) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.spaces[sp.ID]; !ok {
		return kernel.ErrNotFound
	}
	delete(f.spaces, sp.ID) // the store never loads an archived space, nor its channels
	for id, c := range f.channels {
		if c.SpaceID == sp.ID {
			delete(f.channels, id)
		}
	}
	return nil
}

// fakePrincipals knows the principals put into it.
type fakePrincipals map[kernel.ID]chat.PrincipalRef

var _ chat.Principals = fakePrincipals(nil)

func (f fakePrincipals) PrincipalRef(ctx context.Context, id kernel.ID) (chat.PrincipalRef, error) {
	p, ok := f[id]
	if !ok {
		return p, kernel.ErrNotFound
	}
	return p, nil
}

func (f *fakeStore) CreateThread(ctx context.Context, t chat.Thread) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.threads[t.ID] = t
	return nil
}

func (f *fakeStore) CreateThreadUnder(ctx context.Context, t chat.Thread) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.threads {
		if o.ParentMessageID != nil && *o.ParentMessageID == *t.ParentMessageID {
			return false, nil
		}
	}
	f.threads[t.ID] = t
	return true, nil
}

func (f *fakeStore) ThreadByParent(ctx context.Context, messageID kernel.ID) (chat.Thread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.threads {
		if t.ParentMessageID != nil && *t.ParentMessageID == messageID {
			t.ChannelKind = f.channels[t.ChannelID].Kind
			return t, nil
		}
	}
	return chat.Thread{}, kernel.ErrNotFound
}

func (f *fakeStore) Thread(ctx context.Context, id kernel.ID) (chat.Thread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.threads[id]
	if !ok {
		return t, kernel.ErrNotFound
	}
	t.ChannelKind = f.channels[t.ChannelID].Kind
	return t, nil
}

func (f *fakeStore) Threads(ctx context.Context, channelID kernel.ID, p chat.Page) ([]chat.Thread, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []chat.Thread
	for _, t := range f.threads {
		if t.ChannelID == channelID {
			all = append(all, t)
		}
	}
	slices.SortFunc(all, func(a, b chat.Thread) int { return cmpID(a.ID, b.ID) })
	switch {
	case !p.After.IsZero():
		i := slices.IndexFunc(all, func(t chat.Thread) bool { return t.ID > p.After })
		if i < 0 {
			return nil, false, nil
		}
		all = all[i:]
		if len(all) > p.Limit {
			return all[:p.Limit], true, nil
		}
		return all, false, nil
	default:
		if !p.Before.IsZero() {
			i := slices.IndexFunc(all, func(t chat.Thread) bool { return t.ID >= p.Before })
			if i >= 0 {
				all = all[:i]
			}
		}
		if len(all) > p.Limit {
			return all[len(all)-p.Limit:], true, nil
		}
		return all, false, nil
	}
}

func (f *fakeStore) BumpThread(ctx context.Context, id kernel.ID, delta int, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.threads[id]
	if !ok {
		return kernel.ErrNotFound
	}
	t.MessageCount = max(0, t.MessageCount+int64(delta))
	if delta > 0 {
		t.LastMessageAt = &at
	}
	f.threads[id] = t
	return nil
}

func cmpID(a, b kernel.ID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// chatFixture is a service over fakes.
type chatFixture struct {
	svc        *chat.Service
	store      *fakeStore
	principals fakePrincipals
	tx         *fakeTx
	authz      *fakeAuthz
	scoper     *fakeScoper
	clock      *kernel.ManualClock
}

func mustChat(tb testing.TB) *chatFixture {
	tb.Helper()
	f := &chatFixture{store: newFakeStore(), principals: fakePrincipals{}, tx: &fakeTx{}, authz: &fakeAuthz{},
		scoper: &fakeScoper{Spaces: map[kernel.ID]bool{}, Channels: map[kernel.ID]bool{}},
		clock:  kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC))}
	f.svc = chat.New(chat.Deps{Store: f.store, Principals: f.principals, UoW: f.tx, Events: f.tx, Authz: f.authz,
		Scoper: f.scoper, Clock: f.clock})
	return f
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
