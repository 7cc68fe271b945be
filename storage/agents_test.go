package storage_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// agentEnv is the identity environment with the agents service on the same store.
type agentEnv struct {
	*idEnv
	agents *storage.AgentStore
	svc    *agents.Service
	olga   kernel.Actor // the owner
}

func newAgentEnv(t *testing.T, eng storetest.Engine) *agentEnv {
	t.Helper()
	e := &agentEnv{idEnv: newIDEnv(t, eng, identity.DefaultConfig())}
	az := storage.NewAuthzStore(e.db)
	e.agents = storage.NewAgentStore(e.db)
	e.svc = agents.New(agents.Deps{Store: e.agents, Principals: e.id, UoW: e.db, Events: e.db, Authz: authz.New(authz.Deps{Store: az, Structure: az, UoW: e.db, Events: e.db, Clock: e.clock})})
	e.olga = e.owner(t)
	return e
}

func (e *agentEnv) create(t *testing.T, handle string) (agents.Agent, string) {
	t.Helper()
	a, token, err := e.svc.Create(bg, e.olga, agents.NewAgent{Handle: handle, DisplayName: "Agent " + handle, Description: "does " + handle})
	if err != nil {
		t.Fatal(err)
	}
	return a, token
}

func (e *agentEnv) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := storage.ScanIn(bg, e.db, `SELECT COUNT(*) FROM `+table, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAgentStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, eng storetest.Engine) {
		e := newAgentEnv(t, eng)

		t.Run("creates the principal, its token, the agents row and agent.created in one commit", func(t *testing.T) {
			before := len(e.events(t))
			a, token := e.create(t, "echo")
			got, err := e.agents.Agent(bg, a.ID)
			if err != nil || got.Handle != "echo" || got.Kind != kernel.KindAgent || got.Description != "does echo" ||
				got.CreatedBy != e.olga.ID || !got.CreatedAt.Equal(a.CreatedAt) || !got.UpdatedAt.Equal(a.UpdatedAt) ||
				got.Status != agents.StatusActive || got.DisabledAt != nil {
				t.Fatalf("read back %+v (%v), created %+v", got, err, a)
			}
			if jsonOf(t, got) != jsonOf(t, a) {
				t.Fatalf("the answer %s differs from the stored agent %s", jsonOf(t, a), jsonOf(t, got))
			}
			actor, err := e.id.Authenticate(bg, token)
			if err != nil || actor.ID != a.ID || actor.Kind != kernel.KindAgent || actor.IsOwner || actor.TokenID.IsZero() {
				t.Fatalf("the token authenticates as %+v (%v)", actor, err)
			}
			if !strings.HasPrefix(token, identity.APITokenPrefix) {
				t.Fatalf("token %q", token)
			}
			evs := e.events(t)[before:]
			if len(evs) != 1 || evs[0].Type != agents.EvAgentCreated.Name || evs[0].SubjectID != a.ID || evs[0].ActorID != e.olga.ID ||
				evs[0].Scope != (kernel.Scope{}) {
				t.Fatalf("events %+v", evs)
			}
			if strings.Contains(string(evs[0].Payload), token) || strings.Contains(string(evs[0].Payload), "token") {
				t.Fatalf("agent.created holds the token: %s", evs[0].Payload)
			}
			var tokenRows int
			if err := storage.ScanIn(bg, e.db, `SELECT COUNT(*) FROM api_tokens WHERE principal_id = ? AND token_hash <> ?`, &tokenRows,
				string(a.ID), token); err != nil || tokenRows != 1 {
				t.Fatalf("%d tokens stored by digest (%v)", tokenRows, err)
			}
		})

		t.Run("a handle a person or an agent holds, in any case, is a conflict that leaves nothing behind", func(t *testing.T) {
			principals, rows, events := e.count(t, "principals"), e.count(t, "agents"), len(e.events(t))
			for _, h := range []string{"OLGA", "Echo"} {
				_, token, err := e.svc.Create(bg, e.olga, agents.NewAgent{Handle: h, DisplayName: "Copycat"})
				if ke := wantCode(t, err, kernel.CodeConflict); ke.Field != "handle" || token != "" {
					t.Fatalf("%s: %+v, token %q", h, ke, token)
				}
			}
			if e.count(t, "principals") != principals || e.count(t, "agents") != rows || len(e.events(t)) != events ||
				e.count(t, "api_tokens") != rows {
				t.Fatal("a refused create left rows or events behind")
			}
		})

		t.Run("an agents row needs a principal and is one per principal", func(t *testing.T) {
			err := e.db.Do(bg, func(ctx context.Context) error {
				return e.agents.CreateAgent(ctx, agents.Agent{ID: kernel.NewID(), CreatedBy: e.olga.ID, CreatedAt: e.clock.Now()})
			})
			if err == nil {
				t.Fatal("an agent without a principal was stored")
			}
			a, _ := e.create(t, "twice")
			err = e.db.Do(bg, func(ctx context.Context) error { return e.agents.CreateAgent(ctx, a) })
			wantCode(t, err, kernel.CodeConflict)
		})

		t.Run("a person's id is not an agent", func(t *testing.T) {
			_, err := e.agents.Agent(bg, e.olga.ID)
			wantCode(t, err, kernel.CodeNotFound)
			_, err = e.agents.Agent(bg, kernel.NewID())
			wantCode(t, err, kernel.CodeNotFound)
		})

		t.Run("lists keyset pages in id order", func(t *testing.T) {
			all, more, err := e.agents.Agents(bg, chat.Page{Limit: 200})
			if err != nil || more {
				t.Fatal(err, more)
			}
			for i := 1; i < len(all); i++ {
				if all[i].ID <= all[i-1].ID {
					t.Fatalf("out of order: %v", all)
				}
			}
			if len(all) < 3 {
				e.create(t, "third")
				all, _, _ = e.agents.Agents(bg, chat.Page{Limit: 200})
			}
			newest, more, err := e.agents.Agents(bg, chat.Page{Limit: 2})
			if err != nil || !more || len(newest) != 2 || newest[1].ID != all[len(all)-1].ID || newest[0].ID != all[len(all)-2].ID {
				t.Fatalf("newest page %v (more %v, %v), all %v", newest, more, err, all)
			}
			after, more, err := e.agents.Agents(bg, chat.Page{After: all[0].ID, Limit: 1})
			if err != nil || !more || len(after) != 1 || after[0].ID != all[1].ID {
				t.Fatalf("after: %v %v %v", after, more, err)
			}
			before, more, err := e.agents.Agents(bg, chat.Page{Before: all[1].ID, Limit: 5})
			if err != nil || more || len(before) != 1 || before[0].ID != all[0].ID {
				t.Fatalf("before: %v %v %v", before, more, err)
			}
			if before[0].Handle == "" || before[0].Kind != kernel.KindAgent {
				t.Fatalf("the page lacks the principal's fields: %+v", before[0])
			}
		})

		t.Run("disable stops the token at once and enable brings the same token back", func(t *testing.T) {
			a, token := e.create(t, "sleepy")
			before := len(e.events(t))
			e.clock.Advance(1500)
			off, err := e.svc.Disable(bg, e.olga, a.ID)
			if err != nil || off.Status != agents.StatusDisabled || off.DisabledAt == nil {
				t.Fatalf("disable: %+v, %v", off, err)
			}
			_, err = e.id.Authenticate(bg, token)
			wantCode(t, err, kernel.CodeUnauthenticated)
			if got, _ := e.agents.Agent(bg, a.ID); got.Status != agents.StatusDisabled || got.DisabledAt == nil || !got.DisabledAt.Equal(*off.DisabledAt) {
				t.Fatalf("read back %+v", got)
			}
			on, err := e.svc.Enable(bg, e.olga, a.ID)
			if err != nil || on.Status != agents.StatusActive || on.DisabledAt != nil {
				t.Fatalf("enable: %+v, %v", on, err)
			}
			if actor, err := e.id.Authenticate(bg, token); err != nil || actor.ID != a.ID {
				t.Fatalf("the token after enable: %+v, %v", actor, err)
			}
			evs := e.events(t)[before:]
			if len(evs) != 2 || evs[0].Type != agents.EvAgentUpdated.Name || evs[1].Type != agents.EvAgentUpdated.Name {
				t.Fatalf("events %+v", evs)
			}
			var p struct{ Status string }
			if err := json.Unmarshal(evs[0].Payload, &p); err != nil || p.Status != "disabled" {
				t.Fatalf("agent.updated %s", evs[0].Payload)
			}
		})

		t.Run("an agent cannot be disabled as a person, nor a person as an agent", func(t *testing.T) {
			a, _ := e.create(t, "robust")
			_, err := e.id.DisableUser(bg, e.olga, a.ID)
			wantCode(t, err, kernel.CodeNotFound)
			_, err = e.svc.Disable(bg, e.olga, e.olga.ID)
			wantCode(t, err, kernel.CodeNotFound)
			_, err = e.id.SetAgentStatus(bg, e.olga.ID, identity.StatusDisabled)
			wantCode(t, err, kernel.CodeNotFound)
		})
	})
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
