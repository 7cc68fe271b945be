package chat_test

import (
	"context"
	"errors"
	"testing"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/storetest"
)

func TestArchiveChannel(t *testing.T) {
	ctx := context.Background()
	t.Run("archives a channel, appends channel.archived and hides it", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		c := mustChannel(t, f, alice, sp.ID, "old")
		f.scoper.Spaces[sp.ID], f.scoper.Channels[c.ID] = true, true
		got, err := f.svc.ArchiveChannel(ctx, alice, c.ID)
		if err != nil || got.ArchivedAt == nil || got.ID != c.ID || !got.ArchivedAt.Equal(got.UpdatedAt) {
			t.Fatalf("got %+v, %v", got, err)
		}
		last := f.authz.Calls[len(f.authz.Calls)-1]
		if last.Action != chat.ActChannelUpdate || last.Resource.ID != c.ID || last.Resource.SpaceID != sp.ID {
			t.Fatalf("authorized %+v", last)
		}
		evs := f.events(t)
		ev := evs[len(evs)-1]
		if ev.Type != chat.EvChannelArchived.Name || ev.SubjectID != c.ID || ev.Scope != (kernel.Scope{SpaceID: sp.ID, ChannelID: c.ID}) {
			t.Fatalf("event %+v", ev)
		}
		if p := storetest.Payload[chat.Channel](t, ev); p.ID != c.ID || p.ArchivedAt == nil {
			t.Fatalf("payload %+v", ev.Payload)
		}
		if _, err := f.svc.GetChannel(ctx, alice, c.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("an archived channel reads back: %v", err)
		}
		if list, err := f.svc.ListChannels(ctx, alice, sp.ID); err != nil || len(list) != 0 {
			t.Fatalf("listed %+v, %v", list, err)
		}
		if _, err := f.svc.ArchiveChannel(ctx, alice, c.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("archived twice: %v", err)
		}
	})
	t.Run("refuses whom authz refuses and changes nothing", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		c := mustChannel(t, f, alice, sp.ID, "kept")
		before := len(f.events(t))
		f.authz.Fn = func(actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
			return &kernel.Error{Code: kernel.CodeForbidden, Message: "no"}
		}
		if _, err := f.svc.ArchiveChannel(ctx, alice, c.ID); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("err = %v", err)
		}
		if _, err := f.store.Channel(ctx, c.ID); err != nil || len(f.events(t)) != before {
			t.Fatalf("a refused archive changed something: %v, %d events", err, len(f.events(t))-before)
		}
	})
	t.Run("answers not found for an unknown channel", func(t *testing.T) {
		f := mustChat(t)
		_, err := f.svc.ArchiveChannel(ctx, alice, kernel.NewID())
		if !errors.Is(err, kernel.ErrNotFound) && !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
}

// A channel archived on another node reaches this one through its log tail (Observe): the thread
// refs this node cached stop letting messages in.
func TestArchivedElsewhereDropsCachedRefs(t *testing.T) {
	ctx := context.Background()
	f := mustChat(t)
	sp := mustSpace(t, f, alice, "A")
	c := mustChannel(t, f, alice, sp.ID, "old")
	if _, err := f.svc.ThreadRef(ctx, c.MainThreadID); err != nil {
		t.Fatal(err)
	}
	// Another node archives it: this node's store answers not found, its cache does not know.
	if _, err := f.node().ArchiveChannel(ctx, alice, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Thread(ctx, c.MainThreadID); !kernel.IsCode(err, kernel.CodeNotFound) {
		t.Fatalf("the store reads the archived channel's thread: %v", err)
	}
	if _, err := f.svc.ThreadRef(ctx, c.MainThreadID); err != nil {
		t.Fatalf("the cached ref: %v", err)
	}
	f.svc.Observe(kernel.LoggedEvent{Seq: 9, Type: chat.EvChannelCreated.Name})
	if _, err := f.svc.ThreadRef(ctx, c.MainThreadID); err != nil {
		t.Fatalf("another event dropped the cache: %v", err)
	}
	f.svc.Observe(kernel.LoggedEvent{Seq: 10, Type: chat.EvChannelArchived.Name})
	if _, err := f.svc.ThreadRef(ctx, c.MainThreadID); !kernel.IsCode(err, kernel.CodeNotFound) {
		t.Fatalf("after channel.archived: %v, want not_found", err)
	}
}

func TestArchiveSpace(t *testing.T) {
	ctx := context.Background()
	t.Run("archives the space and its channels, appends space.archived and hides them", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		c := mustChannel(t, f, alice, sp.ID, "in-it")
		other := mustSpace(t, f, alice, "B")
		kept := mustChannel(t, f, alice, other.ID, "elsewhere")
		got, err := f.svc.ArchiveSpace(ctx, alice, sp.ID)
		if err != nil || got.ArchivedAt == nil || got.ID != sp.ID {
			t.Fatalf("got %+v, %v", got, err)
		}
		if last := f.authz.Calls[len(f.authz.Calls)-1]; last.Action != chat.ActSpaceUpdate || last.Resource.ID != sp.ID {
			t.Fatalf("authorized %+v", last)
		}
		evs := f.events(t)
		if ev := evs[len(evs)-1]; ev.Type != chat.EvSpaceArchived.Name || ev.SubjectID != sp.ID || ev.Scope != (kernel.Scope{SpaceID: sp.ID}) {
			t.Fatalf("event %+v", ev)
		}
		if _, err := f.svc.GetSpace(ctx, alice, sp.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("the archived space reads back: %v", err)
		}
		if _, err := f.store.Channel(ctx, c.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("its channel reads back: %v", err)
		}
		if _, err := f.store.Channel(ctx, kept.ID); err != nil {
			t.Fatalf("another space's channel went too: %v", err)
		}
		if _, err := f.svc.ArchiveSpace(ctx, alice, sp.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("archived twice: %v", err)
		}
	})
	t.Run("refuses whom authz refuses and changes nothing", func(t *testing.T) {
		f := mustChat(t)
		sp := mustSpace(t, f, alice, "A")
		before := len(f.events(t))
		f.authz.Fn = func(kernel.Actor, kernel.Action, kernel.Resource) error {
			return &kernel.Error{Code: kernel.CodeForbidden, Message: "no"}
		}
		if _, err := f.svc.ArchiveSpace(ctx, alice, sp.ID); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("err = %v", err)
		}
		if _, err := f.store.Space(ctx, sp.ID); err != nil || len(f.events(t)) != before {
			t.Fatalf("a refused archive changed something: %v", err)
		}
	})
}
