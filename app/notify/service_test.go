package notify_test

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/notify"
)

// followStore records Follow's calls.
type followStore struct {
	*fakeStore
	calls [][3]kernel.ID
}

func (s *followStore) Follow(ctx context.Context, th, p, parent kernel.ID, _ time.Time) error {
	s.calls = append(s.calls, [3]kernel.ID{th, p, parent})
	return nil
}

func TestOnMessagePosted(t *testing.T) {
	ctx := context.Background()
	main, reply, parent := kernel.NewID(), kernel.NewID(), kernel.NewID()
	threads := fakeThreads{
		main:  {ID: main, IsMain: true},
		reply: {ID: reply, ParentMessageID: &parent},
	}
	person := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
	agent := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindAgent}
	tests := []struct {
		name      string
		thread    kernel.ID
		author    kernel.Actor
		newThread bool
		want      [][3]kernel.ID
	}{
		{name: "a main-thread message follows nothing", thread: main, author: person},
		{name: "a person's reply makes them follow", thread: reply, author: person, want: [][3]kernel.ID{{reply, person.ID, ""}}},
		{name: "the first reply makes the parent's author follow too", thread: reply, author: person, newThread: true,
			want: [][3]kernel.ID{{reply, person.ID, parent}}},
		{name: "an agent's reply makes no one follow", thread: reply, author: agent},
		{name: "an agent's first reply makes the parent's author follow", thread: reply, author: agent, newThread: true,
			want: [][3]kernel.ID{{reply, "", parent}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &followStore{fakeStore: newFakeStore()}
			tx := &kerneltest.Tx{}
			svc := notify.New(notify.Deps{Store: st, Threads: threads, UoW: tx, Events: tx, Authz: &kerneltest.Authz{}})
			err := svc.OnMessagePosted(ctx, messaging.MessagePosted{Message: messaging.Message{ThreadID: tt.thread, AuthorID: tt.author.ID},
				NewThread: tt.newThread, Author: tt.author})
			if err != nil {
				t.Fatal(err)
			}
			if len(st.calls) != len(tt.want) || (len(tt.want) == 1 && st.calls[0] != tt.want[0]) {
				t.Fatalf("follows %v, want %v", st.calls, tt.want)
			}
		})
	}
}

func TestLevels(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	ch := chat.Channel{ID: kernel.NewID(), Kind: chat.KindChannel}
	dm := chat.Channel{ID: kernel.NewID(), Kind: chat.KindDM}
	mainTh := kernel.NewID()
	threads := channelThreads{fakeThreads: fakeThreads{mainTh: {ID: mainTh, IsMain: true, ChannelID: ch.ID}}, chans: map[kernel.ID]chat.Channel{ch.ID: ch, dm.ID: dm}}
	az := &kerneltest.Authz{}
	tx := &kerneltest.Tx{}
	svc := notify.New(notify.Deps{Store: st, Threads: threads, UoW: tx, Events: tx, Authz: az})
	me := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}

	t.Run("without a choice a channel is mentions and a DM all, as defaults", func(t *testing.T) {
		if l, err := svc.Level(ctx, me, ch.ID); err != nil || l != (notify.ChannelLevel{ChannelID: ch.ID, Level: notify.LevelMentions, Default: true}) {
			t.Fatalf("channel %+v %v", l, err)
		}
		if l, err := svc.Level(ctx, me, dm.ID); err != nil || l.Level != notify.LevelAll || !l.Default {
			t.Fatalf("dm %+v %v", l, err)
		}
		if az.Last().Action != notify.ActLevelRead {
			t.Fatalf("authorized %+v", az.Last())
		}
	})

	t.Run("a choice reads back, tells the person's connections, and an unknown level changes nothing", func(t *testing.T) {
		if _, err := svc.SetLevel(ctx, me, ch.ID, "none"); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SetLevel(ctx, me, ch.ID, "loud"); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("loud: %v", err)
		}
		if l, _ := svc.Level(ctx, me, ch.ID); l.Level != notify.LevelNone || l.Default {
			t.Fatalf("read back %+v", l)
		}
		evs := tx.Events()
		if len(evs) != 1 || evs[0].Type != notify.EvLevelUpdated.Name || evs[0].Scope.PrincipalID != me.ID || evs[0].SubjectID != ch.ID ||
			evs[0].Payload != (notify.ChannelLevel{ChannelID: ch.ID, Level: notify.LevelNone}) {
			t.Fatalf("events %+v, want one personal notification_level.updated of the channel", evs)
		}
	})

	t.Run("a main thread has no subscription", func(t *testing.T) {
		if _, err := svc.Subscription(ctx, me, mainTh); !kernel.IsCode(err, chat.CodeMainThread) {
			t.Fatalf("get: %v", err)
		}
		if _, err := svc.SetSubscription(ctx, me, mainTh, "all"); !kernel.IsCode(err, chat.CodeMainThread) {
			t.Fatalf("set: %v", err)
		}
	})

	t.Run("one who may not read the channel gets not_found", func(t *testing.T) {
		az.Fn = func(kernel.Actor, kernel.Action, kernel.Resource) error { return kernel.ErrNotFound }
		defer func() { az.Fn = nil }()
		if _, err := svc.SetLevel(ctx, me, ch.ID, "all"); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("set: %v", err)
		}
		az.Fn = nil
		if l, _ := svc.Level(ctx, me, ch.ID); l.Level != notify.LevelNone {
			t.Fatalf("a refused set changed the level: %+v", l)
		}
	})
}

// channelThreads answers channels too.
type channelThreads struct {
	fakeThreads
	chans map[kernel.ID]chat.Channel
}

func (c channelThreads) Channel(_ context.Context, id kernel.ID) (chat.Channel, error) {
	if ch, ok := c.chans[id]; ok {
		return ch, nil
	}
	return chat.Channel{}, kernel.ErrNotFound
}
