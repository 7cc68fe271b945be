package storage_test

import (
	"context"
	"encoding/json"
	"testing"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/storetest"
)

func TestChatStoreArchive(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newChatEnv(t, eng)
		sp := e.space(t, "A")
		c, d := e.channel(t, sp.ID, "old"), e.channel(t, sp.ID, "kept")
		before := len(logged(t, e.db))

		t.Run("archives a channel with channel.archived; reads no longer find it", func(t *testing.T) {
			got, err := e.svc.ArchiveChannel(ctx, e.alice, c.ID)
			if err != nil || got.ArchivedAt == nil {
				t.Fatalf("got %+v, %v", got, err)
			}
			if _, err := e.store.Channel(ctx, c.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("an archived channel loads: %v", err)
			}
			list, err := e.store.Channels(ctx, sp.ID)
			if err != nil || len(list) != 1 || list[0].ID != d.ID {
				t.Fatalf("listed %+v, %v", list, err)
			}
			evs := logged(t, e.db)[before:]
			if len(evs) != 1 || evs[0].Type != chat.EvChannelArchived.Name || evs[0].Scope.ChannelID != c.ID {
				t.Fatalf("events %+v", evs)
			}
			var data map[string]any
			if err := json.Unmarshal(evs[0].Payload, &data); err != nil || data["archived_at"] == nil || data["id"] != string(c.ID) {
				t.Fatalf("channel.archived data %s", evs[0].Payload)
			}
		})
		t.Run("a second archive is not found and logs nothing", func(t *testing.T) {
			n := len(logged(t, e.db))
			if _, err := e.svc.ArchiveChannel(ctx, e.alice, c.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("err = %v", err)
			}
			again := c
			at := e.clock.Now()
			again.ArchivedAt = &at
			err := e.db.Do(ctx, func(ctx context.Context) error { return e.store.ArchiveChannel(ctx, again) })
			if !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("store: err = %v", err)
			}
			if len(logged(t, e.db)) != n {
				t.Fatal("a refused archive logged an event")
			}
		})
	})
}

func TestChatStoreArchiveSpace(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newChatEnv(t, eng)
		sp, other := e.space(t, "A"), e.space(t, "B")
		c := e.channel(t, sp.ID, "in-it")
		kept := e.channel(t, other.ID, "elsewhere")
		th, err := e.store.Thread(ctx, c.MainThreadID)
		if err != nil {
			t.Fatal(err)
		}
		before := len(logged(t, e.db))
		got, err := e.svc.ArchiveSpace(ctx, e.alice, sp.ID)
		if err != nil || got.ArchivedAt == nil {
			t.Fatalf("got %+v, %v", got, err)
		}
		if _, err := e.store.Space(ctx, sp.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("an archived space loads: %v", err)
		}
		if _, err := e.store.Channel(ctx, c.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("a channel of an archived space loads: %v", err)
		}
		if _, err := e.store.Thread(ctx, th.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("a thread of an archived space loads: %v", err)
		}
		if _, err := e.store.Channel(ctx, kept.ID); err != nil {
			t.Fatalf("another space's channel: %v", err)
		}
		spaces, err := e.store.Spaces(ctx)
		if err != nil || len(spaces) != 1 || spaces[0].ID != other.ID {
			t.Fatalf("spaces %+v, %v", spaces, err)
		}
		evs := logged(t, e.db)[before:]
		if len(evs) != 1 || evs[0].Type != chat.EvSpaceArchived.Name || evs[0].Scope.SpaceID != sp.ID {
			t.Fatalf("events %+v", evs)
		}
		if _, err := e.svc.ArchiveSpace(ctx, e.alice, sp.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("a second archive: %v", err)
		}
	})
}
