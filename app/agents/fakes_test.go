package agents_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
)

// The kernel fakes are shared with the other modules' tests.
type (
	fakeTx    = kerneltest.Tx
	fakeAuthz = kerneltest.Authz
)

// errOutsideUnit is what the fakes answer a write made outside a Unit of Work.
var errOutsideUnit = errors.New("write outside a unit of work")

// fakeStore keeps the agents rows in a map; it joins them with the principals of a
// fakePrincipals, as the store joins the two tables.
type fakeStore struct {
	mu         sync.Mutex
	rows       map[kernel.ID]agents.Agent // description, created_by and created_at only
	principals *fakePrincipals
	// consumers are the agents whose consumer got its cursor (StartConsumer).
	consumers map[kernel.ID]bool
	// Fail makes CreateAgent fail.
	Fail error
}

var _ agents.Store = (*fakeStore)(nil)

func (f *fakeStore) CreateAgent(ctx context.Context, a agents.Agent) error {
	if !kerneltest.InUnit(ctx) {
		return errOutsideUnit
	}
	if f.Fail != nil {
		return f.Fail
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dup := f.rows[a.ID]; dup {
		return kernel.Errorf(kernel.CodeConflict, "agent already exists")
	}
	f.rows[a.ID] = agents.Agent{ID: a.ID, Description: a.Description, CreatedBy: a.CreatedBy, CreatedAt: a.CreatedAt}
	return nil
}

func (f *fakeStore) StartConsumer(ctx context.Context, id kernel.ID) error {
	if !kerneltest.InUnit(ctx) {
		return errOutsideUnit
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.consumers == nil {
		f.consumers = map[kernel.ID]bool{}
	}
	if f.consumers[id] {
		return kernel.Errorf(kernel.CodeConflict, "the agent's consumer has a cursor already")
	}
	f.consumers[id] = true
	return nil
}

func (f *fakeStore) Agent(ctx context.Context, id kernel.ID) (agents.Agent, error) {
	f.mu.Lock()
	row, ok := f.rows[id]
	f.mu.Unlock()
	if !ok {
		return agents.Agent{}, kernel.ErrNotFound
	}
	u, ok := f.principals.get(id)
	if !ok {
		return agents.Agent{}, kernel.ErrNotFound
	}
	return agents.Agent{ID: u.ID, Kind: u.Kind, Handle: u.Handle, DisplayName: u.DisplayName, Description: row.Description,
		Status: u.Status, CreatedAt: u.CreatedAt, CreatedBy: row.CreatedBy, UpdatedAt: u.UpdatedAt, DisabledAt: u.DisabledAt}, nil
}

func (f *fakeStore) Agents(ctx context.Context, p chat.Page) ([]agents.Agent, bool, error) {
	f.mu.Lock()
	var ids []kernel.ID
	for id := range f.rows {
		if (p.After.IsZero() || id > p.After) && (p.Before.IsZero() || id < p.Before) {
			ids = append(ids, id)
		}
	}
	f.mu.Unlock()
	slices.Sort(ids)
	more := len(ids) > p.Limit
	if more && !p.After.IsZero() {
		ids = ids[:p.Limit]
	} else if more {
		ids = ids[len(ids)-p.Limit:]
	}
	out := []agents.Agent{}
	for _, id := range ids {
		a, err := f.Agent(ctx, id)
		if err != nil {
			return nil, false, err
		}
		out = append(out, a)
	}
	return out, more, nil
}

// fakePrincipals is identity's side: principals by id, handles taken, tokens made.
type fakePrincipals struct {
	mu      sync.Mutex
	users   map[kernel.ID]identity.User
	handles map[string]bool
	tokens  map[kernel.ID]string // agent → token value
	clock   kernel.Clock
}

var _ agents.Principals = (*fakePrincipals)(nil)

func (f *fakePrincipals) get(id kernel.ID) (identity.User, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[id]
	return u, ok
}

func (f *fakePrincipals) CreateAgentPrincipal(ctx context.Context, handle, displayName string) (identity.User, string, error) {
	if !kerneltest.InUnit(ctx) {
		return identity.User{}, "", errOutsideUnit
	}
	if err := identity.ValidateHandle(handle); err != nil {
		return identity.User{}, "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.handles[identity.HandleKey(handle)] {
		return identity.User{}, "", &kernel.Error{Code: kernel.CodeConflict, Field: "handle", Message: "this handle is taken"}
	}
	now := f.clock.Now()
	u := identity.User{ID: kernel.NewID(), Kind: kernel.KindAgent, Handle: handle, DisplayName: displayName,
		Status: identity.StatusActive, CreatedAt: now, UpdatedAt: now}
	f.users[u.ID], f.handles[identity.HandleKey(handle)] = u, true
	f.tokens[u.ID] = identity.APITokenPrefix + "secret-" + string(u.ID)
	return u, f.tokens[u.ID], nil
}

func (f *fakePrincipals) ResetAgentToken(ctx context.Context, actorID, id kernel.ID) (string, error) {
	if !kerneltest.InUnit(ctx) {
		return "", errOutsideUnit
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if u, ok := f.users[id]; !ok || u.Kind != kernel.KindAgent {
		return "", kernel.ErrNotFound
	}
	f.tokens[id] = identity.APITokenPrefix + "reset-" + string(kernel.NewID())
	return f.tokens[id], nil
}

func (f *fakePrincipals) SetAgentStatus(ctx context.Context, id kernel.ID, status string) (identity.User, error) {
	if !kerneltest.InUnit(ctx) {
		return identity.User{}, errOutsideUnit
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[id]
	if !ok || u.Kind != kernel.KindAgent {
		return identity.User{}, kernel.ErrNotFound
	}
	now := f.clock.Now()
	u.Status, u.UpdatedAt, u.DisabledAt = status, now, nil
	if status == identity.StatusDisabled {
		u.DisabledAt = &now
	}
	f.users[id] = u
	return u, nil
}

// fixture is the service over fakes.
type fixture struct {
	svc        *agents.Service
	store      *fakeStore
	principals *fakePrincipals
	tx         *fakeTx
	authz      *fakeAuthz
	bus        *kernel.TxBus
	clock      *kernel.ManualClock
	// disabled are the AgentDisabled events the bus delivered.
	disabled []kernel.ID
}

func mustAgents(tb testing.TB) *fixture {
	tb.Helper()
	clock := kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p := &fakePrincipals{users: map[kernel.ID]identity.User{}, handles: map[string]bool{}, tokens: map[kernel.ID]string{}, clock: clock}
	f := &fixture{store: &fakeStore{rows: map[kernel.ID]agents.Agent{}, principals: p}, principals: p, tx: &fakeTx{},
		authz: &fakeAuthz{}, bus: kernel.NewTxBus(), clock: clock}
	kernel.Subscribe(f.bus, "test", func(ctx context.Context, ev agents.AgentDisabled) error {
		if !kerneltest.InUnit(ctx) {
			return errOutsideUnit
		}
		f.disabled = append(f.disabled, ev.AgentID)
		return nil
	})
	f.bus.Seal()
	f.svc = agents.New(agents.Deps{Store: f.store, Principals: p, UoW: f.tx, Events: f.tx, Authz: f.authz, Bus: f.bus})
	return f
}

// mustCreate creates an agent as the owner.
func (f *fixture) mustCreate(tb testing.TB, handle string) (agents.Agent, string) {
	tb.Helper()
	a, token, err := f.svc.Create(context.Background(), owner, agents.NewAgent{Handle: handle, DisplayName: "Agent " + handle})
	if err != nil {
		tb.Fatal(err)
	}
	return a, token
}
