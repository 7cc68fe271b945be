package storage_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

type authzEnv struct {
	db    *storage.DB
	store *storage.AuthzStore
	az    *authz.Service
	clock *kernel.ManualClock

	owner, alice, bob, carol, dave kernel.Actor // carol is disabled
	space, other                   kernel.ID
	channel, channel2, dm, otherCh kernel.ID
}

func mustPrincipal(tb testing.TB, db *storage.DB, handle string, owner bool, status string) kernel.Actor {
	tb.Helper()
	id := kernel.NewID()
	isOwner := 0
	if owner {
		isOwner = 1
	}
	now := "2026-01-01T00:00:00.000000Z"
	storage.ExecInTest(tb, db, `INSERT INTO principals (id, kind, handle, handle_key, display_name, status, is_owner, created_at, updated_at)
		VALUES (?, 'person', ?, ?, ?, ?, ?, ?, ?)`, string(id), handle, handle, handle, status, isOwner, now, now)
	return kernel.Actor{ID: id, Kind: kernel.KindPerson, Handle: handle, IsOwner: owner}
}

func mustSpace(tb testing.TB, db *storage.DB, by kernel.ID) kernel.ID {
	tb.Helper()
	id := kernel.NewID()
	now := "2026-01-01T00:00:00.000000Z"
	storage.ExecInTest(tb, db, `INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES (?, 'space', ?, ?, ?)`,
		string(id), string(by), now, now)
	return id
}

func mustChannel(tb testing.TB, db *storage.DB, space, by kernel.ID, kind string) kernel.ID {
	tb.Helper()
	id := kernel.NewID()
	now := "2026-01-01T00:00:00.000000Z"
	storage.ExecInTest(tb, db, `INSERT INTO channels (id, space_id, kind, name, main_thread_id, created_by, created_at, updated_at)
		VALUES (?, ?, ?, 'chan', ?, ?, ?, ?)`, string(id), string(space), kind, string(kernel.NewID()), string(by), now, now)
	return id
}

func newAuthzEnv(t *testing.T, eng storetest.Engine) *authzEnv {
	t.Helper()
	db := eng.Open(t, storage.Options{})
	e := &authzEnv{db: db, store: storage.NewAuthzStore(db), clock: kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	e.az = authz.New(e.store, e.store, db, db, e.clock)
	e.owner = mustPrincipal(t, db, "olga", true, "active")
	e.alice = mustPrincipal(t, db, "alice", false, "active")
	e.bob = mustPrincipal(t, db, "bob", false, "active")
	e.carol = mustPrincipal(t, db, "carol", false, "disabled")
	e.dave = mustPrincipal(t, db, "dave", false, "active")
	e.space = mustSpace(t, db, e.owner.ID)
	e.other = mustSpace(t, db, e.owner.ID)
	e.channel = mustChannel(t, db, e.space, e.owner.ID, "channel")
	e.channel2 = mustChannel(t, db, e.space, e.owner.ID, "channel")
	e.dm = mustChannel(t, db, e.space, e.owner.ID, "dm")
	e.otherCh = mustChannel(t, db, e.other, e.owner.ID, "channel")
	return e
}

func (e *authzEnv) grant(t *testing.T, by kernel.Actor, ch kernel.ID, to kernel.Actor, l authz.Level) authz.Grant {
	t.Helper()
	g, _, err := e.az.CreateGrant(context.Background(), by, ch, to.ID, l)
	if err != nil {
		t.Fatalf("grant %s to %s: %v", l, to.Handle, err)
	}
	return g
}

func (e *authzEnv) version(t *testing.T) int64 {
	t.Helper()
	v, err := e.store.PermissionVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (e *authzEnv) events(t *testing.T) []kernel.LoggedEvent {
	t.Helper()
	evs, err := e.db.EventsAfter(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func (e *authzEnv) messageOn(ch kernel.ID, author kernel.Actor) kernel.Resource {
	ref, err := e.store.Channel(context.Background(), ch)
	if err != nil {
		panic(err)
	}
	return kernel.Resource{Kind: kernel.ResMessage, ID: kernel.NewID(), SpaceID: ref.SpaceID, ChannelID: ch, ChannelKind: ref.Kind, OwnerID: author.ID}
}

func TestGrants(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()

		t.Run("a grant lets the principal post and is announced with a new permission version", func(t *testing.T) {
			e := newAuthzEnv(t, eng)
			if err := e.az.Authorize(ctx, e.alice, kernel.ActMessageCreate, e.messageOn(e.channel, e.alice)); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("before the grant: %v", err)
			}
			v0 := e.version(t)
			g := e.grant(t, e.owner, e.channel, e.alice, authz.LevelPost)
			if g.ResourceID != e.channel || g.PrincipalID != e.alice.ID || g.Level != authz.LevelPost || g.SpaceID != e.space || g.CreatedBy != e.owner.ID || !g.CreatedAt.Equal(e.clock.Now()) {
				t.Fatalf("grant %+v", g)
			}
			if err := e.az.Authorize(ctx, e.alice, kernel.ActMessageCreate, e.messageOn(e.channel, e.alice)); err != nil {
				t.Fatalf("after the grant: %v", err)
			}
			if e.version(t) != v0+1 {
				t.Fatalf("permission version %d, want %d", e.version(t), v0+1)
			}
			evs := e.events(t)
			if len(evs) != 1 {
				t.Fatalf("%d events", len(evs))
			}
			ev := evs[0]
			if ev.Type != kernel.EvGrantChanged || ev.Scope.SpaceID != e.space || ev.Scope.ChannelID != e.channel || ev.ActorID != e.owner.ID {
				t.Fatalf("event %+v", ev)
			}
			var p map[string]any
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
			if p["channel_id"] != string(e.channel) || p["principal_id"] != string(e.alice.ID) || p["level"] != "post" || len(p) != 3 {
				t.Fatalf("payload %s", ev.Payload)
			}
		})

		t.Run("granting the same level again changes nothing", func(t *testing.T) {
			e := newAuthzEnv(t, eng)
			if _, created, _ := e.az.CreateGrant(ctx, e.owner, e.channel, e.alice.ID, authz.LevelView); !created {
				t.Fatal("a new grant is not reported as created")
			}
			v := e.version(t)
			if _, created, _ := e.az.CreateGrant(ctx, e.owner, e.channel, e.alice.ID, authz.LevelView); created {
				t.Fatal("an existing grant is reported as created")
			}
			if e.version(t) != v || len(e.events(t)) != 1 {
				t.Fatalf("version %d→%d, %d events", v, e.version(t), len(e.events(t)))
			}
		})

		t.Run("changing a level keeps the grant's creation", func(t *testing.T) {
			e := newAuthzEnv(t, eng)
			first := e.grant(t, e.owner, e.channel, e.alice, authz.LevelView)
			e.grant(t, e.owner, e.channel, e.bob, authz.LevelManage)
			e.clock.Advance(time.Hour)
			g := e.grant(t, e.bob, e.channel, e.alice, authz.LevelManage)
			if g.Level != authz.LevelManage || !g.CreatedAt.Equal(first.CreatedAt) || g.CreatedBy != e.owner.ID {
				t.Fatalf("grant %+v, first %+v", g, first)
			}
			gs, err := e.az.ListGrants(ctx, e.alice, e.channel)
			if err != nil {
				t.Fatal(err)
			}
			if len(gs) != 2 {
				t.Fatalf("%d grants", len(gs))
			}
		})

		t.Run("a grant to an unknown or disabled principal is refused on principal_id", func(t *testing.T) {
			e := newAuthzEnv(t, eng)
			for _, p := range []kernel.ID{kernel.NewID(), e.carol.ID, ""} {
				_, _, err := e.az.CreateGrant(ctx, e.owner, e.channel, p, authz.LevelView)
				var ke *kernel.Error
				if !kernel.IsCode(err, kernel.CodeValidation) || !asKernelError(err, &ke) || ke.Field != "principal_id" {
					t.Fatalf("%q: %v", p, err)
				}
			}
			if len(e.events(t)) != 0 || e.version(t) != 0 {
				t.Fatal("a refused grant left a trace")
			}
		})

		t.Run("an invalid level is refused on level", func(t *testing.T) {
			e := newAuthzEnv(t, eng)
			_, _, err := e.az.CreateGrant(ctx, e.owner, e.channel, e.alice.ID, authz.Level(9))
			var ke *kernel.Error
			if !asKernelError(err, &ke) || ke.Code != kernel.CodeValidation || ke.Field != "level" {
				t.Fatalf("got %v", err)
			}
		})

		t.Run("only a manager may grant: a viewer is forbidden, a stranger finds nothing", func(t *testing.T) {
			e := newAuthzEnv(t, eng)
			e.grant(t, e.owner, e.channel, e.alice, authz.LevelPost)
			if _, _, err := e.az.CreateGrant(ctx, e.alice, e.channel, e.bob.ID, authz.LevelView); !kernel.IsCode(err, kernel.CodeForbidden) {
				t.Fatalf("poster: %v", err)
			}
			if _, _, err := e.az.CreateGrant(ctx, e.bob, e.channel, e.bob.ID, authz.LevelManage); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("stranger: %v", err)
			}
			if _, _, err := e.az.CreateGrant(ctx, e.owner, kernel.NewID(), e.bob.ID, authz.LevelView); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("missing channel: %v", err)
			}
			if _, err := e.az.ListGrants(ctx, e.alice, e.channel); !kernel.IsCode(err, kernel.CodeForbidden) {
				t.Fatalf("poster lists: %v", err)
			}
			if _, err := e.az.ListGrants(ctx, e.bob, e.channel); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("stranger lists: %v", err)
			}
		})

		t.Run("a space grant covers the space's channels but not its DMs", func(t *testing.T) {
			e := newAuthzEnv(t, eng)
			if _, _, err := e.az.CreateSpaceGrant(ctx, e.owner, e.space, e.alice.ID, authz.LevelManage); err != nil {
				t.Fatal(err)
			}
			if err := e.az.Authorize(ctx, e.alice, kernel.ActGrantCreate, kernel.Resource{Kind: kernel.ResChannel, ID: e.channel2, SpaceID: e.space}); err != nil {
				t.Fatalf("channel of the space: %v", err)
			}
			if err := e.az.Authorize(ctx, e.alice, kernel.ActMessageRead, e.messageOn(e.dm, e.owner)); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("dm of the space: %v", err)
			}
			if err := e.az.Authorize(ctx, e.alice, kernel.ActChannelRead, e.messageOn(e.otherCh, e.owner)); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("channel of another space: %v", err)
			}
			// The space manager may grant on the space's channels.
			e.grant(t, e.alice, e.channel2, e.bob, authz.LevelView)
			evs := e.events(t)
			var p map[string]any
			_ = json.Unmarshal(evs[0].Payload, &p)
			if evs[0].Scope.SpaceID != e.space || evs[0].Scope.ChannelID != "" || p["space_id"] != string(e.space) || p["level"] != "manage" {
				t.Fatalf("space grant event %+v %s", evs[0], evs[0].Payload)
			}
		})

		t.Run("an owner does not see a DM it is not in until granted", func(t *testing.T) {
			e := newAuthzEnv(t, eng)
			if _, _, err := e.az.CreateGrant(ctx, e.owner, e.dm, e.alice.ID, authz.LevelPost); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("owner grants on a dm: %v", err)
			}
			// Only a manager of the DM channel itself may grant there; give one by the store.
			storage.ExecInTest(t, e.db, `INSERT INTO grants (id, resource_kind, resource_id, principal_id, level, level_rank, created_by, created_at)
				VALUES (?, 'channel', ?, ?, 'manage', 4, ?, '2026-01-01T00:00:00.000000Z')`, string(kernel.NewID()), string(e.dm), string(e.alice.ID), string(e.owner.ID))
			e.grant(t, e.alice, e.dm, e.owner, authz.LevelPost)
			if err := e.az.Authorize(ctx, e.owner, kernel.ActMessageCreate, e.messageOn(e.dm, e.owner)); err != nil {
				t.Fatalf("owner in the dm: %v", err)
			}
			if err := e.az.Authorize(ctx, e.owner, kernel.ActChannelUpdate, e.messageOn(e.dm, e.owner)); !kernel.IsCode(err, kernel.CodeForbidden) {
				t.Fatalf("owner manages the dm: %v", err)
			}
		})

		t.Run("revoking removes the right and announces a null level", func(t *testing.T) {
			e := newAuthzEnv(t, eng)
			e.grant(t, e.owner, e.channel, e.alice, authz.LevelPost)
			v := e.version(t)
			if err := e.az.RevokeGrant(ctx, e.owner, e.channel, e.alice.ID); err != nil {
				t.Fatal(err)
			}
			if err := e.az.Authorize(ctx, e.alice, kernel.ActMessageRead, e.messageOn(e.channel, e.bob)); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("after revoke: %v", err)
			}
			if e.version(t) != v+1 {
				t.Fatal("permission version not bumped")
			}
			evs := e.events(t)
			last := evs[len(evs)-1]
			if last.Type != kernel.EvGrantChanged || string(last.Payload) != `{"channel_id":"`+string(e.channel)+`","principal_id":"`+string(e.alice.ID)+`","level":null}` {
				t.Fatalf("event %s %s", last.Type, last.Payload)
			}
			if err := e.az.RevokeGrant(ctx, e.owner, e.channel, e.alice.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("second revoke: %v", err)
			}
		})

		t.Run("a poster may not revoke and a stranger finds nothing", func(t *testing.T) {
			e := newAuthzEnv(t, eng)
			e.grant(t, e.owner, e.channel, e.alice, authz.LevelPost)
			if err := e.az.RevokeGrant(ctx, e.alice, e.channel, e.alice.ID); !kernel.IsCode(err, kernel.CodeForbidden) {
				t.Fatalf("poster: %v", err)
			}
			if err := e.az.RevokeGrant(ctx, e.bob, e.channel, e.alice.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("stranger: %v", err)
			}
		})
	})
}

func TestAuthzStoreQueries(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		e := newAuthzEnv(t, eng)
		e.grant(t, e.owner, e.channel, e.alice, authz.LevelView)
		if _, _, err := e.az.CreateSpaceGrant(ctx, e.owner, e.space, e.alice.ID, authz.LevelPost); err != nil {
			t.Fatal(err)
		}
		e.grant(t, e.owner, e.otherCh, e.bob, authz.LevelInvoke)

		t.Run("the highest of the channel and space grants counts", func(t *testing.T) {
			l, err := e.store.MaxLevel(ctx, e.alice.ID, e.channel, e.space)
			if err != nil || l != authz.LevelPost {
				t.Fatalf("%v %v", l, err)
			}
			l, err = e.store.MaxLevel(ctx, e.alice.ID, e.channel)
			if err != nil || l != authz.LevelView {
				t.Fatalf("%v %v", l, err)
			}
			l, err = e.store.MaxLevel(ctx, e.dave.ID, e.channel, e.space)
			if err != nil || l != authz.LevelNone {
				t.Fatalf("%v %v", l, err)
			}
		})

		t.Run("a channel grant makes its space visible without a level on it", func(t *testing.T) {
			l, any, err := e.store.SpaceAccess(ctx, e.bob.ID, e.other)
			if err != nil || l != authz.LevelNone || !any {
				t.Fatalf("%v %v %v", l, any, err)
			}
			l, any, err = e.store.SpaceAccess(ctx, e.bob.ID, e.space)
			if err != nil || l != authz.LevelNone || any {
				t.Fatalf("%v %v %v", l, any, err)
			}
			l, any, err = e.store.SpaceAccess(ctx, e.alice.ID, e.space)
			if err != nil || l != authz.LevelPost || !any {
				t.Fatalf("%v %v %v", l, any, err)
			}
		})

		t.Run("visibility expands space grants to their non-DM channels", func(t *testing.T) {
			v, err := e.az.Visible(ctx, e.alice, kernel.ActMessageRead)
			if err != nil {
				t.Fatal(err)
			}
			if v.All() || !v.Space(e.space) || v.Space(e.other) || !v.Channel(e.channel) || !v.Channel(e.channel2) || v.Channel(e.dm) || v.Channel(e.otherCh) {
				t.Fatalf("alice's visibility is wrong: %+v", v)
			}
			v, err = e.az.Visible(ctx, e.bob, kernel.ActMessageRead)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Space(e.other) || v.Space(e.space) || !v.Channel(e.otherCh) || v.Channel(e.channel) {
				t.Fatalf("bob's visibility is wrong: %+v", v)
			}
		})

		t.Run("an owner sees all but the DMs it is not in", func(t *testing.T) {
			v, err := e.az.Visible(ctx, e.owner, kernel.ActMessageRead)
			if err != nil {
				t.Fatal(err)
			}
			if !v.All() || !v.Channel(e.channel) || !v.Channel(e.otherCh) || v.Channel(e.dm) || !v.Space(e.other) {
				t.Fatalf("owner visibility is wrong: %+v", v)
			}
		})

		t.Run("principal status is read from the principals table", func(t *testing.T) {
			for _, c := range []struct {
				id   kernel.ID
				want bool
			}{{e.alice.ID, true}, {e.carol.ID, false}, {kernel.NewID(), false}} {
				got, err := e.store.PrincipalActive(ctx, c.id)
				if err != nil || got != c.want {
					t.Fatalf("%s: %v %v", c.id, got, err)
				}
			}
		})
	})
}

func asKernelError(err error, target **kernel.Error) bool {
	ke, ok := err.(*kernel.Error)
	*target = ke
	return ok
}

// BenchmarkAuthorizeMessageCreate measures the hot-path decision on the read pool.
func BenchmarkAuthorizeMessageCreate(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, eng storetest.Engine) {
		db := eng.Open(b, storage.Options{})
		store := storage.NewAuthzStore(db)
		az := authz.New(store, store, db, db, nil)
		owner := mustPrincipal(b, db, "olga", true, "active")
		alice := mustPrincipal(b, db, "alice", false, "active")
		space := mustSpace(b, db, owner.ID)
		ch := mustChannel(b, db, space, owner.ID, "channel")
		if _, _, err := az.CreateGrant(context.Background(), owner, ch, alice.ID, authz.LevelPost); err != nil {
			b.Fatal(err)
		}
		r := kernel.Resource{Kind: kernel.ResMessage, SpaceID: space, ChannelID: ch, ChannelKind: "channel", OwnerID: alice.ID}
		ctx := context.Background()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := az.Authorize(ctx, alice, kernel.ActMessageCreate, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
