package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
)

// hub fans each logged event out to the connections that may receive it. It indexes
// connections by principal (members), by channel (a cache of the members that may read a channel,
// built on a channel's first event and kept up to date as members come and go and their rights
// change) and by focused thread. For each delivery it asks the Authorizer with the recipient's
// receive action; the index only narrows who is asked.
//
// Dispatch is called by the tail alone, in seq order; attach, detach and the ephemeral paths come
// from the connections' goroutines. The hub never blocks on a connection.
type hub struct {
	authz     kernel.Authorizer
	scoper    kernel.Scoper
	structure Structure
	log       *slog.Logger

	// payloadErrors counts the logged events whose payload could not be read as their type's
	// (Stats.PayloadErrors); such an event is still delivered, its effect on the index is not had.
	payloadErrors atomic.Int64

	mu        sync.Mutex
	pos       int64  // the seq of the last event handed to the connections
	rightsGen uint64 // advanced by every event that may change what a principal reaches
	members   map[kernel.ID]*member
	disabled  map[kernel.ID]bool // principals disabled while this process ran
	chans     map[kernel.ID]*chanEntry
	focused   map[kernel.ID]map[*conn]struct{}

	// Used by the tail's goroutine only.
	kinds   map[kernel.ID]string // channel id → kind ("dm" or "channel"); kinds never change
	targets []target

	recent *recent // the frames of the last events handed out, for catch-ups; nil: none
	// prepare rewrites an agent's own agent.invocation before it is offered (Deps.Preparer).
	prepare Preparer
}

// member is a principal with identified connections.
type member struct {
	actor kernel.Actor      // the principal as the log last told (IsOwner follows user.updated)
	vis   kernel.Visibility // what it may read, the index's view; Authorize decides
	conns []*conn           // replaced, never changed in place: a snapshot stays valid
}

// reaches reports whether m may read something of channel ch in space sp, as far as the index
// knows: a superset of what Authorize allows.
func (m *member) reaches(ch, sp kernel.ID) bool {
	return m.vis == nil || m.vis.All() || m.vis.Channel(ch) || (!sp.IsZero() && m.vis.Space(sp))
}

type chanEntry struct {
	space   kernel.ID
	members map[*member]struct{}
}

type target struct {
	actor kernel.Actor
	conns []*conn
}

func newHub(az kernel.Authorizer, sc kernel.Scoper, st Structure, log *slog.Logger, pos int64) *hub {
	return &hub{authz: az, scoper: sc, structure: st, log: log, pos: pos,
		members: map[kernel.ID]*member{}, disabled: map[kernel.ID]bool{}, chans: map[kernel.ID]*chanEntry{}, focused: map[kernel.ID]map[*conn]struct{}{},
		kinds: map[kernel.ID]string{}}
}

// Position is the seq of the last event the hub has handed out.
func (h *hub) Position() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pos
}

// waitPosition waits until the hub has passed seq, or ctx ends.
func (h *hub) waitPosition(ctx context.Context, seq int64) error {
	wait := 100 * time.Microsecond
	for h.Position() < seq {
		select {
		case <-ctx.Done():
			return fmt.Errorf("gateway: the hub is at %d, behind %d: %w", h.Position(), seq, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Millisecond)
	}
	return nil
}

func (h *hub) rightsGeneration() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rightsGen
}

// attach registers c, whose principal reaches vis (computed when the generation of rights was
// gen), and returns the hub's position P: every event after P reaches c through offer, every
// event up to P is in the log. When rights changed since vis was computed, it computes again.
func (h *hub) attach(ctx context.Context, c *conn, a kernel.Actor, vis kernel.Visibility, gen uint64) (int64, error) {
	for {
		h.mu.Lock()
		if h.rightsGen == gen {
			break
		}
		gen = h.rightsGen
		h.mu.Unlock()
		var err error
		if vis, err = h.scoper.Visible(ctx, a, catchup.ActEventsCatchUp); err != nil {
			return 0, err
		}
	}
	defer h.mu.Unlock()
	if h.disabled[a.ID] {
		// Authenticated just before the person was disabled; the log has said so since.
		return 0, errDisabled
	}
	c.mu.Lock()
	ended := c.endedLocked()
	c.mu.Unlock()
	if ended {
		// Its reader ended, and detach ran or waits for h.mu: registered now, c would stay.
		return 0, errConnEnded
	}
	m := h.members[a.ID]
	if m == nil {
		m = &member{actor: a, vis: vis}
		h.members[a.ID] = m
		for ch, e := range h.chans {
			if m.reaches(ch, e.space) {
				e.members[m] = struct{}{}
			}
		}
	}
	m.conns = append(slices.Clip(m.conns), c)
	return h.pos, nil
}

var (
	errDisabled  = &kernel.Error{Code: kernel.CodeUnauthenticated, Message: "the principal is disabled"}
	errConnEnded = errors.New("gateway: the connection ended before it registered")
)

// repin empties c's held events and returns the current position: the catch-up replays up to it
// and the hub holds what comes after.
func (h *hub) repin(c *conn) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.mu.Lock()
	c.buf, c.overflow = nil, false
	c.mu.Unlock()
	return h.pos
}

// detach removes c; a principal without connections leaves the index.
func (h *hub) detach(c *conn) {
	c.mu.Lock()
	a := c.actor
	c.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unfocusLocked(c)
	m := h.members[a.ID]
	if m == nil {
		return
	}
	i := slices.Index(m.conns, c)
	if i < 0 {
		return
	}
	m.conns = slices.Delete(slices.Clone(m.conns), i, i+1)
	if len(m.conns) == 0 {
		h.removeMemberLocked(a.ID, m)
	}
}

func (h *hub) removeMemberLocked(id kernel.ID, m *member) {
	delete(h.members, id)
	for _, e := range h.chans {
		delete(e.members, m)
	}
}

// setFocus indexes c under the thread it looks at (NilID: none).
func (h *hub) setFocus(c *conn, thread kernel.ID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unfocusLocked(c)
	if thread.IsZero() {
		return
	}
	set := h.focused[thread]
	if set == nil {
		set = map[*conn]struct{}{}
		h.focused[thread] = set
	}
	set[c] = struct{}{}
	c.mu.Lock()
	c.focusThread = thread
	c.mu.Unlock()
}

func (h *hub) unfocusLocked(c *conn) {
	c.mu.Lock()
	old := c.focusThread
	c.focusThread = kernel.NilID
	c.mu.Unlock()
	if set := h.focused[old]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(h.focused, old)
		}
	}
}

// focusedBy reports whether a connection of principal is focused on thread.
func (h *hub) focusedBy(principal, thread kernel.ID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.focused[thread] {
		c.mu.Lock()
		id := c.actor.ID
		c.mu.Unlock()
		if id == principal {
			return true
		}
	}
	return false
}

// Focused returns the connections focused on thread (for run updates, later).
func (h *hub) focusedOn(thread kernel.ID) []*conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*conn, 0, len(h.focused[thread]))
	for c := range h.focused[thread] {
		out = append(out, c)
	}
	return out
}

// delivery is how an event reaches its recipients.
type delivery int

const (
	toAuthorized delivery = iota // channel and space events: Authorize(recipient, action, resource)
	toPrincipal                  // personal events: their principal's connections only
	toPeople                     // instance-wide events (user.*, agent.*): every person
)

// Dispatch hands e to every connection whose principal may receive it now. It first learns what
// e changes in the index (a grant, an owner flag: the principal's reach is computed again); an
// error there is returned before anything is delivered, so the tail may call Dispatch with the
// same event again. After that nothing fails: a recipient whose check fails with an internal
// error is closed with 4000 (it resumes and the catch-up decides again), never skipped. A payload
// that does not read as its type's is logged and counted (payloadError); its event is delivered.
func (h *hub) Dispatch(ctx context.Context, e kernel.LoggedEvent) error {
	how, action, res, err := h.route(ctx, e)
	if err != nil {
		return err
	}
	var closeAll []*conn // connections that must end with this event
	var closeCode CloseCode
	switch e.Type {
	case authz.EvGrantChanged.Name:
		if p, err := authz.EvGrantChanged.Decode(e); err != nil {
			h.payloadError(err)
		} else if !p.PrincipalID.IsZero() {
			if err := h.refresh(ctx, p.PrincipalID, nil); err != nil {
				return err
			}
		}
	case identity.EvUserUpdated.Name, agents.EvAgentUpdated.Name:
		// A person or an agent disabled, enabled, or (a person) made owner or not: an agent is
		// never an owner.
		var status string
		var isOwner bool
		if e.Type == identity.EvUserUpdated.Name {
			u, err := identity.EvUserUpdated.Decode(e)
			if err != nil {
				h.payloadError(err)
				break
			}
			status, isOwner = u.Status, u.IsOwner
		} else {
			a, err := agents.EvAgentUpdated.Decode(e)
			if err != nil {
				h.payloadError(err)
				break
			}
			status = a.Status
		}
		if status == identity.StatusDisabled {
			closeAll, closeCode = h.expel(e.SubjectID), CloseAuthFailed
		} else {
			h.enable(e.SubjectID)
			if err := h.refresh(ctx, e.SubjectID, &isOwner); err != nil {
				return err
			}
		}
	}

	frame := EventFrame(e)
	h.recent.add(e, frame)
	h.mu.Lock()
	h.targets = h.candidatesLocked(h.targets[:0], how, e.Scope)
	h.pos = e.Seq
	h.mu.Unlock()

	for _, c := range closeAll {
		c.closeWith(closeCode, "")
	}
	for i, t := range h.targets {
		if how == toAuthorized {
			if err := h.authz.Authorize(ctx, t.actor, action, res); err != nil {
				switch kernel.CodeOf(err) {
				case kernel.CodeNotFound, kernel.CodeForbidden, kernel.CodeUnauthenticated:
				default:
					h.log.Error("gateway: authorize a delivery", "seq", e.Seq, "principal", t.actor.ID, "err", err)
					for _, c := range t.conns {
						c.closeWith(CloseUnknownError, "")
					}
				}
				h.targets[i] = target{}
				continue
			}
		}
		if needsPrepare(h.prepare, t.actor, e.Type, e.Scope) {
			// The Preparer reads the run and signs a token: the connection does it on its own
			// goroutine, so that no other delivery waits for it.
			for _, c := range t.conns {
				c.offerUnprepared(e)
			}
			h.targets[i] = target{}
			continue
		}
		for _, c := range t.conns {
			c.offer(e.Seq, frame)
		}
		h.targets[i] = target{}
	}
	switch e.Type {
	case identity.EvSessionRevoked.Name:
		h.endCredential(e.Scope.PrincipalID, e.SubjectID, "logged out", func(a kernel.Actor) kernel.ID { return a.SessionID })
	case identity.EvTokenRevoked.Name:
		h.endCredential(e.Scope.PrincipalID, e.SubjectID, "token revoked", func(a kernel.Actor) kernel.ID { return a.TokenID })
	}
	return nil
}

// payloadError logs and counts an event whose payload cannot be read as its type's (err is a
// kernel.PayloadError, which names the seq and the type).
func (h *hub) payloadError(err error) {
	h.payloadErrors.Add(1)
	var pe *kernel.PayloadError
	if errors.As(err, &pe) {
		h.log.Error("gateway: an event's payload cannot be read", "seq", pe.Seq, "type", pe.Type, "err", pe.Err)
		return
	}
	h.log.Error("gateway: an event's payload cannot be read", "err", err)
}

// route says how e is delivered and, for channel and space events, with which receive action on
// which resource. A channel's kind is learned from channel.created or read once.
func (h *hub) route(ctx context.Context, e kernel.LoggedEvent) (delivery, kernel.Action, kernel.Resource, error) {
	sc := e.Scope
	switch {
	case !sc.PrincipalID.IsZero():
		return toPrincipal, "", kernel.Resource{}, nil
	case !sc.ChannelID.IsZero():
		kind, ok := h.kinds[sc.ChannelID]
		if !ok {
			if e.Type == chat.EvChannelCreated.Name {
				if ch, err := chat.EvChannelCreated.Decode(e); err != nil {
					h.payloadError(err) // the channel is read below instead
				} else {
					kind = ch.Kind
				}
			}
			if kind == "" {
				ch, err := h.structure.Channel(ctx, sc.ChannelID)
				if err != nil {
					return 0, "", kernel.Resource{}, fmt.Errorf("gateway: the channel of event %d: %w", e.Seq, err)
				}
				kind = ch.Kind
			}
			h.kinds[sc.ChannelID] = kind
		}
		return toAuthorized, chat.ActChannelRead, kernel.Resource{Kind: kernel.ResChannel, ID: sc.ChannelID,
			SpaceID: sc.SpaceID, ChannelID: sc.ChannelID, ChannelKind: kind}, nil
	case !sc.SpaceID.IsZero():
		return toAuthorized, chat.ActSpaceRead, kernel.Resource{Kind: kernel.ResSpace, ID: sc.SpaceID, SpaceID: sc.SpaceID}, nil
	default:
		return toPeople, "", kernel.Resource{}, nil
	}
}

// candidatesLocked appends to dst the members an event of scope sc may reach, with a snapshot of
// their connections.
func (h *hub) candidatesLocked(dst []target, how delivery, sc kernel.Scope) []target {
	add := func(m *member) {
		if len(m.conns) > 0 {
			dst = append(dst, target{m.actor, m.conns})
		}
	}
	switch {
	case how == toPrincipal:
		if m := h.members[sc.PrincipalID]; m != nil {
			add(m)
		}
	case how == toPeople:
		for _, m := range h.members {
			if m.actor.Kind == kernel.KindPerson {
				add(m)
			}
		}
	case !sc.ChannelID.IsZero():
		for m := range h.channelLocked(sc.ChannelID, sc.SpaceID).members {
			add(m)
		}
	default:
		for _, m := range h.members {
			if m.vis == nil || m.vis.All() || m.vis.Space(sc.SpaceID) {
				add(m)
			}
		}
	}
	return dst
}

// channelLocked returns the index entry of channel ch, building it on first use.
func (h *hub) channelLocked(ch, sp kernel.ID) *chanEntry {
	e := h.chans[ch]
	if e == nil {
		e = &chanEntry{space: sp, members: map[*member]struct{}{}}
		for _, m := range h.members {
			if m.reaches(ch, sp) {
				e.members[m] = struct{}{}
			}
		}
		h.chans[ch] = e
	}
	return e
}

// refresh computes again what principal id reaches, after a change of its rights (and of its
// owner flag, when isOwner is set). A principal that is not connected only advances the
// generation, so that a connection registering meanwhile computes its reach again.
func (h *hub) refresh(ctx context.Context, id kernel.ID, isOwner *bool) error {
	h.mu.Lock()
	h.rightsGen++
	m := h.members[id]
	var a kernel.Actor
	if m != nil {
		a = m.actor
	}
	h.mu.Unlock()
	if m == nil {
		return nil
	}
	if isOwner != nil {
		a.IsOwner = *isOwner
	}
	vis, err := h.scoper.Visible(ctx, a, catchup.ActEventsCatchUp)
	if err != nil {
		return fmt.Errorf("gateway: visibility of %s: %w", id, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.members[id] != m {
		return nil // it left meanwhile; a new member computed its own
	}
	m.actor, m.vis = a, vis
	for ch, e := range h.chans {
		if m.reaches(ch, e.space) {
			e.members[m] = struct{}{}
		} else {
			delete(e.members, m)
		}
	}
	return nil
}

// expel removes a principal from the hub (it was disabled) and returns its connections.
func (h *hub) expel(id kernel.ID) []*conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rightsGen++
	h.disabled[id] = true
	m := h.members[id]
	if m == nil {
		return nil
	}
	h.removeMemberLocked(id, m)
	return m.conns
}

// enable forgets that a principal was disabled (it is active again).
func (h *hub) enable(id kernel.ID) {
	h.mu.Lock()
	delete(h.disabled, id)
	h.mu.Unlock()
}

// endCredential closes with 4004 the connections of principal that came with credential id (a
// login session that was logged out, an API token that was revoked); of names the actor's
// credential of that kind.
func (h *hub) endCredential(principal, id kernel.ID, reason string, of func(kernel.Actor) kernel.ID) {
	if id.IsZero() {
		return
	}
	h.mu.Lock()
	var conns []*conn
	if m := h.members[principal]; m != nil {
		conns = m.conns
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		match := of(c.actor) == id
		c.mu.Unlock()
		if match {
			c.closeWith(CloseAuthFailed, reason)
		}
	}
}

// typing sends typing.started for thread th from principal from to the others who may read it.
func (h *hub) typing(ctx context.Context, th chat.Thread, from kernel.ID) {
	frame := typingFrame(th.ID, from)
	h.mu.Lock()
	targets := h.candidatesLocked(nil, toAuthorized, th.Scope())
	h.mu.Unlock()
	res := th.Resource()
	for _, t := range targets {
		if t.actor.ID == from || h.authz.Authorize(ctx, t.actor, chat.ActThreadRead, res) != nil {
			continue
		}
		for _, c := range t.conns {
			c.offerEphemeral(frame)
		}
	}
}
