package authz_test

import (
	"context"
	"sort"
	"testing"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// memStore is an in-memory authz.Store with the structure it needs; it counts queries so the
// tests can hold the one-query rule of the hot path.
type memStore struct {
	grants       map[[2]kernel.ID]authz.Level // (principal, resource)
	channelSpace map[kernel.ID]kernel.ID
	dm           map[kernel.ID]bool
	principals   map[kernel.ID]authz.PrincipalRef
	queries      int
	// head and current are what CommittedHead answers: current says that a cache at head may
	// decide (outside a Unit of Work, on an engine that sees every commit).
	head    int64
	current bool
	snapErr error // Snapshot fails with it when set
}

var _ authz.Store = (*memStore)(nil)

func (m *memStore) MaxLevel(_ context.Context, p kernel.ID, ids ...kernel.ID) (authz.Level, error) {
	m.queries++
	best := authz.LevelNone
	for _, id := range ids {
		if l := m.grants[[2]kernel.ID{p, id}]; l > best {
			best = l
		}
	}
	return best, nil
}

func (m *memStore) SpaceAccess(_ context.Context, p, space kernel.ID) (authz.Level, bool, error) {
	m.queries++
	l := m.grants[[2]kernel.ID{p, space}]
	any := l > authz.LevelNone
	for ch, sp := range m.channelSpace {
		if sp == space && m.grants[[2]kernel.ID{p, ch}] > authz.LevelNone {
			any = true
		}
	}
	return l, any, nil
}

func (m *memStore) VisibleTo(_ context.Context, p kernel.ID) (spaces, channels []kernel.ID, err error) {
	m.queries++
	for k := range m.grants {
		if k[0] != p {
			continue
		}
		if sp, isChannel := m.channelSpace[k[1]]; isChannel {
			channels = append(channels, k[1])
			spaces = append(spaces, sp)
			continue
		}
		spaces = append(spaces, k[1])
		for ch, sp := range m.channelSpace {
			if sp == k[1] && !m.dm[ch] {
				channels = append(channels, ch)
			}
		}
	}
	return spaces, channels, nil
}

func (m *memStore) HiddenDMs(_ context.Context, p kernel.ID) ([]kernel.ID, error) {
	m.queries++
	var out []kernel.ID
	for ch, dm := range m.dm {
		if dm && m.grants[[2]kernel.ID{p, ch}] == authz.LevelNone {
			out = append(out, ch)
		}
	}
	return out, nil
}

func (m *memStore) Snapshot(context.Context) (authz.Snapshot, error) {
	m.queries++
	if m.snapErr != nil {
		return authz.Snapshot{}, m.snapErr
	}
	snap := authz.Snapshot{Seq: m.head}
	for _, p := range m.principals {
		snap.Principals = append(snap.Principals, p)
	}
	for ch, sp := range m.channelSpace {
		kind := "channel"
		if m.dm[ch] {
			kind = authz.ChannelKindDM
		}
		snap.Channels = append(snap.Channels, authz.ChannelRef{ID: ch, SpaceID: sp, Kind: kind})
	}
	for k, l := range m.grants {
		kind := kernel.ResSpace
		if _, isChannel := m.channelSpace[k[1]]; isChannel {
			kind = kernel.ResChannel
		}
		snap.Grants = append(snap.Grants, authz.Grant{ResourceKind: kind, ResourceID: k[1], PrincipalID: k[0], Level: l})
	}
	return snap, nil
}

func (m *memStore) CommittedHead(context.Context) (int64, bool) { return m.head, m.current }

func (m *memStore) Grant(context.Context, kernel.ID, kernel.ID) (authz.Grant, error) {
	panic("not used")
}
func (m *memStore) UpsertGrant(context.Context, authz.Grant) (authz.Grant, error) { panic("not used") }
func (m *memStore) DeleteGrant(context.Context, kernel.ID, kernel.ID) error       { panic("not used") }
func (m *memStore) ListGrants(context.Context, kernel.ID) ([]authz.Grant, error) {
	panic("not used")
}
func (m *memStore) BumpPermissionVersion(context.Context) error { panic("not used") }
func (m *memStore) PrincipalActive(context.Context, kernel.ID) (bool, error) {
	panic("not used")
}

type noStructure struct{}

func (noStructure) Channel(context.Context, kernel.ID) (authz.ChannelRef, error) {
	return authz.ChannelRef{}, kernel.ErrNotFound
}
func (noStructure) SpaceExists(context.Context, kernel.ID) (bool, error) { return false, nil }

type noUoW struct{}

func (noUoW) Do(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }

type noEvents struct{}

func (noEvents) Append(context.Context, kernel.Event) {}

// The fixture: space S with channels C, C2 and the DM D; space S2 with channel E.
var (
	S, C, C2, D, S2, E = kernel.NewID(), kernel.NewID(), kernel.NewID(), kernel.NewID(), kernel.NewID(), kernel.NewID()

	owner       = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, IsOwner: true}
	viewer      = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // view on C
	poster      = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // post on C
	manager     = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // manage on C
	spaceMgr    = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // manage on S
	spaceViewer = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // view on S
	dmMember    = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // post on D
	agent       = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindAgent}  // invoke on C
	// agentMarkedOwner is an agent whose credential claims the owner flag: only people are owners.
	agentMarkedOwner = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindAgent, IsOwner: true}
	stranger         = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson} // nothing
	anonymous        = kernel.Anonymous
)

func fixture() *memStore {
	m := &memStore{grants: map[[2]kernel.ID]authz.Level{},
		channelSpace: map[kernel.ID]kernel.ID{C: S, C2: S, D: S, E: S2},
		dm:           map[kernel.ID]bool{D: true},
		principals:   map[kernel.ID]authz.PrincipalRef{}}
	for _, a := range []kernel.Actor{owner, viewer, poster, manager, spaceMgr, spaceViewer, dmMember, agent, agentMarkedOwner, stranger} {
		m.principals[a.ID] = authz.PrincipalRef{ID: a.ID, Active: true, IsOwner: a.IsOwner}
	}
	set := func(a kernel.Actor, r kernel.ID, l authz.Level) { m.grants[[2]kernel.ID{a.ID, r}] = l }
	set(viewer, C, authz.LevelView)
	set(poster, C, authz.LevelPost)
	set(manager, C, authz.LevelManage)
	set(spaceMgr, S, authz.LevelManage)
	set(spaceViewer, S, authz.LevelView)
	set(dmMember, D, authz.LevelPost)
	set(agent, C, authz.LevelInvoke)
	return m
}

func newService(m *memStore) *authz.Service {
	return authz.New(authz.Deps{Store: m, Structure: noStructure{}, UoW: noUoW{}, Events: noEvents{}})
}

func onChannel(ch kernel.ID) kernel.Resource {
	sp := S
	if ch == E {
		sp = S2
	}
	kind := "channel"
	if ch == D {
		kind = authz.ChannelKindDM
	}
	return kernel.Resource{Kind: kernel.ResChannel, ID: ch, SpaceID: sp, ChannelID: ch, ChannelKind: kind}
}

func message(ch kernel.ID, author kernel.Actor) kernel.Resource {
	r := onChannel(ch)
	r.Kind, r.ID, r.OwnerID = kernel.ResMessage, kernel.NewID(), author.ID
	return r
}

func onSpace(sp kernel.ID) kernel.Resource {
	return kernel.Resource{Kind: kernel.ResSpace, ID: sp, SpaceID: sp}
}

var instance = kernel.Resource{Kind: kernel.ResInstance}

var (
	ok           = kernel.Code{}
	notFound     = kernel.CodeNotFound
	forbidden    = kernel.CodeForbidden
	unauthorized = kernel.CodeUnauthenticated
)

type decision struct {
	name   string
	actor  kernel.Actor
	action kernel.Action
	res    kernel.Resource
	want   kernel.Code
}

func decisions() []decision {
	own := func(a kernel.Actor) kernel.Resource { return kernel.Resource{Kind: kernel.ResToken, OwnerID: a.ID} }
	ds := []decision{
		{"anyone may bootstrap the instance", anonymous, identity.ActInstanceBootstrap, instance, ok},
		{"anyone may complete a login", anonymous, identity.ActLogin, instance, ok},

		{"a stranger may list its own tokens", stranger, identity.ActTokenList, own(stranger), ok},
		{"a stranger may create its own token", stranger, identity.ActTokenCreate, own(stranger), ok},
		{"a stranger may revoke its own token", stranger, identity.ActTokenRevoke, own(stranger), ok},
		{"another's token is not found", stranger, identity.ActTokenRevoke, own(viewer), notFound},
		{"an owner does not see another's token either", owner, identity.ActTokenRevoke, own(viewer), notFound},
		{"a token without a holder is not found", stranger, identity.ActTokenList, kernel.Resource{Kind: kernel.ResToken}, notFound},
		{"the anonymous actor has no tokens", anonymous, identity.ActTokenList, own(anonymous), unauthorized},

		{"an owner may create a space", owner, chat.ActSpaceCreate, instance, ok},
		{"a space manager may not create a space", spaceMgr, chat.ActSpaceCreate, instance, forbidden},
		{"the anonymous actor may not create a space", anonymous, chat.ActSpaceCreate, instance, unauthorized},

		{"an owner reads any space", owner, chat.ActSpaceRead, onSpace(S2), ok},
		{"a space grant shows the space", spaceViewer, chat.ActSpaceRead, onSpace(S), ok},
		{"a channel grant shows the channel's space", viewer, chat.ActSpaceRead, onSpace(S), ok},
		{"a DM grant shows the DM's space", dmMember, chat.ActSpaceRead, onSpace(S), ok},
		{"a space without any grant is not found", viewer, chat.ActSpaceRead, onSpace(S2), notFound},
		{"a stranger sees no space", stranger, chat.ActSpaceRead, onSpace(S), notFound},
		{"the anonymous actor must authenticate to read a space", anonymous, chat.ActSpaceRead, onSpace(S), unauthorized},

		{"an owner may update a space", owner, chat.ActSpaceUpdate, onSpace(S), ok},
		{"a space manager may update its space", spaceMgr, chat.ActSpaceUpdate, onSpace(S), ok},
		{"a space viewer may not update its space", spaceViewer, chat.ActSpaceUpdate, onSpace(S), forbidden},
		{"a channel manager may not update the space", manager, chat.ActSpaceUpdate, onSpace(S), forbidden},
		{"a space manager does not see another space", spaceMgr, chat.ActSpaceUpdate, onSpace(S2), notFound},

		{"an owner may create a channel", owner, chat.ActChannelCreate, onSpace(S2), ok},
		{"a space manager may create a channel", spaceMgr, chat.ActChannelCreate, onSpace(S), ok},
		{"a channel manager may not create a channel", manager, chat.ActChannelCreate, onSpace(S), forbidden},
		{"a stranger does not see where to create a channel", stranger, chat.ActChannelCreate, onSpace(S), notFound},

		{"a viewer may read its channel", viewer, chat.ActChannelRead, onChannel(C), ok},
		{"a viewer does not see another channel", viewer, chat.ActChannelRead, onChannel(C2), notFound},
		{"a space grant covers the space's channels", spaceViewer, chat.ActChannelRead, onChannel(C2), ok},
		{"a space grant does not reach another space", spaceViewer, chat.ActChannelRead, onChannel(E), notFound},
		{"an owner reads every channel", owner, chat.ActChannelRead, onChannel(E), ok},
		{"a stranger does not see a channel", stranger, chat.ActChannelRead, onChannel(C), notFound},
		{"the anonymous actor must authenticate to read a channel", anonymous, chat.ActChannelRead, onChannel(C), unauthorized},

		{"a channel manager may update its channel", manager, chat.ActChannelUpdate, onChannel(C), ok},
		{"a space manager may update the space's channels", spaceMgr, chat.ActChannelUpdate, onChannel(C2), ok},
		{"an owner may update any channel", owner, chat.ActChannelUpdate, onChannel(E), ok},
		{"a poster may not update its channel", poster, chat.ActChannelUpdate, onChannel(C), forbidden},
		{"an invoker may not update its channel", agent, chat.ActChannelUpdate, onChannel(C), forbidden},
		{"a stranger does not see the channel to update", stranger, chat.ActChannelUpdate, onChannel(C), notFound},

		{"a poster may post", poster, messaging.ActMessageCreate, message(C, poster), ok},
		{"an invoker may post", agent, messaging.ActMessageCreate, message(C, agent), ok},
		{"a viewer may not post", viewer, messaging.ActMessageCreate, message(C, viewer), forbidden},
		{"a space viewer may not post", spaceViewer, messaging.ActMessageCreate, message(C2, spaceViewer), forbidden},
		{"a stranger does not see where to post", stranger, messaging.ActMessageCreate, message(C, stranger), notFound},
		{"an owner may post anywhere", owner, messaging.ActMessageCreate, message(E, owner), ok},

		{"an author with post may edit its message", poster, messaging.ActMessageUpdate, message(C, poster), ok},
		{"a poster may not edit another's message", poster, messaging.ActMessageUpdate, message(C, viewer), forbidden},
		{"an author who lost post may not edit", viewer, messaging.ActMessageUpdate, message(C, viewer), forbidden},
		{"a manager may not edit another's message", manager, messaging.ActMessageUpdate, message(C, poster), forbidden},
		{"an owner may not edit another's message", owner, messaging.ActMessageUpdate, message(C, poster), forbidden},
		{"an owner may edit its own message", owner, messaging.ActMessageUpdate, message(C, owner), ok},
		{"a stranger does not see the message to edit", stranger, messaging.ActMessageUpdate, message(C, stranger), notFound},

		{"an author with post may delete its message", poster, messaging.ActMessageDelete, message(C, poster), ok},
		{"a poster may not delete another's message", poster, messaging.ActMessageDelete, message(C, viewer), forbidden},
		{"a manager may delete another's message", manager, messaging.ActMessageDelete, message(C, poster), ok},
		{"a space manager may delete another's message", spaceMgr, messaging.ActMessageDelete, message(C, poster), ok},
		{"an owner may delete another's message", owner, messaging.ActMessageDelete, message(C, poster), ok},
		{"an author with view only may not delete", viewer, messaging.ActMessageDelete, message(C, viewer), forbidden},
		{"a stranger does not see the message to delete", stranger, messaging.ActMessageDelete, message(C, poster), notFound},

		{"an owner does not see a DM it is not in", owner, messaging.ActMessageRead, message(D, dmMember), notFound},
		{"an owner may not post into a DM it is not in", owner, messaging.ActMessageCreate, message(D, owner), notFound},
		{"a space manager does not see the space's DMs", spaceMgr, chat.ActChannelRead, onChannel(D), notFound},
		{"a space viewer does not see the space's DMs", spaceViewer, messaging.ActMessageRead, message(D, dmMember), notFound},
		{"a DM member reads its DM", dmMember, messaging.ActMessageRead, message(D, dmMember), ok},
		{"a DM member posts into its DM", dmMember, messaging.ActMessageCreate, message(D, dmMember), ok},
		{"a DM member may not manage its DM", dmMember, chat.ActChannelUpdate, onChannel(D), forbidden},
		{"a DM member may not delete another's DM message", dmMember, messaging.ActMessageDelete, message(D, owner), forbidden},
	}
	for _, a := range []kernel.Action{identity.ActLogout, identity.ActSelfRead, identity.ActUserRead, catchup.ActEventsCatchUp} {
		ds = append(ds,
			decision{"any principal may " + string(a), stranger, a, instance, ok},
			decision{"an agent may " + string(a), agent, a, instance, ok},
			decision{"the anonymous actor may not " + string(a), anonymous, a, instance, unauthorized})
	}
	for _, a := range []kernel.Action{identity.ActUserCreate, identity.ActUserDisable} {
		ds = append(ds,
			decision{"an owner may " + string(a), owner, a, instance, ok},
			decision{"a person who is no owner may not " + string(a), spaceMgr, a, instance, forbidden},
			decision{"the anonymous actor may not " + string(a), anonymous, a, instance, unauthorized})
	}
	for _, a := range []kernel.Action{agents.ActAgentCreate, agents.ActAgentDisable, agents.ActAgentEnable} {
		ds = append(ds,
			decision{"an owner may " + string(a), owner, a, instance, ok},
			decision{"a person who is no owner may not " + string(a), spaceMgr, a, instance, forbidden},
			decision{"an agent may not " + string(a), agent, a, instance, forbidden},
			decision{"an agent marked owner by mistake may not " + string(a), agentMarkedOwner, a, instance, forbidden},
			decision{"the anonymous actor may not " + string(a), anonymous, a, instance, unauthorized})
	}
	ds = append(ds,
		decision{"any person may read the agents", stranger, agents.ActAgentRead, instance, ok},
		decision{"an owner may read the agents", owner, agents.ActAgentRead, instance, ok},
		decision{"an agent may not read the agents", agent, agents.ActAgentRead, instance, forbidden},
		decision{"the anonymous actor may not read the agents", anonymous, agents.ActAgentRead, instance, unauthorized},
		decision{"an agent consumes its own events", agent, catchup.ActAgentConsume, instance, ok},
		decision{"a person has no consumer", stranger, catchup.ActAgentConsume, instance, forbidden},
		decision{"an owner has no consumer", owner, catchup.ActAgentConsume, instance, forbidden},
		decision{"the anonymous actor has no consumer", anonymous, catchup.ActAgentConsume, instance, unauthorized},

		decision{"a channel manager may set its channel's operator", manager, chat.ActChannelOperatorSet, onChannel(C), ok},
		decision{"a space manager may set the operator of the space's channels", spaceMgr, chat.ActChannelOperatorSet, onChannel(C2), ok},
		decision{"an owner may set any channel's operator", owner, chat.ActChannelOperatorSet, onChannel(E), ok},
		decision{"a poster may not set the operator", poster, chat.ActChannelOperatorSet, onChannel(C), forbidden},
		decision{"an invoker may not set the operator", agent, chat.ActChannelOperatorSet, onChannel(C), forbidden},
		decision{"a stranger does not see the channel to set its operator", stranger, chat.ActChannelOperatorSet, onChannel(C), notFound},
		decision{"an owner may not set the operator of a DM it is not in", owner, chat.ActChannelOperatorSet, onChannel(D), notFound},

		decision{"an agent reads the channel it holds a grant on, like a person", agent, chat.ActChannelRead, onChannel(C), ok},
		decision{"an agent does not see a channel without a grant", agent, chat.ActChannelRead, onChannel(E), notFound},
		decision{"an agent marked owner by mistake sees no channel without a grant", agentMarkedOwner, chat.ActChannelRead, onChannel(E), notFound},
		decision{"an agent marked owner by mistake may not create a space", agentMarkedOwner, chat.ActSpaceCreate, instance, forbidden})
	for _, a := range []kernel.Action{chat.ActThreadRead, messaging.ActMessageRead, messaging.ActRevisionsRead} {
		ds = append(ds,
			decision{"a viewer may " + string(a), viewer, a, message(C, poster), ok},
			decision{"a space viewer may " + string(a), spaceViewer, a, message(C2, poster), ok},
			decision{"a stranger may not see " + string(a), stranger, a, message(C, poster), notFound})
	}
	for _, a := range []kernel.Action{chat.ActThreadCreate, messaging.ActReactionAdd, messaging.ActReactionRemove} {
		ds = append(ds,
			decision{"a poster may " + string(a), poster, a, message(C, manager), ok},
			decision{"a viewer may not " + string(a), viewer, a, message(C, manager), forbidden},
			decision{"a stranger may not see " + string(a), stranger, a, message(C, manager), notFound})
	}
	for _, a := range []kernel.Action{messaging.ActMessagePin, messaging.ActMessageUnpin} {
		ds = append(ds,
			decision{"a poster may " + string(a) + " another's message", poster, a, message(C, manager), ok},
			decision{"a viewer may " + string(a) + " its own message", viewer, a, message(C, viewer), ok},
			decision{"a viewer may not " + string(a) + " another's message", viewer, a, message(C, manager), forbidden},
			decision{"a stranger does not see the message to " + string(a), stranger, a, message(C, stranger), notFound})
	}
	for _, a := range []kernel.Action{authz.ActGrantRead, authz.ActGrantCreate, authz.ActGrantRevoke} {
		ds = append(ds,
			decision{"a channel manager may " + string(a), manager, a, onChannel(C), ok},
			decision{"a space manager may " + string(a), spaceMgr, a, onChannel(C2), ok},
			decision{"an owner may " + string(a), owner, a, onChannel(E), ok},
			decision{"a poster may not " + string(a), poster, a, onChannel(C), forbidden},
			decision{"a stranger may not see " + string(a), stranger, a, onChannel(C), notFound},
			decision{"a space manager may " + string(a) + " on the space", spaceMgr, a, onSpace(S), ok},
			decision{"a channel manager may not " + string(a) + " on the space", manager, a, onSpace(S), forbidden},
			decision{"an owner may not " + string(a) + " on a DM it is not in", owner, a, onChannel(D), notFound})
	}
	return ds
}

func TestAuthorize(t *testing.T) {
	svc := newService(fixture())
	for _, d := range decisions() {
		t.Run(d.name, func(t *testing.T) {
			ctx, log := kernel.WithCheckLog(context.Background())
			err := svc.Authorize(ctx, d.actor, d.action, d.res)
			if got := kernel.CodeOf(err); got != d.want {
				t.Fatalf("%s by %v on %s: got %q (%v), want %q", d.action, d.actor.ID, d.res.Kind, got, err, d.want)
			}
			if !log.Checked(d.action) {
				t.Fatalf("the decision was not recorded in the check log")
			}
		})
	}

	t.Run("every action with a rule is covered by the table", func(t *testing.T) {
		seen := map[kernel.Action]bool{}
		for _, d := range decisions() {
			seen[d.action] = true
		}
		for _, a := range allActions {
			if !authz.Known(a) {
				t.Errorf("%s has no rule", a)
			}
			if !seen[a] {
				t.Errorf("%s has no row in the decision table", a)
			}
		}
	})

	t.Run("an unknown action is an internal error, never an allow", func(t *testing.T) {
		ctx, log := kernel.WithCheckLog(context.Background())
		err := svc.Authorize(ctx, owner, kernel.Action("nope.never"), instance)
		if kernel.CodeOf(err) != kernel.CodeInternal {
			t.Fatalf("got %v", err)
		}
		if !log.Checked("nope.never") {
			t.Fatal("not recorded")
		}
	})

	t.Run("a message create costs exactly one store query", func(t *testing.T) {
		m := fixture()
		svc := newService(m)
		if err := svc.Authorize(context.Background(), poster, messaging.ActMessageCreate, message(C, poster)); err != nil {
			t.Fatal(err)
		}
		if m.queries != 1 {
			t.Fatalf("%d queries", m.queries)
		}
	})

	t.Run("an owner's channel decision costs no query", func(t *testing.T) {
		m := fixture()
		svc := newService(m)
		if err := svc.Authorize(context.Background(), owner, messaging.ActMessageCreate, message(C, owner)); err != nil {
			t.Fatal(err)
		}
		if m.queries != 0 {
			t.Fatalf("%d queries", m.queries)
		}
	})
}

var allActions = []kernel.Action{
	identity.ActInstanceBootstrap, identity.ActLogin, identity.ActLogout, identity.ActSelfRead, identity.ActUserRead,
	identity.ActUserCreate, identity.ActUserDisable, identity.ActTokenList, identity.ActTokenCreate, identity.ActTokenRevoke,
	chat.ActSpaceRead, chat.ActSpaceCreate, chat.ActSpaceUpdate, chat.ActChannelRead, chat.ActChannelCreate,
	chat.ActChannelUpdate, authz.ActGrantRead, authz.ActGrantCreate, authz.ActGrantRevoke, chat.ActThreadRead,
	chat.ActThreadCreate, messaging.ActMessageRead, messaging.ActMessageCreate, messaging.ActMessageUpdate,
	messaging.ActMessageDelete, messaging.ActRevisionsRead, messaging.ActReactionAdd, messaging.ActReactionRemove,
	messaging.ActMessagePin, messaging.ActMessageUnpin,
	catchup.ActEventsCatchUp, agents.ActAgentCreate, agents.ActAgentRead, agents.ActAgentDisable, agents.ActAgentEnable, catchup.ActAgentConsume,
	chat.ActChannelOperatorSet,
}

func TestVisible(t *testing.T) {
	svc := newService(fixture())
	cases := []struct {
		name     string
		actor    kernel.Actor
		all      bool
		spaces   []kernel.ID
		channels []kernel.ID
	}{
		{"an owner sees everything but the DMs it is not in", owner, true, []kernel.ID{S, S2}, []kernel.ID{C, C2, E}},
		{"a space grant shows the space and its non-DM channels", spaceViewer, false, []kernel.ID{S}, []kernel.ID{C, C2}},
		{"a channel grant shows the channel and its space", viewer, false, []kernel.ID{S}, []kernel.ID{C}},
		{"a DM grant shows the DM", dmMember, false, []kernel.ID{S}, []kernel.ID{D}},
		{"a stranger sees nothing", stranger, false, nil, nil},
		{"an agent sees what its grants show, like a person", agent, false, []kernel.ID{S}, []kernel.ID{C}},
		{"an agent marked owner by mistake sees only its grants", agentMarkedOwner, false, nil, nil},
	}
	everySpace, everyChannel := []kernel.ID{S, S2}, []kernel.ID{C, C2, D, E}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, log := kernel.WithCheckLog(context.Background())
			v, err := svc.Visible(ctx, c.actor, messaging.ActMessageRead)
			if err != nil {
				t.Fatal(err)
			}
			if !log.Checked(messaging.ActMessageRead) {
				t.Fatal("not recorded")
			}
			if v.All() != c.all {
				t.Fatalf("All() = %v", v.All())
			}
			var spaces, channels []kernel.ID
			for _, s := range everySpace {
				if v.Space(s) {
					spaces = append(spaces, s)
				}
			}
			for _, ch := range everyChannel {
				if v.Channel(ch) {
					channels = append(channels, ch)
				}
			}
			if !sameIDs(spaces, c.spaces) || !sameIDs(channels, c.channels) {
				t.Fatalf("spaces %v channels %v, want %v %v", spaces, channels, c.spaces, c.channels)
			}
		})
	}
	t.Run("the anonymous actor must authenticate", func(t *testing.T) {
		if _, err := svc.Visible(context.Background(), anonymous, messaging.ActMessageRead); kernel.CodeOf(err) != unauthorized {
			t.Fatalf("got %v", err)
		}
	})
}

func sameIDs(a, b []kernel.ID) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = append([]kernel.ID(nil), a...), append([]kernel.ID(nil), b...)
	sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseLevel(t *testing.T) {
	t.Run("reads the four levels in order", func(t *testing.T) {
		prev := authz.LevelNone
		for _, s := range []string{"view", "post", "invoke", "manage"} {
			l, err := authz.ParseLevel(s)
			if err != nil || l <= prev || l.String() != s {
				t.Fatalf("%s: %v %v", s, l, err)
			}
			prev = l
		}
	})
	t.Run("refuses anything else naming the field", func(t *testing.T) {
		_, err := authz.ParseLevel("admin")
		var ke *kernel.Error
		if kernel.CodeOf(err) != kernel.CodeValidation || !asError(err, &ke) || ke.Field != "level" {
			t.Fatalf("got %v", err)
		}
	})
}

func asError(err error, target **kernel.Error) bool {
	ke, ok := err.(*kernel.Error)
	*target = ke
	return ok
}
