package storage_test

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// TestMessageComponents holds a message's components in the store: written with the message,
// read back as written (a page of the thread too), replaced alone by UpdateComponents, and
// gone from the tombstone; and the interactions with them, each stored once.
func TestMessageComponents(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newRunEnv(t, eng)
		two := 2
		rows := []messaging.ActionRow{{Components: []messaging.Component{
			{Type: "button", ID: "ok", Label: "Ök — ✓", Style: "primary", Value: "yes"},
			{Type: "select", ID: "c", Placeholder: "Pick", Min: &two, Max: &two, Options: []messaging.SelectOption{{Label: "A", Value: "a"}, {Label: "B", Value: "b"}}},
		}}}
		m := e.post(t, e.pia, "with buttons")
		m2 := m
		m2.ID, m2.Components, m2.Content = kernel.NewID(), rows, "buttons"
		if err := e.db.Do(bg, func(ctx context.Context) error { _, err := e.msgRepo.InsertMessage(ctx, m2); return err }); err != nil {
			t.Fatal(err)
		}

		t.Run("components read back as written, and a message without them has none", func(t *testing.T) {
			got, err := e.msgRepo.Message(bg, m2.ID)
			if err != nil || len(got.Components) != 1 || got.Components[0].Components[0].Label != "Ök — ✓" || *got.Components[0].Components[1].Min != 2 {
				t.Fatalf("%+v, %v", got.Components, err)
			}
			page, _, err := e.msgRepo.Messages(bg, m.ThreadID, chat.Page{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page {
				if p.ID == m.ID && p.Components != nil || p.ID == m2.ID && len(p.Components) != 1 {
					t.Fatalf("message %s in the page: components %+v", p.ID, p.Components)
				}
			}
		})

		t.Run("UpdateComponents replaces them and the version alone", func(t *testing.T) {
			up := m2
			up.Components[0].Components[0].Disabled, up.Version = true, 2
			if err := e.db.Do(bg, func(ctx context.Context) error { return e.msgRepo.UpdateComponents(ctx, up) }); err != nil {
				t.Fatal(err)
			}
			got, err := e.msgRepo.Message(bg, m2.ID)
			if err != nil || got.Version != 2 || !got.Components[0].Components[0].Disabled || got.Content != "buttons" || got.EditedAt != nil {
				t.Fatalf("%+v, %v", got, err)
			}
		})

		t.Run("an interaction is stored once, and only with a message that exists", func(t *testing.T) {
			store := storage.NewInteractionStore(e.db)
			in := runs.Interaction{ID: kernel.NewID(), MessageID: m2.ID, ThreadID: m2.ThreadID, ChannelID: m2.ChannelID,
				ComponentID: "c", Values: []string{"a", "b"}, UserID: e.paul.ID, CreatedAt: time.Now().UTC()}
			insert := func(i runs.Interaction) error {
				return e.db.Do(bg, func(ctx context.Context) error { return store.InsertInteraction(ctx, i) })
			}
			if err := insert(in); err != nil {
				t.Fatal(err)
			}
			if err := insert(in); !kernel.IsCode(err, kernel.CodeConflict) {
				t.Fatalf("the same id again: %v, want conflict", err)
			}
			other := in
			other.ID, other.MessageID = kernel.NewID(), kernel.NewID()
			if err := insert(other); err == nil {
				t.Fatal("an interaction with a message that does not exist was stored")
			}
		})

		t.Run("the tombstone has no components", func(t *testing.T) {
			del := m2
			del.Content, del.Deleted, del.Version = "", true, 3
			if err := e.db.Do(bg, func(ctx context.Context) error { return e.msgRepo.DeleteMessage(ctx, del, time.Now()) }); err != nil {
				t.Fatal(err)
			}
			if got, err := e.msgRepo.Message(bg, m2.ID); err != nil || got.Components != nil || !got.Deleted {
				t.Fatalf("%+v, %v", got, err)
			}
		})
	})
}
