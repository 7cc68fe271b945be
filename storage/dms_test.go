package storage_test

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/dms"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// dmChannel writes a DM channel with its main thread, its dms row and a grant per participant,
// as the dms use case does, and returns its id.
func dmChannel(t *testing.T, db *storage.DB, key string, at time.Time, participants ...kernel.ID) (kernel.ID, error) {
	t.Helper()
	ctx := context.Background()
	id := kernel.NewID()
	err := db.Do(ctx, func(ctx context.Context) error {
		st, cs, as := storage.NewDMStore(db), storage.NewChatStore(db), storage.NewAuthzStore(db)
		if err := st.EnsureSpace(ctx, participants[0], at); err != nil {
			return err
		}
		main := kernel.NewID()
		if err := cs.CreateChannel(ctx, chat.Channel{ID: id, SpaceID: dms.SpaceID, Kind: chat.KindDM, MainThreadID: main,
			CreatedBy: participants[0], CreatedAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		if err := cs.CreateThread(ctx, chat.Thread{ID: main, ChannelID: id, SpaceID: dms.SpaceID, IsMain: true,
			CreatedBy: participants[0], CreatedAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		if err := st.Create(ctx, id, key, at); err != nil {
			return err
		}
		for _, p := range participants {
			if _, err := as.UpsertGrant(ctx, authz.Grant{ResourceKind: kernel.ResChannel, ResourceID: id, PrincipalID: p,
				Level: authz.LevelInvoke, CreatedBy: participants[0], CreatedAt: at}); err != nil {
				return err
			}
		}
		return nil
	})
	return id, err
}

func TestDMStore(t *testing.T) {
	ctx := context.Background()
	a := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
	b := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
	c := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	storetest.Each(t, func(t *testing.T, db *storage.DB) {
		for _, p := range []kernel.Actor{a, b, c} {
			storetest.Principal(t, db, p)
		}
		st := storage.NewDMStore(db)
		ab := dms.Key([]kernel.ID{a.ID, b.ID})
		one, err := dmChannel(t, db, ab, t0, a.ID, b.ID)
		if err != nil {
			t.Fatal(err)
		}

		t.Run("the database refuses a second DM with the same participant key", func(t *testing.T) {
			if _, err := dmChannel(t, db, ab, t0, b.ID, a.ID); !kernel.IsCode(err, kernel.CodeConflict) {
				t.Fatalf("second DM for %s: %v, want conflict", ab, err)
			}
		})

		t.Run("a DM loads by key and by id with its participants in id order", func(t *testing.T) {
			d, err := st.ByKey(ctx, ab)
			if err != nil || d.ID != one || len(d.Participants) != 2 || d.Participants[0] > d.Participants[1] {
				t.Fatalf("by key: %+v, %v", d, err)
			}
			if d, err := st.DM(ctx, one); err != nil || d.ID != one || d.Kind != "dm" {
				t.Fatalf("by id: %+v, %v", d, err)
			}
			if _, err := st.DM(ctx, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("unknown id: %v", err)
			}
		})

		t.Run("DMs whose key was cleared never collide", func(t *testing.T) {
			ac := dms.Key([]kernel.ID{a.ID, c.ID})
			two, err := dmChannel(t, db, ac, t0.Add(time.Minute), a.ID, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			three, err := dmChannel(t, db, "x", t0.Add(2*time.Minute), a.ID, b.ID, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []kernel.ID{two, three} {
				if err := db.Do(ctx, func(ctx context.Context) error { return st.SetKey(ctx, id, "") }); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.ByKey(ctx, ac); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("cleared key still found: %v", err)
			}
		})

		t.Run("a principal's DMs come newest activity first, and the DM space is never a space", func(t *testing.T) {
			if err := db.Do(ctx, func(ctx context.Context) error {
				d, err := st.DM(ctx, one)
				if err != nil {
					return err
				}
				return storage.NewChatStore(db).BumpThread(ctx, d.MainThreadID, 1, kernel.NewID(), t0.Add(time.Hour))
			}); err != nil {
				t.Fatal(err)
			}
			got, err := st.For(ctx, a.ID)
			if err != nil || len(got) != 3 || got[0].ID != one {
				t.Fatalf("a's DMs: %+v, %v", got, err)
			}
			if got, _ := st.For(ctx, b.ID); len(got) != 2 {
				t.Fatalf("b's DMs: %d, want 2", len(got))
			}
			cs := storage.NewChatStore(db)
			if _, err := cs.Space(ctx, dms.SpaceID); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("the DM space loads: %v", err)
			}
			if spaces, err := cs.Spaces(ctx); err != nil || len(spaces) != 0 {
				t.Fatalf("spaces %+v, %v", spaces, err)
			}
		})
	})
}
