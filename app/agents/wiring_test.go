package agents_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// store is the real agents repository; createAgent, when set, answers CreateAgent instead.
type store struct {
	*storage.AgentStore
	createAgent func(ctx context.Context, a agents.Agent) error
}

func (s *store) CreateAgent(ctx context.Context, a agents.Agent) error {
	if s.createAgent != nil {
		return s.createAgent(ctx, a)
	}
	return s.AgentStore.CreateAgent(ctx, a)
}

// noHasher refuses: the agents' principals have no password.
type noHasher struct{}

func (noHasher) Hash(string) (string, error)         { return "", errors.New("no passwords here") }
func (noHasher) Verify(string, string) (bool, error) { return false, errors.New("no passwords here") }
func (noHasher) NeedsRehash(string) bool             { return false }

// fixture is the service on a real store (SQLite in a temp dir), identity's service for the
// principals, and the owner and the person as principals.
type fixture struct {
	svc   *agents.Service
	db    *storage.DB
	store *store
	ident *identity.Service
	authz *kerneltest.Authz
	clock *kernel.ManualClock

	mu sync.Mutex
	// disabled are the AgentDisabled events the bus delivered, inside the unit.
	disabled []kernel.ID
}

func mustAgents(tb testing.TB) *fixture {
	tb.Helper()
	clock := kernel.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := storetest.Open(tb, storage.Options{Clock: clock})
	storetest.Principal(tb, db, owner)
	storetest.Principal(tb, db, person)
	f := &fixture{db: db, store: &store{AgentStore: storage.NewAgentStore(db)}, authz: &kerneltest.Authz{}, clock: clock}
	f.ident = identity.New(identity.Deps{Store: storage.NewIdentityStore(db), UoW: db, Events: db, Authz: f.authz,
		Hasher: noHasher{}, Clock: clock}, identity.DefaultConfig())
	bus := kernel.NewTxBus()
	kernel.Subscribe(bus, "test", func(ctx context.Context, ev agents.AgentDisabled) error {
		if !storetest.InUnit(ctx, db) {
			return errors.New("AgentDisabled delivered outside the unit of work")
		}
		f.mu.Lock()
		f.disabled = append(f.disabled, ev.AgentID)
		f.mu.Unlock()
		return nil
	})
	bus.Seal()
	f.svc = f.service(bus)
	return f
}

// service returns a service on the fixture's store with bus.
func (f *fixture) service(bus *kernel.TxBus) *agents.Service {
	return agents.New(agents.Deps{Store: f.store, Principals: f.ident, UoW: f.db, Events: f.db, Authz: f.authz, Bus: bus})
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

// events returns the log.
func (f *fixture) events(tb testing.TB) []kernel.LoggedEvent { return storetest.Log(tb, f.db) }

// agents returns every stored agent.
func (f *fixture) agents(tb testing.TB) []agents.Agent {
	tb.Helper()
	as, _, err := f.store.Agents(context.Background(), chat.Page{Limit: 200})
	if err != nil {
		tb.Fatal(err)
	}
	return as
}

// handleTaken reports whether a principal (a person or an agent) has handle.
func (f *fixture) handleTaken(tb testing.TB, handle string) bool {
	tb.Helper()
	ids, err := storage.NewMessageStore(f.db).ResolveHandles(context.Background(), []string{identity.HandleKey(handle)})
	if err != nil {
		tb.Fatal(err)
	}
	return len(ids) > 0
}

// principal returns the principal id as stored.
func (f *fixture) principal(tb testing.TB, id kernel.ID) identity.User {
	tb.Helper()
	u, err := storage.NewIdentityStore(f.db).Principal(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// tokenOf returns whose principal token authenticates, or "" when it does not.
func (f *fixture) tokenOf(tb testing.TB, token string) kernel.ID {
	tb.Helper()
	a, err := f.ident.Authenticate(context.Background(), token)
	if kernel.IsCode(err, kernel.CodeUnauthenticated) {
		return ""
	}
	if err != nil {
		tb.Fatal(err)
	}
	return a.ID
}

// consumerStarted reports whether the agent's consumer has its cursor.
func (f *fixture) consumerStarted(tb testing.TB, id kernel.ID) bool {
	tb.Helper()
	_, ok, err := storage.NewConsumerStore(f.db).AckedSeq(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return ok
}
