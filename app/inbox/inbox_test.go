package inbox_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/messaging"
)

// memStore is an inbox.Store in memory: threads with their messages in id order, and positions.
type memStore struct {
	mu        sync.Mutex
	threads   map[kernel.ID][]kernel.ID // thread → its messages, oldest first
	positions map[[2]kernel.ID]inbox.ReadState
	reads     int // calls that read
	advances  []inbox.ReadState
	cands     []inbox.Entry
	mentions  []inbox.Mention // newest first
}

var _ inbox.Store = (*memStore)(nil)

func (s *memStore) MessageThread(_ context.Context, id kernel.ID) (kernel.ID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	for th, ms := range s.threads {
		if slices.Contains(ms, id) {
			return th, nil
		}
	}
	return kernel.NilID, kernel.ErrNotFound
}

func (s *memStore) Position(_ context.Context, who, thread kernel.ID) (inbox.Position, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	ms, ok := s.threads[thread]
	if !ok {
		return inbox.Position{}, false, kernel.ErrNotFound
	}
	st, found := s.positions[[2]kernel.ID{who, thread}]
	unread := 0
	for _, m := range ms {
		if !found || m > st.LastReadMessageID {
			unread++
		}
	}
	st.ThreadID = thread
	return inbox.Position{ReadState: st, UnreadCount: int64(unread)}, found, nil
}

func (s *memStore) Advance(_ context.Context, who kernel.ID, st inbox.ReadState, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advances = append(s.advances, st)
	k := [2]kernel.ID{who, st.ThreadID}
	if cur, ok := s.positions[k]; !ok || st.LastReadMessageID > cur.LastReadMessageID {
		if s.positions == nil {
			s.positions = map[[2]kernel.ID]inbox.ReadState{}
		}
		s.positions[k] = st
	}
	return nil
}

func (s *memStore) UnreadCandidates(context.Context, kernel.ID, bool) ([]inbox.Entry, error) {
	return s.cands, nil
}

func (s *memStore) Mentions(_ context.Context, _, before kernel.ID, limit int) ([]inbox.Mention, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	var out []inbox.Mention
	for _, m := range s.mentions {
		if before.IsZero() || m.Message.ID < before {
			out = append(out, m)
		}
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// threads is the chat.Threads of one thread.
type threads struct {
	chat.Threads
	th chat.Thread
}

func (t threads) ThreadRef(_ context.Context, id kernel.ID) (chat.Thread, error) {
	if id != t.th.ID {
		return chat.Thread{}, kernel.ErrNotFound
	}
	return t.th, nil
}

// hidden is a kernel.Scoper that shows every channel but one.
type hidden struct{ channel kernel.ID }

func (h hidden) Visible(context.Context, kernel.Actor, kernel.Action) (kernel.Visibility, error) {
	return h, nil
}
func (h hidden) Space(kernel.ID) bool      { return true }
func (h hidden) Channel(id kernel.ID) bool { return id != h.channel }
func (h hidden) All() bool                 { return false }

var (
	pia = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "pia"}
	bot = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindAgent, Handle: "echo"}
)

type fixture struct {
	svc    *inbox.Service
	store  *memStore
	tx     *kerneltest.Tx
	authz  *kerneltest.Authz
	th     chat.Thread
	msgs   []kernel.ID // of th, oldest first
	other  kernel.ID   // a message of another thread
	hidden kernel.ID   // a channel the scoper hides
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{tx: &kerneltest.Tx{}, authz: &kerneltest.Authz{}, hidden: kernel.NewID()}
	f.th = chat.Thread{ID: kernel.NewID(), ChannelID: kernel.NewID(), SpaceID: kernel.NewID(), IsMain: true, ChannelKind: chat.KindChannel}
	for range 3 {
		f.msgs = append(f.msgs, kernel.NewID())
	}
	f.other = kernel.NewID()
	f.store = &memStore{threads: map[kernel.ID][]kernel.ID{f.th.ID: f.msgs, kernel.NewID(): {f.other}}}
	f.svc = inbox.New(inbox.Deps{Store: f.store, Threads: threads{th: f.th}, UoW: f.tx, Events: f.tx, Authz: f.authz}, hidden{f.hidden})
	return f
}

func TestMarkRead(t *testing.T) {
	ctx := context.Background()
	t.Run("moves the position forward, answers what is unread after it and tells the reader's other connections", func(t *testing.T) {
		f := newFixture(t)
		p, err := f.svc.MarkRead(ctx, pia, f.th.ID, f.msgs[1])
		if err != nil {
			t.Fatal(err)
		}
		if p.ThreadID != f.th.ID || p.LastReadMessageID != f.msgs[1] || p.UnreadCount != 1 {
			t.Fatalf("position %+v", p)
		}
		if c := f.authz.Last(); c.Action != inbox.ActReadMark || c.Resource.ID != f.th.ID || c.Resource.ChannelID != f.th.ChannelID {
			t.Fatalf("authorized %+v", c)
		}
		evs := f.tx.Events()
		want := inbox.ReadState{ThreadID: f.th.ID, ChannelID: f.th.ChannelID, LastReadMessageID: f.msgs[1]}
		if len(evs) != 1 || evs[0].Type != inbox.EvReadStateUpdated.Name || evs[0].Scope != (kernel.Scope{PrincipalID: pia.ID}) ||
			evs[0].Payload != want {
			t.Fatalf("events %+v", evs)
		}
	})
	t.Run("an older or the same message changes nothing and answers the position as it is", func(t *testing.T) {
		f := newFixture(t)
		if _, err := f.svc.MarkRead(ctx, pia, f.th.ID, f.msgs[2]); err != nil {
			t.Fatal(err)
		}
		for _, m := range []kernel.ID{f.msgs[0], f.msgs[2]} {
			p, err := f.svc.MarkRead(ctx, pia, f.th.ID, m)
			if err != nil || p.LastReadMessageID != f.msgs[2] || p.UnreadCount != 0 {
				t.Fatalf("read %s: %+v %v", m, p, err)
			}
		}
		if len(f.tx.Events()) != 1 || len(f.store.advances) != 1 {
			t.Fatalf("%d events, %d advances, want one each", len(f.tx.Events()), len(f.store.advances))
		}
	})
	for _, c := range []struct {
		name    string
		thread  func(f *fixture) kernel.ID
		message func(f *fixture) kernel.ID
		deny    error
		want    kernel.Code
	}{
		{"a message of another thread is refused", func(f *fixture) kernel.ID { return f.th.ID }, func(f *fixture) kernel.ID { return f.other },
			nil, inbox.CodeMessageNotInThread},
		{"an unknown message is refused the same way", func(f *fixture) kernel.ID { return f.th.ID }, func(*fixture) kernel.ID { return kernel.NewID() },
			nil, inbox.CodeMessageNotInThread},
		{"an unknown thread is not found", func(*fixture) kernel.ID { return kernel.NewID() }, func(f *fixture) kernel.ID { return f.msgs[0] },
			nil, kernel.CodeNotFound},
		{"a thread the reader may not see is not found", func(f *fixture) kernel.ID { return f.th.ID }, func(f *fixture) kernel.ID { return f.msgs[0] },
			kernel.ErrNotFound, kernel.CodeNotFound},
	} {
		t.Run(c.name+", and nothing is written", func(t *testing.T) {
			f := newFixture(t)
			f.authz.Fn = func(kernel.Actor, kernel.Action, kernel.Resource) error { return c.deny }
			_, err := f.svc.MarkRead(ctx, pia, c.thread(f), c.message(f))
			if kernel.CodeOf(err) != c.want {
				t.Fatalf("err %v, want %s", err, c.want)
			}
			if len(f.tx.Events()) != 0 || len(f.store.advances) != 0 {
				t.Fatal("a refused read wrote")
			}
		})
	}
}

func TestOwnMessagesAreRead(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	m := messaging.Message{ID: f.msgs[2], ThreadID: f.th.ID, ChannelID: f.th.ChannelID, AuthorID: pia.ID, CreatedAt: time.Now()}
	t.Run("a person's message moves their position to it, without a read or an event", func(t *testing.T) {
		if err := f.svc.OnMessagePosted(ctx, messaging.MessagePosted{Message: m, Author: pia}); err != nil {
			t.Fatal(err)
		}
		want := inbox.ReadState{ThreadID: f.th.ID, ChannelID: f.th.ChannelID, LastReadMessageID: m.ID}
		if len(f.store.advances) != 1 || f.store.advances[0] != want || f.store.reads != 0 || len(f.tx.Events()) != 0 {
			t.Fatalf("advances %+v, reads %d, events %d", f.store.advances, f.store.reads, len(f.tx.Events()))
		}
	})
	t.Run("an agent's message moves nothing", func(t *testing.T) {
		m.AuthorID = bot.ID
		if err := f.svc.OnMessagePosted(ctx, messaging.MessagePosted{Message: m, Author: bot}); err != nil || len(f.store.advances) != 1 {
			t.Fatalf("advances %+v, %v", f.store.advances, err)
		}
	})
}

func TestUnread(t *testing.T) {
	f := newFixture(t)
	thread := kernel.NewID()
	f.store.cands = []inbox.Entry{
		{ChannelID: f.th.ChannelID, UnreadCount: 3, MentionCount: 1, LastMessageID: f.msgs[2]},
		{ChannelID: f.th.ChannelID, ThreadID: &thread, UnreadCount: 2, MentionCount: 2},
		{ChannelID: f.hidden, UnreadCount: 5, MentionCount: 5},
		{ChannelID: kernel.NewID(), UnreadCount: 0},
	}
	u, err := f.svc.Unread(context.Background(), pia)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("lists only what the caller may see with something unread, and sums it", func(t *testing.T) {
		if len(u.Items) != 2 || u.UnreadCount != 5 || u.MentionCount != 3 {
			t.Fatalf("unread %+v", u)
		}
	})
}

func TestMentions(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var all []inbox.Mention
	for i := range 7 {
		ch := f.th.ChannelID
		if i == 2 || i == 3 {
			ch = f.hidden
		}
		all = append(all, inbox.Mention{Message: messaging.Message{ID: kernel.NewID(), ChannelID: ch}})
	}
	slices.Reverse(all)
	f.store.mentions = all
	t.Run("pages newest first, leaves out what the caller may not see and hands the next cursor", func(t *testing.T) {
		var got []kernel.ID
		after, pages := kernel.NilID, 0
		for {
			items, next, err := f.svc.Mentions(ctx, pia, inbox.Page{After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, it := range items {
				if it.Message.ChannelID == f.hidden {
					t.Fatalf("an invisible mention %+v", it)
				}
				got = append(got, it.Message.ID)
			}
			if next.IsZero() {
				break
			}
			if pages > 5 {
				t.Fatal("no end")
			}
			after = next
		}
		if len(got) != 5 || pages != 3 {
			t.Fatalf("%d mentions in %d pages, want 5 in 3", len(got), pages)
		}
		for i := 1; i < len(got); i++ {
			if got[i] >= got[i-1] {
				t.Fatal("not newest first")
			}
		}
	})
	t.Run("refuses a limit out of range", func(t *testing.T) {
		for _, l := range []int{-1, inbox.MaxLimit + 1} {
			if _, _, err := f.svc.Mentions(ctx, pia, inbox.Page{Limit: l}); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Fatalf("limit %d: %v", l, err)
			}
		}
	})
}

func TestPosition(t *testing.T) {
	ctx := context.Background()
	t.Run("a thread never read has no position and is unread in full", func(t *testing.T) {
		f := newFixture(t)
		p, err := f.svc.Position(ctx, pia, f.th.ID)
		if err != nil || !p.LastReadMessageID.IsZero() || p.UnreadCount != 3 {
			t.Fatalf("position %+v %v, want none with 3 unread", p, err)
		}
	})
	t.Run("answers where the reader read to, asking the thread's read rule", func(t *testing.T) {
		f := newFixture(t)
		if _, err := f.svc.MarkRead(ctx, pia, f.th.ID, f.msgs[0]); err != nil {
			t.Fatal(err)
		}
		p, err := f.svc.Position(ctx, pia, f.th.ID)
		if err != nil || p.LastReadMessageID != f.msgs[0] || p.UnreadCount != 2 {
			t.Fatalf("position %+v %v", p, err)
		}
		if c := f.authz.Last(); c.Action != inbox.ActReadMark || c.Resource.ID != f.th.ID {
			t.Fatalf("authorized %+v", c)
		}
	})
	t.Run("a thread the reader may not see is not found", func(t *testing.T) {
		f := newFixture(t)
		f.authz.Fn = func(kernel.Actor, kernel.Action, kernel.Resource) error { return kernel.ErrNotFound }
		if _, err := f.svc.Position(ctx, pia, f.th.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err %v, want not_found", err)
		}
	})
}

// The answer's hand-written JSON is what encoding/json writes from its tags, an empty list and
// a thread's entry included.
func TestUnreadJSON(t *testing.T) {
	th := kernel.NewID()
	for _, u := range []inbox.Unread{
		{Items: []inbox.Entry{}},
		{Items: []inbox.Entry{
			{ChannelID: kernel.NewID(), UnreadCount: 3, MentionCount: 1, LastMessageID: kernel.NewID()},
			{ChannelID: kernel.NewID(), ThreadID: &th, UnreadCount: 12, LastMessageID: kernel.NewID()},
		}, UnreadCount: 15, MentionCount: 1},
	} {
		got, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		type plain inbox.Unread // the same fields and tags, without the method
		want, err := json.Marshal(plain(u))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		if appended := u.AppendJSON([]byte("x")); string(appended) != "x"+string(want) {
			t.Fatalf("AppendJSON %s, want it after what was there", appended)
		}
	}
}
