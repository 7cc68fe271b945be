package authz_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

var bg = context.Background()

// The gateway's log tail hands every event to an Observer with this method (app/gateway).
var _ interface{ Observe(kernel.LoggedEvent) } = (*authz.Service)(nil)

// warmed returns a service on m whose cache is warm, and m with its query count reset.
func warmed(t testing.TB, m *memStore) *authz.Service {
	t.Helper()
	svc := newService(m)
	seq, err := svc.Warm(bg)
	if err != nil {
		t.Fatal(err)
	}
	if seq != m.head {
		t.Fatalf("Warm returned seq %d, the store is at %d", seq, m.head)
	}
	m.queries = 0
	return svc
}

func TestCacheDecidesAsTheDatabase(t *testing.T) {
	db := newService(fixture()) // never warmed: every decision reads the store
	m := fixture()
	cached := warmed(t, m)
	m.current = true // REST decisions may read the cache too
	for _, d := range decisions() {
		t.Run(d.name, func(t *testing.T) {
			want := kernel.CodeOf(db.Authorize(bg, d.actor, d.action, d.res))
			ctx, log := kernel.WithCheckLog(bg)
			if got := kernel.CodeOf(cached.Delivery().Authorize(ctx, d.actor, d.action, d.res)); got != want {
				t.Errorf("delivery: %q, the database: %q", got, want)
			}
			if !log.Checked(d.action) {
				t.Error("the delivery decision was not recorded in the check log")
			}
			if got := kernel.CodeOf(cached.Authorize(bg, d.actor, d.action, d.res)); got != want {
				t.Errorf("REST from the cache: %q, the database: %q", got, want)
			}
		})
	}
	t.Run("no decision read the store", func(t *testing.T) {
		if m.queries != 0 {
			t.Fatalf("%d queries", m.queries)
		}
	})
}

// everyID is every space and channel of the fixture and one that does not exist.
var everyID = []kernel.ID{S, S2, C, C2, D, E, kernel.NewID()}

func sameVisibility(t *testing.T, what string, got, want kernel.Visibility) {
	t.Helper()
	if got.All() != want.All() {
		t.Errorf("%s: All() = %v, the database says %v", what, got.All(), want.All())
	}
	for _, id := range everyID {
		if got.Space(id) != want.Space(id) {
			t.Errorf("%s: Space(%s) = %v, the database says %v", what, id, got.Space(id), want.Space(id))
		}
		if got.Channel(id) != want.Channel(id) {
			t.Errorf("%s: Channel(%s) = %v, the database says %v", what, id, got.Channel(id), want.Channel(id))
		}
	}
}

func TestCacheVisibleAsTheDatabase(t *testing.T) {
	db := newService(fixture())
	m := fixture()
	cached := warmed(t, m)
	m.current = true
	for _, a := range []kernel.Actor{owner, viewer, poster, manager, spaceMgr, spaceViewer, dmMember, agent, stranger} {
		t.Run(a.ID.String(), func(t *testing.T) {
			want, err := db.Visible(bg, a, catchup.ActEventsCatchUp)
			if err != nil {
				t.Fatal(err)
			}
			ctx, log := kernel.WithCheckLog(bg)
			got, err := cached.Delivery().Visible(ctx, a, catchup.ActEventsCatchUp)
			if err != nil {
				t.Fatal(err)
			}
			if !log.Checked(catchup.ActEventsCatchUp) {
				t.Error("not recorded")
			}
			sameVisibility(t, "delivery", got, want)
			rest, err := cached.Visible(bg, a, catchup.ActEventsCatchUp)
			if err != nil {
				t.Fatal(err)
			}
			sameVisibility(t, "REST from the cache", rest, want)
		})
	}
	if m.queries != 0 {
		t.Fatalf("%d queries", m.queries)
	}
	t.Run("the anonymous actor must authenticate", func(t *testing.T) {
		if _, err := cached.Delivery().Visible(bg, anonymous, catchup.ActEventsCatchUp); kernel.CodeOf(err) != unauthorized {
			t.Fatalf("got %v", err)
		}
	})
}

func TestDeliveryTakesWhoAndWhereFromTheCache(t *testing.T) {
	svc := warmed(t, fixture())
	d := svc.Delivery()
	t.Run("an owner flag the cache does not hold opens nothing", func(t *testing.T) {
		fake := stranger
		fake.IsOwner = true
		if err := d.Authorize(bg, fake, chat.ActChannelRead, onChannel(C)); kernel.CodeOf(err) != notFound {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("an owner is an owner even when the caller forgot to say so", func(t *testing.T) {
		plain := owner
		plain.IsOwner = false
		if err := d.Authorize(bg, plain, chat.ActChannelUpdate, onChannel(E)); err != nil {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a DM passed as a plain channel is still a DM", func(t *testing.T) {
		r := onChannel(D)
		r.ChannelKind = "channel"
		if err := d.Authorize(bg, owner, messaging.ActMessageRead, r); kernel.CodeOf(err) != notFound {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("the channel id alone is enough", func(t *testing.T) {
		r := kernel.Resource{Kind: kernel.ResMessage, ChannelID: C2}
		if err := d.Authorize(bg, spaceViewer, messaging.ActMessageRead, r); err != nil {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a principal the cache does not know is unauthenticated", func(t *testing.T) {
		who := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
		if err := d.Authorize(bg, who, identity.ActSelfRead, instance); kernel.CodeOf(err) != unauthorized {
			t.Fatalf("got %v", err)
		}
		if _, err := d.Visible(bg, who, catchup.ActEventsCatchUp); kernel.CodeOf(err) != unauthorized {
			t.Fatalf("got %v", err)
		}
	})
}

// follower plays the log to a warm cache and to the memStore that stands for the database, one
// change at a time, and checks after each that the two decide alike.
type follower struct {
	t        *testing.T
	m        *memStore
	db       *authz.Service // reads m
	svc      *authz.Service // the cache under test
	seq      int64
	spaces   []kernel.ID
	users    map[kernel.ID]identity.User
	disabled []kernel.ID
}

func newFollower(t *testing.T) *follower {
	first := identity.User{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "olga", Status: identity.StatusActive, IsOwner: true}
	m := &memStore{grants: map[[2]kernel.ID]authz.Level{}, channelSpace: map[kernel.ID]kernel.ID{}, dm: map[kernel.ID]bool{},
		principals: map[kernel.ID]authz.PrincipalRef{first.ID: {ID: first.ID, Active: true, IsOwner: true}}, head: 7}
	f := &follower{t: t, m: m, db: newService(m), svc: newService(m), seq: m.head,
		users: map[kernel.ID]identity.User{first.ID: first}}
	f.svc.OnPrincipalDisabled(func(id kernel.ID) { f.disabled = append(f.disabled, id) })
	f.svc.OnObserveError(func(seq int64, err error) { t.Errorf("Observe %d: %v", seq, err) })
	if _, err := f.svc.Warm(bg); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *follower) owner() kernel.Actor {
	for _, u := range f.users {
		if u.IsOwner {
			return actorOf(u)
		}
	}
	panic("no owner")
}

func actorOf(u identity.User) kernel.Actor {
	return kernel.Actor{ID: u.ID, Kind: u.Kind, Handle: u.Handle, IsOwner: u.IsOwner}
}

// emit hands the cache the next event, with payload encoded as the module that appends it does.
func (f *follower) emit(typ string, scope kernel.Scope, subject kernel.ID, payload any) {
	f.t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		f.t.Fatal(err)
	}
	f.seq++
	f.m.head = f.seq
	f.svc.Observe(kernel.LoggedEvent{Seq: f.seq, Type: typ, Scope: scope, SubjectID: subject, Payload: b, CreatedAt: time.Now()})
	if seq, warm := f.svc.Delivery().Seq(); seq != f.seq || !warm {
		f.t.Fatalf("the cache is at %d (warm %v), want %d", seq, warm, f.seq)
	}
	f.agree()
}

func (f *follower) user(handle string, isOwner bool) kernel.Actor {
	u := identity.User{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: handle, DisplayName: handle,
		Status: identity.StatusActive, IsOwner: isOwner, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	f.users[u.ID] = u
	f.m.principals[u.ID] = authz.PrincipalRef{ID: u.ID, Active: true, IsOwner: isOwner}
	f.emit(identity.EvUserCreated.Name, kernel.Scope{}, u.ID, u)
	return actorOf(u)
}

func (f *follower) disable(a kernel.Actor) {
	u := f.users[a.ID]
	now := time.Now()
	u.Status, u.DisabledAt = identity.StatusDisabled, &now
	f.users[a.ID] = u
	f.m.principals[a.ID] = authz.PrincipalRef{ID: a.ID, Active: false, IsOwner: u.IsOwner}
	f.emit(identity.EvUserUpdated.Name, kernel.Scope{}, a.ID, u)
}

func (f *follower) space() kernel.ID {
	sp := chat.Space{ID: kernel.NewID(), Name: "space"}
	f.spaces = append(f.spaces, sp.ID)
	f.emit(chat.EvSpaceCreated.Name, kernel.Scope{SpaceID: sp.ID}, sp.ID, sp)
	return sp.ID
}

func (f *follower) channel(space kernel.ID, kind string) kernel.ID {
	ch := chat.Channel{ID: kernel.NewID(), SpaceID: space, Name: "c", Kind: kind, MainThreadID: kernel.NewID()}
	f.m.channelSpace[ch.ID] = space
	f.m.dm[ch.ID] = kind == chat.KindDM
	f.emit(chat.EvChannelCreated.Name, kernel.Scope{SpaceID: space, ChannelID: ch.ID}, ch.ID, ch)
	return ch.ID
}

// grant sets (or with LevelNone revokes) a's grant on a channel or a space, announced as
// authz.Service.changed announces it.
func (f *follower) grant(a kernel.Actor, resource kernel.ID, l authz.Level) {
	var level *string
	if l != authz.LevelNone {
		name := l.String()
		level = &name
		f.m.grants[[2]kernel.ID{a.ID, resource}] = l
	} else {
		delete(f.m.grants, [2]kernel.ID{a.ID, resource})
	}
	p := map[string]any{"principal_id": a.ID, "level": level}
	scope := kernel.Scope{}
	if sp, isChannel := f.m.channelSpace[resource]; isChannel {
		p["channel_id"], scope.ChannelID, scope.SpaceID = resource, resource, sp
	} else {
		p["space_id"], scope.SpaceID = resource, resource
	}
	f.emit(authz.EvGrantChanged.Name, scope, resource, p)
}

var matrixActions = []kernel.Action{messaging.ActMessageRead, messaging.ActMessageCreate, messaging.ActMessageDelete,
	chat.ActChannelUpdate, authz.ActGrantCreate, chat.ActSpaceRead, chat.ActSpaceUpdate, chat.ActChannelCreate}

// agree holds that the cache and the store decide every action of every active principal on
// every space and channel alike, and see the same; disabled principals are unauthenticated.
func (f *follower) agree() {
	f.t.Helper()
	d := f.svc.Delivery()
	for _, u := range f.users {
		a := actorOf(u)
		if u.Status != identity.StatusActive {
			if err := d.Authorize(bg, a, identity.ActSelfRead, instance); kernel.CodeOf(err) != unauthorized {
				f.t.Fatalf("seq %d: disabled %s: %v", f.seq, u.Handle, err)
			}
			continue
		}
		var resources []kernel.Resource
		for _, sp := range f.spaces {
			resources = append(resources, onSpace(sp))
		}
		for ch, sp := range f.m.channelSpace {
			kind := "channel"
			if f.m.dm[ch] {
				kind = authz.ChannelKindDM
			}
			for _, author := range []kernel.ID{a.ID, kernel.NewID()} {
				resources = append(resources, kernel.Resource{Kind: kernel.ResMessage, ID: kernel.NewID(), SpaceID: sp,
					ChannelID: ch, ChannelKind: kind, OwnerID: author})
			}
		}
		for _, r := range resources {
			for _, act := range matrixActions {
				want := kernel.CodeOf(f.db.Authorize(bg, a, act, r))
				if got := kernel.CodeOf(d.Authorize(bg, a, act, r)); got != want {
					f.t.Fatalf("seq %d: %s %s on %s %s: the cache says %q, the store %q", f.seq, u.Handle, act, r.Kind, r.ChannelID, got, want)
				}
			}
		}
		want, err := f.db.Visible(bg, a, catchup.ActEventsCatchUp)
		if err != nil {
			f.t.Fatal(err)
		}
		got, err := d.Visible(bg, a, catchup.ActEventsCatchUp)
		if err != nil {
			f.t.Fatal(err)
		}
		if got.All() != want.All() {
			f.t.Fatalf("seq %d: %s: All %v, the store %v", f.seq, u.Handle, got.All(), want.All())
		}
		for _, sp := range f.spaces {
			if got.Space(sp) != want.Space(sp) {
				f.t.Fatalf("seq %d: %s: Space %v, the store %v", f.seq, u.Handle, got.Space(sp), want.Space(sp))
			}
		}
		for ch := range f.m.channelSpace {
			if got.Channel(ch) != want.Channel(ch) {
				f.t.Fatalf("seq %d: %s: Channel %v, the store %v", f.seq, u.Handle, got.Channel(ch), want.Channel(ch))
			}
		}
	}
}

func (f *follower) expect(a kernel.Actor, act kernel.Action, r kernel.Resource, want kernel.Code) {
	f.t.Helper()
	if got := kernel.CodeOf(f.svc.Delivery().Authorize(bg, a, act, r)); got != want {
		f.t.Fatalf("seq %d: %s on %s: %q, want %q", f.seq, act, r.ChannelID, got, want)
	}
}

func chanRes(f *follower, ch kernel.ID, author kernel.Actor) kernel.Resource {
	return kernel.Resource{Kind: kernel.ResMessage, ID: kernel.NewID(), ChannelID: ch, SpaceID: f.m.channelSpace[ch], OwnerID: author.ID}
}

func TestObserve(t *testing.T) {
	t.Run("grants added, changed and revoked take effect at their seq", func(t *testing.T) {
		f := newFollower(t)
		alice := f.user("alice", false)
		sp := f.space()
		c := f.channel(sp, chat.KindChannel)
		f.expect(alice, messaging.ActMessageRead, chanRes(f, c, f.owner()), notFound)
		f.grant(alice, c, authz.LevelView)
		f.expect(alice, messaging.ActMessageRead, chanRes(f, c, f.owner()), ok)
		f.expect(alice, messaging.ActMessageCreate, chanRes(f, c, alice), forbidden)
		f.grant(alice, c, authz.LevelPost)
		f.expect(alice, messaging.ActMessageCreate, chanRes(f, c, alice), ok)
		f.grant(alice, c, authz.LevelManage)
		f.expect(alice, authz.ActGrantCreate, chanRes(f, c, alice), ok)
		f.grant(alice, c, authz.LevelNone)
		f.expect(alice, messaging.ActMessageRead, chanRes(f, c, f.owner()), notFound)
		f.expect(alice, chat.ActSpaceRead, onSpace(sp), notFound)
	})

	t.Run("a channel created in a space with a space grant is covered at once", func(t *testing.T) {
		f := newFollower(t)
		bob := f.user("bob", false)
		sp, other := f.space(), f.space()
		f.grant(bob, sp, authz.LevelPost)
		c := f.channel(sp, chat.KindChannel)
		f.expect(bob, messaging.ActMessageCreate, chanRes(f, c, bob), ok)
		e := f.channel(other, chat.KindChannel)
		f.expect(bob, messaging.ActMessageRead, chanRes(f, e, f.owner()), notFound)
		f.grant(bob, e, authz.LevelView) // the other space becomes visible through its channel
		f.expect(bob, chat.ActSpaceRead, onSpace(other), ok)
		f.expect(bob, chat.ActSpaceUpdate, onSpace(other), forbidden)
		f.grant(bob, sp, authz.LevelNone)
		f.expect(bob, messaging.ActMessageRead, chanRes(f, c, f.owner()), notFound)
		f.grant(bob, e, authz.LevelNone)
		f.expect(bob, chat.ActSpaceRead, onSpace(other), notFound)
	})

	t.Run("a DM shows only to its grant holders, owners and space managers included", func(t *testing.T) {
		f := newFollower(t)
		carol, dave := f.user("carol", false), f.user("dave", false)
		sp := f.space()
		f.grant(carol, sp, authz.LevelManage)
		dm := f.channel(sp, chat.KindDM)
		f.expect(carol, messaging.ActMessageRead, chanRes(f, dm, dave), notFound)
		f.expect(f.owner(), messaging.ActMessageRead, chanRes(f, dm, dave), notFound)
		f.grant(dave, dm, authz.LevelPost)
		f.expect(dave, messaging.ActMessageCreate, chanRes(f, dm, dave), ok)
		f.expect(dave, chat.ActSpaceRead, onSpace(sp), ok)
		f.grant(f.owner(), dm, authz.LevelView)
		f.expect(f.owner(), messaging.ActMessageRead, chanRes(f, dm, dave), ok)
		f.expect(f.owner(), messaging.ActMessageCreate, chanRes(f, dm, f.owner()), forbidden)
	})

	t.Run("a new owner holds manage everywhere but DMs", func(t *testing.T) {
		f := newFollower(t)
		sp := f.space()
		c := f.channel(sp, chat.KindChannel)
		erin := f.user("erin", true)
		f.expect(erin, chat.ActChannelUpdate, chanRes(f, c, erin), ok)
		f.expect(erin, identity.ActUserDisable, instance, ok)
	})

	t.Run("a disabled principal is unauthenticated for everything and reported once", func(t *testing.T) {
		f := newFollower(t)
		frank := f.user("frank", false)
		sp := f.space()
		c := f.channel(sp, chat.KindChannel)
		f.grant(frank, c, authz.LevelPost)
		vis, err := f.svc.Delivery().Visible(bg, frank, catchup.ActEventsCatchUp)
		if err != nil || !vis.Channel(c) {
			t.Fatalf("before: %v %v", vis, err)
		}
		f.disable(frank)
		if len(f.disabled) != 1 || f.disabled[0] != frank.ID {
			t.Fatalf("OnPrincipalDisabled saw %v", f.disabled)
		}
		f.expect(frank, messaging.ActMessageRead, chanRes(f, c, frank), unauthorized)
		f.expect(frank, identity.ActTokenList, kernel.Resource{Kind: kernel.ResToken, OwnerID: frank.ID}, unauthorized)
		f.expect(frank, identity.ActLogin, instance, ok) // anyone may try to log in
		if !f.svc.Delivery().Disabled(frank.ID) || f.svc.Delivery().Disabled(f.owner().ID) {
			t.Fatal("Disabled is wrong")
		}
		if vis.Channel(c) || vis.Space(sp) {
			t.Fatal("a visibility held by a connection still shows something after the disable")
		}
		if _, err := f.svc.Delivery().Visible(bg, frank, catchup.ActEventsCatchUp); kernel.CodeOf(err) != unauthorized {
			t.Fatalf("Visible: %v", err)
		}
		f.disable(frank) // disabling again changes nothing and reports nothing
		if len(f.disabled) != 1 {
			t.Fatalf("OnPrincipalDisabled saw %v", f.disabled)
		}
	})

	t.Run("events that change no rights only advance the seq", func(t *testing.T) {
		f := newFollower(t)
		sp := f.space()
		c := f.channel(sp, chat.KindChannel)
		f.emit(messaging.EvMessageCreated.Name, kernel.Scope{SpaceID: sp, ChannelID: c}, kernel.NewID(), map[string]any{"body": "hi"})
		f.emit(chat.EvChannelUpdated.Name, kernel.Scope{SpaceID: sp, ChannelID: c}, c,
			chat.Channel{ID: c, SpaceID: sp, Name: "renamed", Kind: chat.KindChannel})
		f.emit(identity.EvSessionRevoked.Name, kernel.Scope{PrincipalID: f.owner().ID}, kernel.NewID(), map[string]any{})
	})
}

func event(seq int64, typ string, payload string) kernel.LoggedEvent {
	return kernel.LoggedEvent{Seq: seq, Type: typ, Payload: []byte(payload)}
}

func TestObserveOrder(t *testing.T) {
	grantC := func(seq int64, a kernel.Actor, level string) kernel.LoggedEvent {
		return event(seq, authz.EvGrantChanged.Name, fmt.Sprintf(`{"channel_id":%q,"principal_id":%q,"level":%s}`, C, a.ID, level))
	}
	read := message(C, poster)
	// reloads counts the reloads of svc's cache and the seqs that caused them.
	reloads := func(svc *authz.Service) *[]int64 {
		var seqs []int64
		svc.OnObserveError(func(seq int64, err error) { seqs = append(seqs, seq) })
		return &seqs
	}

	t.Run("an event seen again changes nothing", func(t *testing.T) {
		m := fixture()
		svc := warmed(t, m)
		seen := reloads(svc)
		for _, e := range []kernel.LoggedEvent{grantC(1, stranger, `"view"`), grantC(2, stranger, `null`), grantC(1, stranger, `"view"`)} {
			svc.Observe(e)
		}
		if err := svc.Delivery().Authorize(bg, stranger, messaging.ActMessageRead, read); kernel.CodeOf(err) != notFound {
			t.Fatalf("the revoke was undone: %v", err)
		}
		if seq, _ := svc.Delivery().Seq(); seq != 2 || len(*seen) != 0 || m.queries != 0 {
			t.Fatalf("seq %d, reloads %v, %d queries", seq, *seen, m.queries)
		}
	})

	t.Run("events at or below the seq of the warm cache are skipped", func(t *testing.T) {
		m := fixture()
		m.head = 10
		svc := warmed(t, m)
		svc.Observe(grantC(10, viewer, `null`))
		if err := svc.Delivery().Authorize(bg, viewer, messaging.ActMessageRead, read); err != nil {
			t.Fatalf("an event the snapshot holds was applied again: %v", err)
		}
	})

	t.Run("a gap makes Observe load the cache again, at or past the event", func(t *testing.T) {
		m := fixture()
		svc := warmed(t, m)
		seen := reloads(svc)
		m.grants[[2]kernel.ID{stranger.ID, C}] = authz.LevelView // seq 1 and 2, which the tail skipped
		m.head = 3
		svc.Observe(grantC(2, stranger, `"view"`))
		if seq, warm := svc.Delivery().Seq(); seq != 3 || !warm || len(*seen) != 1 || (*seen)[0] != 2 {
			t.Fatalf("seq %d warm %v, reloads %v", seq, warm, *seen)
		}
		if err := svc.Delivery().Authorize(bg, stranger, messaging.ActMessageRead, read); err != nil {
			t.Fatalf("after the reload: %v", err)
		}
		svc.Observe(grantC(3, stranger, `"view"`)) // held by the reload: skipped
		svc.Observe(grantC(4, stranger, `null`))
		if err := svc.Delivery().Authorize(bg, stranger, messaging.ActMessageRead, read); kernel.CodeOf(err) != notFound || len(*seen) != 1 {
			t.Fatalf("after seq 4: %v, reloads %v", err, *seen)
		}
	})

	t.Run("while the store cannot load, delivery fails closed and REST reads the store", func(t *testing.T) {
		m := fixture()
		svc := warmed(t, m)
		m.current = true
		seen := reloads(svc)
		m.snapErr = fmt.Errorf("the database is away")
		m.head = 2
		svc.Observe(grantC(2, stranger, `"view"`))
		if _, warm := svc.Delivery().Seq(); warm || len(*seen) != 1 {
			t.Fatalf("warm %v, reloads %v", warm, *seen)
		}
		if err := svc.Delivery().Authorize(bg, viewer, messaging.ActMessageRead, read); kernel.CodeOf(err) != kernel.CodeInternal {
			t.Fatalf("delivery from a stale cache: %v", err)
		}
		if _, err := svc.Delivery().Visible(bg, viewer, messaging.ActMessageRead); kernel.CodeOf(err) != kernel.CodeInternal {
			t.Fatalf("visibility from a stale cache: %v", err)
		}
		m.queries = 0
		if err := svc.Authorize(bg, viewer, messaging.ActMessageRead, read); err != nil || m.queries != 1 {
			t.Fatalf("REST: %v after %d queries", err, m.queries)
		}
		m.snapErr = nil
		m.head = 3
		svc.Observe(grantC(3, stranger, `"view"`))
		if seq, warm := svc.Delivery().Seq(); seq != 3 || !warm || len(*seen) != 2 {
			t.Fatalf("seq %d warm %v, reloads %v", seq, warm, *seen)
		}
		if err := svc.Delivery().Authorize(bg, viewer, messaging.ActMessageRead, read); err != nil {
			t.Fatalf("after the reload: %v", err)
		}
	})

	t.Run("an unreadable payload makes Observe load the cache again", func(t *testing.T) {
		for _, e := range []kernel.LoggedEvent{
			event(1, authz.EvGrantChanged.Name, `{"channel_id":"x"`),
			event(1, authz.EvGrantChanged.Name, `{"channel_id":"x","principal_id":"p","level":"admin"}`),
			event(1, authz.EvGrantChanged.Name, `{"principal_id":"p","level":"view"}`),
			event(1, chat.EvChannelCreated.Name, `{"id":"c"}`),
			event(1, identity.EvUserCreated.Name, `{"id":"u","is_owner":false}`),
			event(1, identity.EvUserUpdated.Name, `{"id":"u","status":"asleep"}`),
		} {
			m := fixture()
			svc := warmed(t, m)
			seen := reloads(svc)
			m.head = 1
			svc.Observe(e)
			if seq, warm := svc.Delivery().Seq(); seq != 1 || !warm || len(*seen) != 1 || m.queries != 1 {
				t.Fatalf("%s %s: seq %d warm %v, reloads %v, %d queries", e.Type, e.Payload, seq, warm, *seen, m.queries)
			}
		}
	})

	t.Run("before Warm, delivery fails closed, REST reads the store, and Observe warms", func(t *testing.T) {
		m := fixture()
		svc := newService(m)
		if err := svc.Delivery().Authorize(bg, viewer, messaging.ActMessageRead, read); kernel.CodeOf(err) != kernel.CodeInternal {
			t.Fatalf("got %v", err)
		}
		m.current = true
		if err := svc.Authorize(bg, viewer, messaging.ActMessageRead, read); err != nil || m.queries != 1 {
			t.Fatalf("REST before Warm: %v after %d queries", err, m.queries)
		}
		m.head = 1
		svc.Observe(grantC(1, stranger, `"view"`))
		if seq, warm := svc.Delivery().Seq(); seq != 1 || !warm {
			t.Fatalf("seq %d warm %v", seq, warm)
		}
	})

	t.Run("REST reads the store while the cache is behind the committed head", func(t *testing.T) {
		m := fixture()
		svc := warmed(t, m)
		m.current = true
		m.head++ // a commit the tail has not handed to Observe yet: say it revoked viewer's grant
		delete(m.grants, [2]kernel.ID{viewer.ID, C})
		if err := svc.Authorize(bg, viewer, messaging.ActMessageRead, read); kernel.CodeOf(err) != notFound || m.queries != 1 {
			t.Fatalf("REST: %v after %d queries", err, m.queries)
		}
		if v, err := svc.Visible(bg, viewer, messaging.ActMessageRead); err != nil || v.Channel(C) || m.queries != 2 {
			t.Fatalf("REST visibility: %v after %d queries", err, m.queries)
		}
		// Delivery decides as of the last event observed, which is its point.
		if err := svc.Delivery().Authorize(bg, viewer, messaging.ActMessageRead, read); err != nil {
			t.Fatalf("delivery: %v", err)
		}
	})

	t.Run("REST reads the store where the store says the cache may not decide", func(t *testing.T) {
		m := fixture()
		svc := warmed(t, m)
		m.current = false // inside a Unit of Work, or PostgreSQL
		if err := svc.Authorize(bg, viewer, messaging.ActMessageRead, read); err != nil || m.queries != 1 {
			t.Fatalf("REST: %v after %d queries", err, m.queries)
		}
	})

	t.Run("Warm does not go back behind what Observe applied", func(t *testing.T) {
		m := fixture()
		svc := warmed(t, m)
		svc.Observe(grantC(1, stranger, `"view"`))
		if seq, err := svc.Warm(bg); err != nil || seq != 1 { // the store still says 0
			t.Fatalf("Warm: %d %v", seq, err)
		}
		if err := svc.Delivery().Authorize(bg, stranger, messaging.ActMessageRead, read); err != nil {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("a Warm that finds a principal disabled reports it", func(t *testing.T) {
		m := fixture()
		svc := warmed(t, m)
		var seen []kernel.ID
		svc.OnPrincipalDisabled(func(id kernel.ID) { seen = append(seen, id) })
		m.principals[poster.ID] = authz.PrincipalRef{ID: poster.ID, Active: false}
		m.head = 5
		if _, err := svc.Warm(bg); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 1 || seen[0] != poster.ID || !svc.Delivery().Disabled(poster.ID) {
			t.Fatalf("reported %v", seen)
		}
	})
}

// TestCacheUnderConcurrentObserve runs readers of every kind against a log tail that keeps
// granting and revoking; under -race it holds the locking, and each answer must be one of the
// two the log allows.
func TestCacheUnderConcurrentObserve(t *testing.T) {
	m := &sharedStore{memStore: fixture()}
	svc := authz.New(authz.Deps{Store: m, Structure: noStructure{}, UoW: noUoW{}, Events: noEvents{}})
	if _, err := svc.Warm(bg); err != nil {
		t.Fatal(err)
	}
	svc.OnObserveError(func(seq int64, err error) { t.Errorf("Observe %d: %v", seq, err) })
	read := message(C, poster)
	const events = 2000
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := svc.Delivery().Visible(bg, viewer, catchup.ActEventsCatchUp)
			if err != nil {
				errs <- err
				return
			}
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, err := range []error{
					svc.Delivery().Authorize(bg, viewer, messaging.ActMessageRead, read),
					svc.Authorize(bg, viewer, messaging.ActMessageRead, read),
				} {
					if c := kernel.CodeOf(err); c != ok && c != notFound {
						errs <- err
						return
					}
				}
				_ = v.Channel(C) || v.Space(S) || v.All()
				svc.Delivery().Disabled(viewer.ID)
				svc.Delivery().Seq()
			}
		}()
	}
	for seq := int64(1); seq <= events; seq++ {
		level := `"view"`
		if seq%2 == 1 {
			level = `null`
		}
		e := event(seq, authz.EvGrantChanged.Name, fmt.Sprintf(`{"channel_id":%q,"principal_id":%q,"level":%s}`, C, viewer.ID, level))
		svc.Observe(e)
		if seq%3 == 0 {
			m.head.Store(seq + 1) // now and then a commit the cache has not seen: REST reads the store
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := svc.Delivery().Authorize(bg, viewer, messaging.ActMessageRead, read); err != nil {
		t.Fatalf("after an even number of events the grant stands: %v", err)
	}
}

// sharedStore is a memStore that readers on several goroutines may use while the test moves
// the committed head: the head is atomic and the grant queries are serialized.
type sharedStore struct {
	*memStore
	mu   sync.Mutex
	head atomic.Int64
}

func (s *sharedStore) CommittedHead(context.Context) (int64, bool) { return s.head.Load(), true }

func (s *sharedStore) MaxLevel(ctx context.Context, p kernel.ID, ids ...kernel.ID) (authz.Level, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memStore.MaxLevel(ctx, p, ids...)
}
