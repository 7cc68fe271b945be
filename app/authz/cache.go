package authz

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"bothy.dev/bothy/app/kernel"
)

// errCold answers a delivery decision before the first Warm, and while the cache is stale (an
// event it could not apply and a reload that failed): delivery fails closed meanwhile.
var errCold = errors.New("authz: the permission cache is not warm (call Warm)")

// cache is the warm permission model (package comment). Reads take mu shared; Warm and Observe
// take it exclusively for as long as it takes to swap or change a few map entries.
type cache struct {
	mu sync.RWMutex
	m  *model // nil until the first Warm
	// stale is set when Observe met an event it could not apply (a gap in seq, a payload it
	// cannot read): the model stops at its seq, delivery refuses to decide from it and REST
	// reads the database, until Warm replaces it.
	stale          bool
	onDisabled     func(kernel.ID)
	onObserveError func(int64, error)
	// payloadErrors counts the events whose payload could not be read as their type's
	// (PayloadErrors).
	payloadErrors atomic.Int64
}

// model is the content of the cache as of seq.
type model struct {
	seq        int64
	channels   map[kernel.ID]channelInfo
	principals map[kernel.ID]*principalState
}

type channelInfo struct {
	space kernel.ID
	dm    bool
}

// principalState is one principal as the cache knows it. A state made only by a grant (the
// principal's own row or user.created not seen) is not known: delivery treats it as nobody.
type principalState struct {
	known, active, owner bool
	person               bool                       // a person, not an agent or an app
	channels             map[kernel.ID]channelGrant // channel grants, by channel
	spaces               map[kernel.ID]Level        // space grants, by space
	// reach counts the channel grants held in each space: any grant on a space's channel makes
	// the space visible (Store.SpaceAccess, Store.VisibleTo).
	reach map[kernel.ID]int
}

type channelGrant struct {
	level Level
	space kernel.ID // the space counted in reach for this grant ("" when the channel was unknown)
}

func newModel(seq int64) *model {
	return &model{seq: seq, channels: map[kernel.ID]channelInfo{}, principals: map[kernel.ID]*principalState{}}
}

func (m *model) principal(id kernel.ID) *principalState {
	p := m.principals[id]
	if p == nil {
		p = &principalState{}
		m.principals[id] = p
	}
	return p
}

func (m *model) setChannelGrant(principalID, channelID kernel.ID, l Level) {
	p := m.principal(principalID)
	if g, ok := p.channels[channelID]; ok {
		g.level = l
		p.channels[channelID] = g
		return
	}
	if p.channels == nil {
		p.channels = map[kernel.ID]channelGrant{}
	}
	g := channelGrant{level: l}
	if ch, ok := m.channels[channelID]; ok {
		g.space = ch.space
		if p.reach == nil {
			p.reach = map[kernel.ID]int{}
		}
		p.reach[g.space]++
	}
	p.channels[channelID] = g
}

// setChannel records a channel's space and kind. Channels do not move between spaces today; if
// one ever does, the grants on it are counted in reach of the new space.
func (m *model) setChannel(id kernel.ID, ch channelInfo) {
	if old, ok := m.channels[id]; ok && old.space == ch.space {
		m.channels[id] = ch
		return
	}
	m.channels[id] = ch
	for _, p := range m.principals {
		g, ok := p.channels[id]
		if !ok || g.space == ch.space {
			continue
		}
		if g.space != "" {
			if p.reach[g.space]--; p.reach[g.space] <= 0 {
				delete(p.reach, g.space)
			}
		}
		if p.reach == nil {
			p.reach = map[kernel.ID]int{}
		}
		p.reach[ch.space]++
		g.space = ch.space
		p.channels[id] = g
	}
}

func (m *model) deleteChannelGrant(principalID, channelID kernel.ID) {
	p := m.principals[principalID]
	if p == nil {
		return
	}
	g, ok := p.channels[channelID]
	if !ok {
		return
	}
	delete(p.channels, channelID)
	if g.space != "" {
		if p.reach[g.space]--; p.reach[g.space] <= 0 {
			delete(p.reach, g.space)
		}
	}
}

func (m *model) setSpaceGrant(principalID, spaceID kernel.ID, l Level) {
	p := m.principal(principalID)
	if p.spaces == nil {
		p.spaces = map[kernel.ID]Level{}
	}
	p.spaces[spaceID] = l
}

// channelLevel implements grantSource on the model; the caller holds the cache's lock.
func (m *model) channelLevel(_ context.Context, principalID, channelID, spaceID kernel.ID) (Level, error) {
	p := m.principals[principalID]
	if p == nil {
		return LevelNone, nil
	}
	l := p.channels[channelID].level
	if !spaceID.IsZero() {
		l = max(l, p.spaces[spaceID])
	}
	return l, nil
}

// spaceAccess implements grantSource on the model; the caller holds the cache's lock.
func (m *model) spaceAccess(_ context.Context, principalID, spaceID kernel.ID) (Level, bool, error) {
	p := m.principals[principalID]
	if p == nil {
		return LevelNone, false, nil
	}
	l := p.spaces[spaceID]
	return l, l > LevelNone || p.reach[spaceID] > 0, nil
}

// actor is who the model says actor is: its owner flag from the model, or the anonymous actor
// when the model does not know the principal or knows it disabled.
func (m *model) actor(a kernel.Actor) kernel.Actor {
	p := m.principals[a.ID]
	if a.ID.IsZero() || p == nil || !p.known || !p.active {
		return kernel.Anonymous
	}
	a.IsOwner = p.owner
	return a
}

// resource fills the space and kind of r's channel from the model, when it knows the channel.
func (m *model) resource(r kernel.Resource) kernel.Resource {
	channelID := r.ChannelID
	if r.Kind == kernel.ResChannel && channelID.IsZero() {
		channelID = r.ID
	}
	if channelID.IsZero() {
		return r
	}
	if ch, ok := m.channels[channelID]; ok {
		r.SpaceID = ch.space
		r.ChannelKind = "channel"
		if ch.dm {
			r.ChannelKind = ChannelKindDM
		}
	}
	return r
}

// ---- loading ----

// Warm loads the permission cache from the store (Store.Snapshot, one query) and returns the seq
// it is current at. Call it once at start, before the log tail and the first delivery decision
// (until then delivery decisions fail), outside a Unit of Work. The tail then hands Observe every
// event after that seq, in order; a tail that starts earlier is fine (Observe skips what the
// cache holds), one that starts later makes Observe load the cache again.
// Errors: whatever the store returns (internal).
func (s *Service) Warm(ctx context.Context) (int64, error) {
	snap, err := s.store.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	m := newModel(snap.Seq)
	for _, ch := range snap.Channels {
		m.channels[ch.ID] = channelInfo{space: ch.SpaceID, dm: ch.Kind == ChannelKindDM}
	}
	for _, p := range snap.Principals {
		st := m.principal(p.ID)
		st.known, st.active, st.owner, st.person = true, p.Active, p.IsOwner, p.Kind == kernel.KindPerson
	}
	for _, g := range snap.Grants {
		if !g.Level.Valid() {
			return 0, fmt.Errorf("authz: snapshot grant of %s on %s with level %d", g.PrincipalID, g.ResourceID, g.Level)
		}
		switch g.ResourceKind {
		case kernel.ResChannel:
			m.setChannelGrant(g.PrincipalID, g.ResourceID, g.Level)
		case kernel.ResSpace:
			m.setSpaceGrant(g.PrincipalID, g.ResourceID, g.Level)
		default:
			return 0, fmt.Errorf("authz: snapshot grant on a %q", g.ResourceKind)
		}
	}
	return s.cache.install(m), nil
}

// install replaces the model by m unless a sound model is already further on, and tells
// OnPrincipalDisabled of every principal m has disabled that the old model had active.
func (c *cache) install(m *model) int64 {
	c.mu.Lock()
	old := c.m
	if old != nil && !c.stale && old.seq > m.seq { // Observe went past the snapshot meanwhile
		c.mu.Unlock()
		return old.seq
	}
	c.m, c.stale = m, false
	fn := c.onDisabled
	c.mu.Unlock()
	if old == nil || fn == nil {
		return m.seq
	}
	for id, p := range m.principals {
		if was := old.principals[id]; was != nil && was.known && was.active && p.known && !p.active {
			fn(id)
		}
	}
	return m.seq
}

// OnPrincipalDisabled registers fn, called with a principal's id when an observed event (or a
// Warm that replaces the cache) disables it: the gateway closes that principal's connections.
// fn runs on Observe's goroutine after the cache has changed, before Observe returns; it must not
// block. Register it before Warm.
func (s *Service) OnPrincipalDisabled(fn func(kernel.ID)) {
	s.cache.mu.Lock()
	s.cache.onDisabled = fn
	s.cache.mu.Unlock()
}

// ---- following the log ----

// Observe applies one committed event to the permission cache (it implements the gateway's
// Observer). The log tail calls it for every event, in seq order, before the hub delivers the
// event; an event at or below the cache's seq changes nothing (so a tail may hand an event twice).
// Events that do not change rights only advance the seq. It is safe to call concurrently with
// every read.
//
// When the cache cannot apply e (the cache is not warm yet, e is not the next seq, its payload
// cannot be read), Observe loads the cache again from the store, which holds e since e is
// committed: the cache then is at or past e.Seq, never behind it, and the events up to its new
// seq are skipped. Being past e decides the deliveries up to there on newer rights, which is what
// a catch-up would decide. OnObserveError hears of each such reload. While the reload fails (the
// database does not answer) the cache is stale: delivery decisions fail (closed) and REST reads
// the database, and the next Observe tries again.
func (s *Service) Observe(e kernel.LoggedEvent) {
	err := s.cache.observe(e)
	if err == nil {
		return
	}
	seq, werr := s.Warm(context.Background())
	if werr == nil && seq < e.Seq {
		werr = fmt.Errorf("the store is at seq %d, behind the event", seq)
		s.cache.markStale()
	}
	if werr != nil {
		err = fmt.Errorf("%w; loading it again failed: %w", err, werr)
	}
	s.cache.mu.RLock()
	fn := s.cache.onObserveError
	s.cache.mu.RUnlock()
	if fn != nil {
		fn(e.Seq, err)
	}
}

// rightsEvents are the event types Observe changes the model by (decodeChange): a Unit of Work
// whose transaction holds one of them pending decides from the database.
var rightsEvents = []string{EvGrantChanged.Name, evUserCreated.Name, evUserUpdated.Name,
	evAgentCreated.Name, evAgentUpdated.Name, evChannelCreated.Name, evChannelUpdated.Name}

// ObserveCommitted applies events this process has just committed, as far as they follow the
// cache directly; it never reloads: the log tail hands the same events again, and a gap (another
// node's commits) is the tail's to fill. The store's writer calls it right after COMMIT, so that
// the next batch finds the cache current and decides its units' rights from memory.
func (s *Service) ObserveCommitted(events []kernel.LoggedEvent) {
	c := s.cache
	for _, e := range events {
		c.mu.RLock()
		next := c.m != nil && !c.stale && e.Seq == c.m.seq+1
		c.mu.RUnlock()
		if !next || c.observe(e) != nil {
			return
		}
	}
}

// PayloadErrors counts the events the cache could not apply because their payload did not read
// as their type's (each is also an observe error, with its seq and type).
func (s *Service) PayloadErrors() int64 { return s.cache.payloadErrors.Load() }

// OnObserveError registers fn, told when Observe could not apply the event at seq and loaded
// the cache again (err says why, and whether loading failed too), for the log. It runs on
// Observe's goroutine.
func (s *Service) OnObserveError(fn func(seq int64, err error)) {
	s.cache.mu.Lock()
	s.cache.onObserveError = fn
	s.cache.mu.Unlock()
}

func (c *cache) markStale() {
	c.mu.Lock()
	c.stale = true
	c.mu.Unlock()
}

// observe applies e, or says why it cannot (and then marks the cache stale).
func (c *cache) observe(e kernel.LoggedEvent) error {
	ch, err := decodeChange(e) // outside the lock: readers wait only for the map writes
	c.mu.Lock()
	m := c.m
	switch {
	case m == nil:
		c.mu.Unlock()
		return fmt.Errorf("authz: the permission cache is not warm at seq %d", e.Seq)
	case c.stale:
		c.mu.Unlock()
		return fmt.Errorf("authz: the permission cache is stale at seq %d", e.Seq)
	case e.Seq <= m.seq:
		c.mu.Unlock()
		return nil
	case e.Seq != m.seq+1:
		c.stale = true
		c.mu.Unlock()
		return fmt.Errorf("authz: the permission cache is at seq %d and was handed seq %d", m.seq, e.Seq)
	case err != nil:
		c.stale = true
		c.mu.Unlock()
		if errors.As(err, new(*kernel.PayloadError)) {
			c.payloadErrors.Add(1)
		}
		return fmt.Errorf("authz: the permission cache cannot apply seq %d (%s): %w", e.Seq, e.Type, err)
	}
	disabled := ch.apply(m)
	m.seq = e.Seq
	fn := c.onDisabled
	c.mu.Unlock()
	if disabled != "" && fn != nil {
		fn(disabled)
	}
	return nil
}

// change is what one event does to the model, decoded from its payload.
type change struct {
	kind string // an event type; "" for an event that does not change rights
	id   kernel.ID
	// user.created, user.updated, agent.created, agent.updated
	status  string
	isOwner *bool
	// channel.created, channel.updated
	spaceID kernel.ID
	dm      bool
	// grant.changed: on channel id or space spaceID; level LevelNone is a revoke
	principalID kernel.ID
	level       Level
}

// The events of the modules above authz that change rights, read through views of their payloads
// (authz must not import the modules that emit them; a test holds each view to the payload type).
var (
	evUserCreated    = kernel.ViewEvent[userPayload]("user.created")
	evUserUpdated    = kernel.ViewEvent[userPayload]("user.updated")
	evAgentCreated   = kernel.ViewEvent[agentPayload]("agent.created")
	evAgentUpdated   = kernel.ViewEvent[agentPayload]("agent.updated")
	evChannelCreated = kernel.ViewEvent[channelPayload]("channel.created")
	evChannelUpdated = kernel.ViewEvent[channelPayload]("channel.updated")
)

// userPayload is what identity puts in user.created and user.updated (identity.User).
type userPayload struct {
	ID      kernel.ID `json:"id"`
	Status  string    `json:"status"`
	IsOwner *bool     `json:"is_owner"`
}

// agentPayload is what agents puts in agent.created and agent.updated (agents.Agent). It has
// no owner flag: an agent is never an owner.
type agentPayload struct {
	ID     kernel.ID `json:"id"`
	Status string    `json:"status"`
}

// channelPayload is what chat puts in channel.created and channel.updated (chat.Channel).
type channelPayload struct {
	ID      kernel.ID `json:"id"`
	SpaceID kernel.ID `json:"space_id"`
	Kind    string    `json:"kind"`
}

func decodeChange(e kernel.LoggedEvent) (change, error) {
	switch e.Type {
	case evUserCreated.Name, evUserUpdated.Name:
		p, err := kernel.DecodeOneOf(e, evUserCreated, evUserUpdated)
		if err != nil {
			return change{}, err
		}
		c := change{kind: e.Type, id: p.ID, status: p.Status, isOwner: p.IsOwner}
		if c.id.IsZero() {
			c.id = e.SubjectID
		}
		switch {
		case c.id.IsZero():
			return change{}, errors.New("no principal id")
		case c.status != "" && c.status != "active" && c.status != "disabled":
			return change{}, fmt.Errorf("status %q", c.status)
		case e.Type == evUserCreated.Name && (c.status == "" || c.isOwner == nil):
			return change{}, errors.New("user.created without status or is_owner")
		}
		return c, nil
	case evAgentCreated.Name, evAgentUpdated.Name:
		// An agent is a principal like a person, and never an owner.
		p, err := kernel.DecodeOneOf(e, evAgentCreated, evAgentUpdated)
		if err != nil {
			return change{}, err
		}
		notOwner := false
		c := change{kind: e.Type, id: p.ID, status: p.Status, isOwner: &notOwner}
		if c.id.IsZero() {
			c.id = e.SubjectID
		}
		switch {
		case c.id.IsZero():
			return change{}, errors.New("no principal id")
		case c.status != "" && c.status != "active" && c.status != "disabled":
			return change{}, fmt.Errorf("status %q", c.status)
		case e.Type == evAgentCreated.Name && c.status == "":
			return change{}, errors.New("agent.created without status")
		}
		return c, nil
	case evChannelCreated.Name, evChannelUpdated.Name:
		p, err := kernel.DecodeOneOf(e, evChannelCreated, evChannelUpdated)
		if err != nil {
			return change{}, err
		}
		c := change{kind: e.Type, id: p.ID, spaceID: p.SpaceID, dm: p.Kind == ChannelKindDM}
		if c.id.IsZero() {
			c.id = e.Scope.ChannelID
		}
		if c.spaceID.IsZero() {
			c.spaceID = e.Scope.SpaceID
		}
		if c.id.IsZero() || c.spaceID.IsZero() {
			return change{}, errors.New("no channel id or space id")
		}
		return c, nil
	case EvGrantChanged.Name:
		p, err := EvGrantChanged.Decode(e)
		if err != nil {
			return change{}, err
		}
		c := change{kind: e.Type, id: p.ChannelID, spaceID: p.SpaceID, principalID: p.PrincipalID}
		if p.PrincipalID.IsZero() || c.id.IsZero() == c.spaceID.IsZero() {
			return change{}, errors.New("grant.changed needs principal_id and one of channel_id, space_id")
		}
		if p.Level != nil {
			l, err := ParseLevel(*p.Level)
			if err != nil {
				return change{}, fmt.Errorf("level %q", *p.Level)
			}
			c.level = l
		}
		return c, nil
	}
	return change{}, nil
}

// apply changes m; it returns the id of a principal it disabled (active before, disabled now).
func (c change) apply(m *model) (disabled kernel.ID) {
	switch c.kind {
	case evUserCreated.Name, evUserUpdated.Name, evAgentCreated.Name, evAgentUpdated.Name:
		p := m.principal(c.id)
		wasActive := p.known && p.active
		if c.kind == evUserCreated.Name || c.kind == evAgentCreated.Name || !p.known {
			p.known, p.active = true, true
		}
		// user.* are people's, agent.* agents': an event names the kind of its principal.
		p.person = c.kind == evUserCreated.Name || c.kind == evUserUpdated.Name
		if c.status != "" {
			p.active = c.status == "active"
		}
		if c.isOwner != nil {
			p.owner = *c.isOwner
		}
		if wasActive && !p.active {
			return c.id
		}
	case evChannelCreated.Name, evChannelUpdated.Name:
		m.setChannel(c.id, channelInfo{space: c.spaceID, dm: c.dm})
	case EvGrantChanged.Name:
		switch {
		case !c.id.IsZero() && c.level == LevelNone:
			m.deleteChannelGrant(c.principalID, c.id)
		case !c.id.IsZero():
			m.setChannelGrant(c.principalID, c.id, c.level)
		case c.level == LevelNone:
			if p := m.principals[c.principalID]; p != nil {
				delete(p.spaces, c.spaceID)
			}
		default:
			m.setSpaceGrant(c.principalID, c.spaceID, c.level)
		}
	}
	return ""
}

// ---- deciding ----

// authorizeIfCurrent decides from the model when it is sound and at or past head (REST: see
// the package comment); decided is false otherwise and the caller reads the database.
func (c *cache) authorizeIfCurrent(ctx context.Context, head int64, actor kernel.Actor, action kernel.Action, r kernel.Resource) (decided bool, err error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.m == nil || c.stale || c.m.seq < head {
		return false, nil
	}
	return true, decide(ctx, c.m, actor, action, r)
}

// visibleIfCurrent is Visible from the model under the conditions of authorizeIfCurrent, or
// nil.
func (c *cache) visibleIfCurrent(head int64, actor kernel.Actor) kernel.Visibility {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.m == nil || c.stale || c.m.seq < head {
		return nil
	}
	return &view{c: c, id: actor.ID, owner: actor.IsOwner}
}

// Delivery is the decision point of the delivery path (the gateway's hub and its catch-up): it
// decides from the warm cache alone, never touching the database, as of the last event handed to
// Observe. It takes the principal's owner flag and status and the channel's space and kind from
// the cache, not from the caller: a principal the cache does not know, or knows disabled, is
// unauthenticated. Before the first Warm, and while the cache is stale, every decision fails
// with an internal error (closed).
type Delivery struct{ c *cache }

var (
	_ kernel.Authorizer = (*Delivery)(nil)
	_ kernel.Scoper     = (*Delivery)(nil)
)

// Delivery returns the cache-only decision point for the gateway.
func (s *Service) Delivery() *Delivery { return s.delivery }

// Authorize decides as Service.Authorize does (same rules), from the cache. The hub calls it
// for every delivery, e.g. ActMessageRead on the event's channel; r needs only the channel id
// (or the space id) and, for author rules, OwnerID. Recorded in ctx's check log like any
// decision. Errors: unauthenticated, not_found, forbidden; internal while the cache is not warm.
func (d *Delivery) Authorize(ctx context.Context, actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
	kernel.RecordCheck(ctx, action)
	d.c.mu.RLock()
	defer d.c.mu.RUnlock()
	m := d.c.m
	if m == nil || d.c.stale {
		return errCold
	}
	return decide(ctx, m, m.actor(actor), action, m.resource(r))
}

// Visible returns what actor may read, from the cache (kernel.Scoper). The answer is live: it
// follows Observe, so a connection may keep it, and it reads nothing (false everywhere) once
// the principal is disabled or while the cache is stale. Errors: unauthenticated (the cache does
// not know the principal or knows it disabled); internal while the cache is not warm.
func (d *Delivery) Visible(ctx context.Context, actor kernel.Actor, action kernel.Action) (kernel.Visibility, error) {
	kernel.RecordCheck(ctx, action)
	d.c.mu.RLock()
	defer d.c.mu.RUnlock()
	m := d.c.m
	if m == nil || d.c.stale {
		return nil, errCold
	}
	if !m.actor(actor).Authenticated() {
		return nil, errUnauthenticated
	}
	return &view{c: d.c, id: actor.ID, delivery: true}, nil
}

// Disabled reports whether the cache knows principal id as disabled.
func (d *Delivery) Disabled(id kernel.ID) bool {
	d.c.mu.RLock()
	defer d.c.mu.RUnlock()
	if d.c.m == nil {
		return false
	}
	p := d.c.m.principals[id]
	return p != nil && p.known && !p.active
}

// Seq returns the seq the cache is current at, and whether it is warm and sound (warm false
// before the first Warm and while stale).
func (d *Delivery) Seq() (seq int64, warm bool) {
	d.c.mu.RLock()
	defer d.c.mu.RUnlock()
	if d.c.m == nil {
		return 0, false
	}
	return d.c.m.seq, !d.c.stale
}

// view is a kernel.Visibility read from the cache at each call.
type view struct {
	c  *cache
	id kernel.ID
	// owner is the actor's flag on the REST path; on the delivery path (delivery true) the
	// owner flag and the status come from the model at each call, and a stale model shows
	// nothing.
	owner    bool
	delivery bool
}

// who returns whether the principal counts as an owner, its state (nil without grants) and
// whether it may see anything at all. The caller holds the lock.
func (v *view) who() (owner bool, p *principalState, ok bool) {
	m := v.c.m
	if m == nil {
		return false, nil, false
	}
	p = m.principals[v.id]
	if !v.delivery {
		return v.owner, p, true
	}
	if v.c.stale || p == nil || !p.known || !p.active {
		return false, nil, false
	}
	return p.owner, p, true
}

func (v *view) All() bool {
	v.c.mu.RLock()
	defer v.c.mu.RUnlock()
	owner, _, ok := v.who()
	return ok && owner
}

func (v *view) Space(id kernel.ID) bool {
	v.c.mu.RLock()
	defer v.c.mu.RUnlock()
	owner, p, ok := v.who()
	switch {
	case !ok:
		return false
	case owner:
		return true
	}
	return p != nil && (p.spaces[id] > LevelNone || p.reach[id] > 0)
}

func (v *view) Channel(id kernel.ID) bool {
	v.c.mu.RLock()
	defer v.c.mu.RUnlock()
	owner, p, ok := v.who()
	if !ok {
		return false
	}
	var own Level
	if p != nil {
		own = p.channels[id].level
	}
	ch, known := v.c.m.channels[id]
	switch {
	case owner: // everything but the DMs it holds no grant on
		return !known || !ch.dm || own > LevelNone
	case own > LevelNone:
		return true
	}
	return known && !ch.dm && p != nil && p.spaces[ch.space] > LevelNone
}
