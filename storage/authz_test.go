package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
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
	e.az = authz.New(authz.Deps{Store: e.store, Structure: e.store, UoW: db, Events: db, Clock: e.clock})
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
			if err := e.az.Authorize(ctx, e.alice, messaging.ActMessageCreate, e.messageOn(e.channel, e.alice)); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("before the grant: %v", err)
			}
			v0 := e.version(t)
			g := e.grant(t, e.owner, e.channel, e.alice, authz.LevelPost)
			if g.ResourceID != e.channel || g.PrincipalID != e.alice.ID || g.Level != authz.LevelPost || g.SpaceID != e.space || g.CreatedBy != e.owner.ID || !g.CreatedAt.Equal(e.clock.Now()) {
				t.Fatalf("grant %+v", g)
			}
			if err := e.az.Authorize(ctx, e.alice, messaging.ActMessageCreate, e.messageOn(e.channel, e.alice)); err != nil {
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
			if ev.Type != authz.EvGrantChanged.Name || ev.Scope.SpaceID != e.space || ev.Scope.ChannelID != e.channel || ev.ActorID != e.owner.ID {
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
			if err := e.az.Authorize(ctx, e.alice, authz.ActGrantCreate, kernel.Resource{Kind: kernel.ResChannel, ID: e.channel2, SpaceID: e.space}); err != nil {
				t.Fatalf("channel of the space: %v", err)
			}
			if err := e.az.Authorize(ctx, e.alice, messaging.ActMessageRead, e.messageOn(e.dm, e.owner)); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("dm of the space: %v", err)
			}
			if err := e.az.Authorize(ctx, e.alice, chat.ActChannelRead, e.messageOn(e.otherCh, e.owner)); !kernel.IsCode(err, kernel.CodeNotFound) {
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
			if err := e.az.Authorize(ctx, e.owner, messaging.ActMessageCreate, e.messageOn(e.dm, e.owner)); err != nil {
				t.Fatalf("owner in the dm: %v", err)
			}
			if err := e.az.Authorize(ctx, e.owner, chat.ActChannelUpdate, e.messageOn(e.dm, e.owner)); !kernel.IsCode(err, kernel.CodeForbidden) {
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
			if err := e.az.Authorize(ctx, e.alice, messaging.ActMessageRead, e.messageOn(e.channel, e.bob)); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("after revoke: %v", err)
			}
			if e.version(t) != v+1 {
				t.Fatal("permission version not bumped")
			}
			evs := e.events(t)
			last := evs[len(evs)-1]
			if last.Type != authz.EvGrantChanged.Name || string(last.Payload) != `{"channel_id":"`+string(e.channel)+`","principal_id":"`+string(e.alice.ID)+`","level":null}` {
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
			v, err := e.az.Visible(ctx, e.alice, messaging.ActMessageRead)
			if err != nil {
				t.Fatal(err)
			}
			if v.All() || !v.Space(e.space) || v.Space(e.other) || !v.Channel(e.channel) || !v.Channel(e.channel2) || v.Channel(e.dm) || v.Channel(e.otherCh) {
				t.Fatalf("alice's visibility is wrong: %+v", v)
			}
			v, err = e.az.Visible(ctx, e.bob, messaging.ActMessageRead)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Space(e.other) || v.Space(e.space) || !v.Channel(e.otherCh) || v.Channel(e.channel) {
				t.Fatalf("bob's visibility is wrong: %+v", v)
			}
		})

		t.Run("an owner sees all but the DMs it is not in", func(t *testing.T) {
			v, err := e.az.Visible(ctx, e.owner, messaging.ActMessageRead)
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

// cacheEnv is an authzEnv with the real chat and identity services writing, and a second authz
// service whose cache follows the log as the gateway's tail makes it.
type cacheEnv struct {
	*authzEnv
	chats    *chat.Service
	ident    *identity.Service
	cached   *authz.Service
	seq      int64
	disabled []kernel.ID
	reloads  []int64        // the seqs at which Observe loaded the cache again
	active   []kernel.Actor // whom agree checks
	channels []kernel.ID
	spaces   []kernel.ID
}

func newCacheEnv(t *testing.T, eng storetest.Engine) *cacheEnv {
	t.Helper()
	e := &cacheEnv{authzEnv: newAuthzEnv(t, eng)}
	chatStore := storage.NewChatStore(e.db)
	e.chats = chat.New(chat.Deps{Store: chatStore, Principals: chatStore, UoW: e.db, Events: e.db, Authz: e.az, Scoper: e.az, Clock: e.clock})
	e.ident = identity.New(identity.Deps{Store: storage.NewIdentityStore(e.db), UoW: e.db, Events: e.db, Authz: e.az,
		Hasher: &fakeHasher{}, Clock: e.clock}, identity.DefaultConfig())
	e.cached = authz.New(authz.Deps{Store: e.store, Structure: e.store, UoW: e.db, Events: e.db, Clock: e.clock})
	e.cached.OnPrincipalDisabled(func(id kernel.ID) { e.disabled = append(e.disabled, id) })
	e.cached.OnObserveError(func(seq int64, err error) { e.reloads = append(e.reloads, seq) })
	e.active = []kernel.Actor{e.owner, e.alice, e.bob, e.dave}
	e.channels = []kernel.ID{e.channel, e.channel2, e.dm, e.otherCh}
	e.spaces = []kernel.ID{e.space, e.other}
	return e
}

func (e *cacheEnv) warm(t *testing.T) {
	t.Helper()
	seq, err := e.cached.Warm(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if seq != e.db.Head() {
		t.Fatalf("Warm is at %d, the log at %d", seq, e.db.Head())
	}
	e.seq = seq
}

// tail hands the cache every event committed since the last call, as the log tail does.
func (e *cacheEnv) tail(t *testing.T) {
	t.Helper()
	evs, err := e.db.EventsAfter(context.Background(), e.seq, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		e.cached.Observe(ev)
		e.seq = ev.Seq
	}
	if seq, warm := e.cached.Delivery().Seq(); seq != e.seq || !warm {
		t.Fatalf("the cache is at %d (warm %v), the tail at %d", seq, warm, e.seq)
	}
}

var cacheActions = []kernel.Action{messaging.ActMessageRead, messaging.ActMessageCreate, messaging.ActMessageDelete, messaging.ActMessageUpdate,
	chat.ActChannelUpdate, authz.ActGrantCreate, chat.ActSpaceRead, chat.ActSpaceUpdate, chat.ActChannelCreate,
	identity.ActUserDisable, identity.ActSelfRead}

// agree holds that the warm cache decides and sees exactly what the database does, for every
// active principal, action, space and channel.
func (e *cacheEnv) agree(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, a := range e.active {
		var rs []kernel.Resource
		for _, sp := range e.spaces {
			rs = append(rs, kernel.Resource{Kind: kernel.ResSpace, ID: sp, SpaceID: sp})
		}
		for _, ch := range e.channels {
			rs = append(rs, e.messageOn(ch, a), e.messageOn(ch, e.owner))
		}
		for _, r := range rs {
			for _, act := range cacheActions {
				want := kernel.CodeOf(e.az.Authorize(ctx, a, act, r))
				if got := kernel.CodeOf(e.cached.Delivery().Authorize(ctx, a, act, r)); got != want {
					t.Fatalf("%s %s on %s %s%s: the cache says %q, the database %q", a.Handle, act, r.Kind, r.ChannelID, r.SpaceID, got, want)
				}
			}
		}
		want, err := e.az.Visible(ctx, a, catchup.ActEventsCatchUp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.cached.Delivery().Visible(ctx, a, catchup.ActEventsCatchUp)
		if err != nil {
			t.Fatalf("%s: %v", a.Handle, err)
		}
		for _, sp := range e.spaces {
			if got.Space(sp) != want.Space(sp) {
				t.Fatalf("%s: Space(%s) %v, the database %v", a.Handle, sp, got.Space(sp), want.Space(sp))
			}
		}
		for _, ch := range e.channels {
			if got.Channel(ch) != want.Channel(ch) {
				t.Fatalf("%s: Channel(%s) %v, the database %v", a.Handle, ch, got.Channel(ch), want.Channel(ch))
			}
		}
	}
}

// dmWith makes a DM channel and a manage grant on it for a, with the events a DM use case
// will append (chat has none yet): channel.created with the channel, grant.changed.
func (e *cacheEnv) dmWith(t *testing.T, a kernel.Actor) kernel.ID {
	t.Helper()
	ch := chat.Channel{ID: kernel.NewID(), SpaceID: e.space, Name: "dm", Kind: chat.KindDM, MainThreadID: kernel.NewID(),
		CreatedBy: a.ID, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
	err := e.db.Do(context.Background(), func(ctx context.Context) error {
		if _, err := storage.ExecIn(ctx, e.db, `INSERT INTO channels (id, space_id, kind, name, main_thread_id, created_by, created_at, updated_at)
			VALUES (?, ?, 'dm', 'dm', ?, ?, '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')`,
			string(ch.ID), string(ch.SpaceID), string(ch.MainThreadID), string(a.ID)); err != nil {
			return err
		}
		e.db.Append(ctx, kernel.Event{Type: chat.EvChannelCreated.Name, Scope: kernel.Scope{SpaceID: ch.SpaceID, ChannelID: ch.ID},
			SubjectID: ch.ID, ActorID: a.ID, Payload: ch})
		if _, err := e.store.UpsertGrant(ctx, authz.Grant{ResourceKind: kernel.ResChannel, ResourceID: ch.ID, PrincipalID: a.ID,
			Level: authz.LevelManage, CreatedBy: a.ID, CreatedAt: e.clock.Now()}); err != nil {
			return err
		}
		level := "manage"
		e.db.Append(ctx, kernel.Event{Type: authz.EvGrantChanged.Name, Scope: kernel.Scope{SpaceID: ch.SpaceID, ChannelID: ch.ID},
			SubjectID: ch.ID, ActorID: a.ID, Payload: map[string]any{"channel_id": ch.ID, "principal_id": a.ID, "level": &level}})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.channels = append(e.channels, ch.ID)
	return ch.ID
}

func TestPermissionCache(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()

		t.Run("Warm loads every principal, channel and grant as of the committed head", func(t *testing.T) {
			e := newCacheEnv(t, eng)
			e.grant(t, e.owner, e.channel, e.alice, authz.LevelPost)
			if _, _, err := e.az.CreateSpaceGrant(ctx, e.owner, e.other, e.bob.ID, authz.LevelManage); err != nil {
				t.Fatal(err)
			}
			storage.ExecInTest(t, e.db, `INSERT INTO grants (id, resource_kind, resource_id, principal_id, level, level_rank, created_by, created_at)
				VALUES (?, 'channel', ?, ?, 'view', 1, ?, '2026-01-01T00:00:00.000000Z')`, string(kernel.NewID()), string(e.dm), string(e.dave.ID), string(e.owner.ID))
			snap, err := e.store.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Seq != 2 || len(snap.Principals) != 5 || len(snap.Channels) != 4 || len(snap.Grants) != 3 {
				t.Fatalf("snapshot at %d with %d principals, %d channels, %d grants", snap.Seq, len(snap.Principals), len(snap.Channels), len(snap.Grants))
			}
			for _, p := range snap.Principals {
				if p.ID == e.carol.ID && p.Active || p.ID == e.owner.ID && !p.IsOwner || p.ID == e.alice.ID && (p.IsOwner || !p.Active) {
					t.Fatalf("principal %+v", p)
				}
			}
			for _, c := range snap.Channels {
				if c.ID == e.dm && c.Kind != "dm" || c.ID == e.otherCh && (c.Kind != "channel" || c.SpaceID != e.other) {
					t.Fatalf("channel %+v", c)
				}
			}
			for _, g := range snap.Grants {
				if g.PrincipalID == e.bob.ID && (g.ResourceKind != kernel.ResSpace || g.ResourceID != e.other || g.Level != authz.LevelManage) {
					t.Fatalf("grant %+v", g)
				}
			}
			e.warm(t)
			e.agree(t)
			if err := e.cached.Delivery().Authorize(ctx, e.carol, identity.ActSelfRead, kernel.Resource{Kind: kernel.ResInstance}); !kernel.IsCode(err, kernel.CodeUnauthenticated) {
				t.Fatalf("a disabled principal: %v", err)
			}
		})

		t.Run("the cache follows the writes of chat, identity and authz event by event", func(t *testing.T) {
			e := newCacheEnv(t, eng)
			e.warm(t)
			step := func(name string, write func() error) {
				t.Helper()
				if err := write(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				e.tail(t)
				e.agree(t)
			}
			var sp chat.Space
			var ch, late chat.Channel
			step("space created", func() (err error) {
				sp, err = e.chats.CreateSpace(ctx, e.owner, "team")
				e.spaces = append(e.spaces, sp.ID)
				return err
			})
			step("space grant", func() error {
				_, _, err := e.az.CreateSpaceGrant(ctx, e.owner, sp.ID, e.alice.ID, authz.LevelView)
				return err
			})
			step("channel created in a space with a grant", func() (err error) {
				ch, err = e.chats.CreateChannel(ctx, e.owner, sp.ID, chat.NewChannel{Name: "general"})
				e.channels = append(e.channels, ch.ID)
				return err
			})
			if err := e.cached.Delivery().Authorize(ctx, e.alice, messaging.ActMessageRead, kernel.Resource{Kind: kernel.ResMessage, ChannelID: ch.ID}); err != nil {
				t.Fatalf("alice on the new channel: %v", err)
			}
			step("channel grant", func() error {
				_, _, err := e.az.CreateGrant(ctx, e.owner, ch.ID, e.bob.ID, authz.LevelPost)
				return err
			})
			step("level changed", func() error {
				_, _, err := e.az.CreateGrant(ctx, e.owner, ch.ID, e.bob.ID, authz.LevelManage)
				return err
			})
			step("a manager creates a channel", func() error {
				if _, _, err := e.az.CreateSpaceGrant(ctx, e.owner, sp.ID, e.dave.ID, authz.LevelManage); err != nil {
					return err
				}
				var err error
				late, err = e.chats.CreateChannel(ctx, e.dave, sp.ID, chat.NewChannel{Name: "late"})
				e.channels = append(e.channels, late.ID)
				return err
			})
			step("channel renamed", func() error {
				name := "renamed"
				_, err := e.chats.UpdateChannel(ctx, e.dave, late.ID, chat.ChannelPatch{Name: &name})
				return err
			})
			step("grant revoked", func() error { return e.az.RevokeGrant(ctx, e.owner, ch.ID, e.bob.ID) })
			step("space grant revoked", func() error { return e.az.RevokeSpaceGrant(ctx, e.owner, sp.ID, e.alice.ID) })
			step("a DM", func() error { e.dmWith(t, e.alice); return nil })
			var erin kernel.Actor
			step("a new person", func() error {
				u, err := e.ident.CreateUser(ctx, e.owner, "erin", "Erin", "erin-password-long")
				erin = kernel.Actor{ID: u.ID, Kind: kernel.KindPerson, Handle: "erin"}
				e.active = append(e.active, erin)
				return err
			})
			step("granted to the new person", func() error {
				_, _, err := e.az.CreateGrant(ctx, e.dave, late.ID, erin.ID, authz.LevelPost)
				return err
			})
			if err := e.cached.Delivery().Authorize(ctx, erin, messaging.ActMessageCreate, kernel.Resource{Kind: kernel.ResMessage, ChannelID: late.ID, OwnerID: erin.ID}); err != nil {
				t.Fatalf("erin posts: %v", err)
			}
			step("the new person disabled", func() error {
				_, err := e.ident.DisableUser(ctx, e.owner, erin.ID)
				e.active = e.active[:len(e.active)-1]
				return err
			})
			if len(e.disabled) != 1 || e.disabled[0] != erin.ID {
				t.Fatalf("OnPrincipalDisabled saw %v", e.disabled)
			}
			if err := e.cached.Delivery().Authorize(ctx, erin, messaging.ActMessageRead, kernel.Resource{Kind: kernel.ResMessage, ChannelID: late.ID}); !kernel.IsCode(err, kernel.CodeUnauthenticated) {
				t.Fatalf("erin after the disable: %v", err)
			}
			if !e.cached.Delivery().Disabled(erin.ID) {
				t.Fatal("Disabled(erin) is false")
			}
			// A cache warmed now holds what the one that followed the log holds.
			again := authz.New(authz.Deps{Store: e.store, Structure: e.store, UoW: e.db, Events: e.db, Clock: e.clock})
			if seq, err := again.Warm(ctx); err != nil || seq != e.seq {
				t.Fatalf("Warm: %d %v, the tail is at %d", seq, err, e.seq)
			}
			e.cached = again
			e.agree(t)
			if len(e.reloads) != 0 {
				t.Fatalf("Observe could not apply the events at %v", e.reloads)
			}
		})

		t.Run("the writer hands its own commits to the cache before the next batch, and to every other function registered after it", func(t *testing.T) {
			e := newCacheEnv(t, eng)
			e.warm(t)
			read := e.messageOn(e.channel, e.alice)
			if err := e.cached.Delivery().Authorize(ctx, e.dave, messaging.ActMessageRead, read); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("before the grant: %v", err)
			}
			e.db.OnCommit(e.cached.ObserveCommitted)
			var handed []kernel.LoggedEvent // another observer, as the notifier is
			e.db.OnCommit(func(evs []kernel.LoggedEvent) { handed = append(handed, evs...) })
			e.grant(t, e.owner, e.channel, e.dave, authz.LevelView)
			// No tail ran: the cache knows the grant because the writer handed it over.
			if err := e.cached.Delivery().Authorize(ctx, e.dave, messaging.ActMessageRead, read); err != nil {
				t.Fatalf("after the grant: %v", err)
			}
			if len(handed) != 1 || handed[0].Type != authz.EvGrantChanged.Name || len(handed[0].Payload) == 0 {
				t.Fatalf("the second observer was handed %+v, want the grant's event", handed)
			}
		})

		t.Run("REST decisions read the cache only when it is current, outside a Unit of Work, on SQLite", func(t *testing.T) {
			e := newCacheEnv(t, eng)
			e.grant(t, e.owner, e.channel, e.alice, authz.LevelView)
			e.warm(t)
			// A grant written behind the log's back (no event, the head does not move) tells
			// which path answered: the database sees it, the cache does not.
			storage.ExecInTest(t, e.db, `INSERT INTO grants (id, resource_kind, resource_id, principal_id, level, level_rank, created_by, created_at)
				VALUES (?, 'channel', ?, ?, 'view', 1, ?, '2026-01-01T00:00:00.000000Z')`, string(kernel.NewID()), string(e.channel), string(e.dave.ID), string(e.owner.ID))
			read := e.messageOn(e.channel, e.alice)
			fromCache := eng == storetest.SQLite
			err := e.cached.Authorize(ctx, e.dave, messaging.ActMessageRead, read)
			if fromCache != kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("outside a unit of work on %s: %v", eng.Name, err)
			}
			v, err := e.cached.Visible(ctx, e.dave, messaging.ActMessageRead)
			if err != nil || fromCache == v.Channel(e.channel) {
				t.Fatalf("visibility outside a unit of work on %s: %v", eng.Name, err)
			}
			// Inside a Unit of Work the cache decides when it has seen everything committed before
			// the transaction began (on both engines: the batch reads the locked counter) ...
			err = e.db.Do(ctx, func(ctx context.Context) error {
				if err := e.cached.Authorize(ctx, e.dave, messaging.ActMessageRead, read); !kernel.IsCode(err, kernel.CodeNotFound) {
					return fmt.Errorf("a current cache did not decide: %v", err)
				}
				v, err := e.cached.Visible(ctx, e.dave, messaging.ActMessageRead)
				if err == nil && !v.Channel(e.channel) {
					return errors.New("the visibility missed the grant")
				}
				return err
			})
			if err != nil {
				t.Fatalf("inside a unit of work: %v", err)
			}
			// ... and not once the transaction holds a change of rights the cache cannot know.
			errRollBack := errors.New("roll back")
			err = e.db.Do(ctx, func(ctx context.Context) error {
				e.db.Append(ctx, kernel.Event{Type: authz.EvGrantChanged.Name, Payload: map[string]any{}})
				if err := e.cached.Authorize(ctx, e.dave, messaging.ActMessageRead, read); err != nil {
					return fmt.Errorf("with a change of rights pending: %w", err)
				}
				return errRollBack
			})
			if !errors.Is(err, errRollBack) {
				t.Fatalf("inside a unit of work with a change of rights: %v", err)
			}
			// A commit the tail has not handed over yet: the cache is behind, REST reads the
			// database.
			e.grant(t, e.owner, e.channel2, e.bob, authz.LevelView)
			if err := e.cached.Authorize(ctx, e.dave, messaging.ActMessageRead, read); err != nil {
				t.Fatalf("with the cache behind: %v", err)
			}
			if err := e.cached.Authorize(ctx, e.bob, messaging.ActMessageRead, e.messageOn(e.channel2, e.bob)); err != nil {
				t.Fatalf("the new grant with the cache behind: %v", err)
			}
			// Delivery decides as of the last event observed, whatever the database holds.
			if err := e.cached.Delivery().Authorize(ctx, e.dave, messaging.ActMessageRead, read); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("delivery: %v", err)
			}
			if err := e.cached.Delivery().Authorize(ctx, e.bob, messaging.ActMessageRead, e.messageOn(e.channel2, e.bob)); !kernel.IsCode(err, kernel.CodeNotFound) {
				t.Fatalf("delivery before the grant's event: %v", err)
			}
			e.tail(t)
			if err := e.cached.Delivery().Authorize(ctx, e.bob, messaging.ActMessageRead, e.messageOn(e.channel2, e.bob)); err != nil {
				t.Fatalf("delivery after the grant's event: %v", err)
			}
		})

		t.Run("a tail that starts after the warm seq makes Observe load the cache again", func(t *testing.T) {
			e := newCacheEnv(t, eng)
			e.warm(t)
			e.grant(t, e.owner, e.channel, e.alice, authz.LevelView)
			e.grant(t, e.owner, e.channel, e.bob, authz.LevelView)
			e.grant(t, e.owner, e.channel2, e.dave, authz.LevelPost)
			evs, err := e.db.EventsAfter(ctx, e.seq+1, 10)
			if err != nil || len(evs) != 2 {
				t.Fatalf("%d events, %v", len(evs), err)
			}
			e.cached.Observe(evs[0]) // seq 2 on a cache at 0: loaded again, at 3
			e.cached.Observe(evs[1])
			if seq, warm := e.cached.Delivery().Seq(); seq != 3 || !warm || len(e.reloads) != 1 || e.reloads[0] != 2 {
				t.Fatalf("seq %d warm %v, reloads at %v", seq, warm, e.reloads)
			}
			e.seq = 3
			e.agree(t)
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
		az := authz.New(authz.Deps{Store: store, Structure: store, UoW: db, Events: db})
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
				if err := az.Authorize(ctx, alice, messaging.ActMessageCreate, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkWarm measures loading the permission cache (Store.Snapshot and the model built from
// it) on an instance of 1,000 principals, 1,000 channels in 20 spaces and 30 channel grants per
// principal.
func BenchmarkWarm(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, eng storetest.Engine) {
		ctx := context.Background()
		db := eng.Open(b, storage.Options{})
		const principals, channels, spaces, perPrincipal = 1000, 1000, 20, 30
		const now = "2026-01-01T00:00:00.000000Z"
		err := db.Do(ctx, func(ctx context.Context) error {
			exec := func(q string, args ...any) error { _, err := storage.ExecIn(ctx, db, q, args...); return err }
			ps := make([]string, principals)
			for i := range ps {
				ps[i] = string(kernel.NewID())
				h := fmt.Sprintf("p%d", i)
				if err := exec(`INSERT INTO principals (id, kind, handle, handle_key, display_name, created_at, updated_at) VALUES (?, 'person', ?, ?, ?, ?, ?)`,
					ps[i], h, h, h, now, now); err != nil {
					return err
				}
			}
			sps := make([]string, spaces)
			for i := range sps {
				sps[i] = string(kernel.NewID())
				if err := exec(`INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES (?, 's', ?, ?, ?)`, sps[i], ps[0], now, now); err != nil {
					return err
				}
			}
			chs := make([]string, channels)
			for i := range chs {
				chs[i] = string(kernel.NewID())
				if err := exec(`INSERT INTO channels (id, space_id, name, main_thread_id, created_by, created_at, updated_at) VALUES (?, ?, 'c', ?, ?, ?, ?)`,
					chs[i], sps[i%spaces], string(kernel.NewID()), ps[0], now, now); err != nil {
					return err
				}
			}
			for i, p := range ps {
				for j := range perPrincipal {
					if err := exec(`INSERT INTO grants (id, resource_kind, resource_id, principal_id, level, level_rank, created_by, created_at)
						VALUES (?, 'channel', ?, ?, 'view', 1, ?, ?)`, string(kernel.NewID()), chs[(i*7+j*31)%channels], p, ps[0], now); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		store := storage.NewAuthzStore(db)
		az := authz.New(authz.Deps{Store: store, Structure: store, UoW: db, Events: db})
		b.ResetTimer()
		for b.Loop() {
			if _, err := az.Warm(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
