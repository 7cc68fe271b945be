package dms_test

import (
	"context"
	"slices"
	"testing"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/dms"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

var (
	owner = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "olga", IsOwner: true}
	alice = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "alice"}
	bob   = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "bob"}
	carol = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "carol"}
	agent = kernel.NewID()
)

type fixture struct {
	db  *storage.DB
	svc *dms.Service
	az  *authz.Service
}

// mustDMs is the service on the real SQLite store with the real authz, so that a DM's
// participants are decided by their grants as in the running server.
func mustDMs(t *testing.T) *fixture {
	t.Helper()
	db := storetest.Open(t, storage.Options{})
	for _, a := range []kernel.Actor{owner, alice, bob, carol} {
		storetest.Principal(t, db, a)
	}
	storetest.Agent(t, db, agent, owner.ID, true)
	as := storage.NewAuthzStore(db)
	az := authz.New(authz.Deps{Store: as, Structure: as, UoW: db, Events: db})
	cs := storage.NewChatStore(db)
	svc := dms.New(dms.Deps{Store: storage.NewDMStore(db), Chat: cs, Principals: cs, Grants: az, UoW: db, Events: db, Authz: az})
	return &fixture{db: db, svc: svc, az: az}
}

func (f *fixture) sees(t *testing.T, a kernel.Actor, dm dms.DM) bool {
	t.Helper()
	err := f.az.Authorize(context.Background(), a, chat.ActChannelRead, dm.Resource())
	if err != nil && !kernel.IsCode(err, kernel.CodeNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func TestCreate(t *testing.T) {
	ctx := context.Background()

	t.Run("a DM is made once for a set of participants and only they see it", func(t *testing.T) {
		f := mustDMs(t)
		dm, created, err := f.svc.Create(ctx, alice, []kernel.ID{bob.ID})
		if err != nil || !created {
			t.Fatalf("create: %v, created %v", err, created)
		}
		want := []kernel.ID{alice.ID, bob.ID}
		slices.Sort(want)
		if dm.Kind != "dm" || !slices.Equal(dm.Participants, want) || dm.SpaceID != dms.SpaceID {
			t.Fatalf("dm %+v", dm)
		}
		again, created, err := f.svc.Create(ctx, bob, []kernel.ID{alice.ID, alice.ID})
		if err != nil || created || again.ID != dm.ID {
			t.Fatalf("same set again: %v, created %v, id %s want %s", err, created, again.ID, dm.ID)
		}
		for _, c := range []struct {
			who  kernel.Actor
			sees bool
		}{{alice, true}, {bob, true}, {carol, false}, {owner, false}} {
			if got := f.sees(t, c.who, dm); got != c.sees {
				t.Errorf("%s sees the DM: %v, want %v", c.who.Handle, got, c.sees)
			}
		}
		if err := f.az.Authorize(ctx, bob, kernel.Action("message.create"), dm.Resource()); err != nil {
			t.Errorf("bob may not post in the DM: %v", err)
		}
	})

	t.Run("dm.created comes after the participants' grants, scoped to the DM's channel", func(t *testing.T) {
		f := mustDMs(t)
		dm, _, err := f.svc.Create(ctx, alice, []kernel.ID{bob.ID, agent})
		if err != nil {
			t.Fatal(err)
		}
		log := storetest.Log(t, f.db)
		var types []string
		for _, e := range log {
			types = append(types, e.Type)
		}
		want := []string{"channel.created", "thread.created", "grant.changed", "grant.changed", "grant.changed", "dm.created"}
		if !slices.Equal(types, want) {
			t.Fatalf("log %v, want %v", types, want)
		}
		last := log[len(log)-1]
		if last.Scope.ChannelID != dm.ID {
			t.Errorf("dm.created scoped to %+v", last.Scope)
		}
		if got := storetest.Payload[dms.DM](t, last); got.ID != dm.ID || len(got.Participants) != 3 {
			t.Errorf("dm.created carries %+v", got)
		}
	})

	t.Run("an unknown, disabled or invisible participant is not found and creates nothing", func(t *testing.T) {
		f := mustDMs(t)
		disabled := kernel.NewID()
		storetest.Agent(t, f.db, disabled, owner.ID, false)
		for name, c := range map[string]struct {
			actor  kernel.Actor
			others []kernel.ID
		}{
			"unknown":                 {alice, []kernel.ID{bob.ID, kernel.NewID()}},
			"disabled":                {alice, []kernel.ID{disabled}},
			"an agent to an agent":    {kernel.Actor{ID: agent, Kind: kernel.KindAgent}, []kernel.ID{disabled}},
			"an agent to itself only": {kernel.Actor{ID: agent, Kind: kernel.KindAgent}, []kernel.ID{agent}},
		} {
			_, _, err := f.svc.Create(ctx, c.actor, c.others)
			if name == "an agent to itself only" {
				if !kernel.IsCode(err, kernel.CodeValidation) {
					t.Errorf("%s: %v, want validation_failed", name, err)
				}
				continue
			}
			if !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Errorf("%s: %v, want not_found", name, err)
			}
		}
		if log := storetest.Log(t, f.db); len(log) != 0 {
			t.Errorf("refused DMs appended %d events", len(log))
		}
	})

	t.Run("nine others are too many", func(t *testing.T) {
		f := mustDMs(t)
		var others []kernel.ID
		for range dms.MaxOthers + 1 {
			a := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
			storetest.Principal(t, f.db, a)
			others = append(others, a.ID)
		}
		if _, _, err := f.svc.Create(ctx, alice, others); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("9 others: %v, want validation_failed", err)
		}
		if _, created, err := f.svc.Create(ctx, alice, others[:dms.MaxOthers]); err != nil || !created {
			t.Fatalf("8 others: %v", err)
		}
	})
}

func TestListAndLeave(t *testing.T) {
	ctx := context.Background()

	t.Run("each lists their own DMs only, newest first", func(t *testing.T) {
		f := mustDMs(t)
		one, _, _ := f.svc.Create(ctx, alice, []kernel.ID{bob.ID})
		two, _, _ := f.svc.Create(ctx, alice, []kernel.ID{carol.ID})
		got, err := f.svc.List(ctx, alice)
		if err != nil || len(got) != 2 || got[0].ID != two.ID || got[1].ID != one.ID {
			t.Fatalf("alice lists %+v, %v", got, err)
		}
		if got, _ := f.svc.List(ctx, bob); len(got) != 1 || got[0].ID != one.ID {
			t.Fatalf("bob lists %+v", got)
		}
		if got, _ := f.svc.List(ctx, owner); len(got) != 0 {
			t.Fatalf("the owner lists %+v", got)
		}
	})

	t.Run("a participant leaves a group DM and no longer sees it; a 1:1 DM cannot be left", func(t *testing.T) {
		f := mustDMs(t)
		group, _, _ := f.svc.Create(ctx, alice, []kernel.ID{bob.ID, carol.ID})
		pair, _, _ := f.svc.Create(ctx, alice, []kernel.ID{bob.ID})
		if _, err := f.svc.Leave(ctx, alice, pair.ID); !kernel.IsCode(err, dms.CodeCannotLeave) {
			t.Fatalf("leave a 1:1 DM: %v", err)
		}
		if _, err := f.svc.Leave(ctx, owner, group.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("the owner leaves a DM it is not in: %v", err)
		}
		left, err := f.svc.Leave(ctx, carol, group.ID)
		if err != nil || len(left.Participants) != 2 {
			t.Fatalf("carol leaves: %+v, %v", left, err)
		}
		if f.sees(t, carol, group) || !f.sees(t, bob, group) {
			t.Error("after leaving, carol still sees the DM or bob does not")
		}
		log := storetest.Log(t, f.db)
		last := log[len(log)-1]
		if last.Type != "dm.participant_left" || last.Scope.ChannelID != group.ID {
			t.Fatalf("last event %s %+v", last.Type, last.Scope)
		}
		// The remaining set {alice, bob} has its own DM: asking for it answers that one.
		again, created, err := f.svc.Create(ctx, bob, []kernel.ID{alice.ID})
		if err != nil || created || again.ID != pair.ID {
			t.Fatalf("alice and bob again: %s, created %v, %v", again.ID, created, err)
		}
		// The full set no longer names the group DM that carol left: it makes a new one.
		fresh, created, err := f.svc.Create(ctx, carol, []kernel.ID{alice.ID, bob.ID})
		if err != nil || !created || fresh.ID == group.ID {
			t.Fatalf("the full set again: %s, created %v, %v", fresh.ID, created, err)
		}
	})
}
