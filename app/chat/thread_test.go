package chat_test

import (
	"context"
	"strings"
	"testing"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/storetest"
)

func TestUpdateThread(t *testing.T) {
	ctx := context.Background()
	f := mustChat(t)
	sp := mustSpace(t, f, alice, "A")
	c := mustChannel(t, f, alice, sp.ID, "a")
	var th chat.Thread
	if err := f.db.Do(ctx, func(ctx context.Context) error {
		var err error
		th, err = f.svc.CreateThread(ctx, alice.ID, c, "first")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	title := func(s string) chat.ThreadPatch { return chat.ThreadPatch{Title: &s} }

	t.Run("reads a thread after checking thread.read on it", func(t *testing.T) {
		got, err := f.svc.GetThread(ctx, alice, th.ID)
		if err != nil || got.ID != th.ID || got.Title != "first" {
			t.Fatalf("got %+v, %v", got, err)
		}
		last := f.authz.Calls[len(f.authz.Calls)-1]
		if last.Action != chat.ActThreadRead || last.Resource.Kind != kernel.ResThread || last.Resource.OwnerID != alice.ID {
			t.Fatalf("authorized %+v", last)
		}
	})

	t.Run("a new title is cleaned, stored and told in thread.updated", func(t *testing.T) {
		got, err := f.svc.UpdateThread(ctx, alice, th.ID, title("  Plans  "))
		if err != nil || got.Title != "Plans" {
			t.Fatalf("got %+v, %v", got, err)
		}
		if stored, _ := f.store.Thread(ctx, th.ID); stored.Title != "Plans" {
			t.Fatalf("stored %+v", stored)
		}
		evs := f.events(t)
		last := evs[len(evs)-1]
		if last.Type != chat.EvThreadUpdated.Name || last.Scope != th.Scope() || last.SubjectID != th.ID ||
			storetest.Payload[chat.Thread](t, last).Title != "Plans" {
			t.Fatalf("event %+v", last)
		}
	})

	t.Run("the same title again appends nothing", func(t *testing.T) {
		n := len(f.events(t))
		if _, err := f.svc.UpdateThread(ctx, alice, th.ID, title("Plans")); err != nil {
			t.Fatal(err)
		}
		if len(f.events(t)) != n {
			t.Fatal("an unchanged title appended an event")
		}
	})

	t.Run("refuses a main thread, a title too long and a denial, and changes nothing", func(t *testing.T) {
		n := len(f.events(t))
		if _, err := f.svc.UpdateThread(ctx, alice, c.MainThreadID, title("x")); !kernel.IsCode(err, chat.CodeMainThread) {
			t.Fatalf("main thread: %v", err)
		}
		if _, err := f.svc.UpdateThread(ctx, alice, th.ID, title(strings.Repeat("t", chat.MaxTitleLen+1))); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("long title: %v", err)
		}
		f.authz.Fn = func(a kernel.Actor, act kernel.Action, r kernel.Resource) error {
			if act == chat.ActThreadUpdate {
				return kernel.ErrNotFound
			}
			return nil
		}
		defer func() { f.authz.Fn = nil }()
		if _, err := f.svc.UpdateThread(ctx, alice, th.ID, title("other")); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("denied: %v", err)
		}
		if stored, _ := f.store.Thread(ctx, th.ID); stored.Title != "Plans" || len(f.events(t)) != n {
			t.Fatalf("a refused patch changed something: %+v", stored)
		}
	})
}
