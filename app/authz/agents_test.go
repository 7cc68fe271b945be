package authz_test

import (
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// agentPayload is an agent as app/agents logs it in agent.created and agent.updated, with an
// is_owner the payload never has, to show that the cache does not take it.
func agentPayload(a agents.Agent) map[string]any {
	return map[string]any{"id": a.ID, "kind": a.Kind, "handle": a.Handle, "display_name": a.DisplayName,
		"description": a.Description, "status": a.Status, "created_at": a.CreatedAt, "created_by": a.CreatedBy,
		"updated_at": a.UpdatedAt, "disabled_at": a.DisabledAt, "is_owner": true}
}

// agent creates an agent, announced with agent.created.
func (f *follower) agent(handle string) (kernel.Actor, agents.Agent) {
	a := agents.Agent{ID: kernel.NewID(), Kind: kernel.KindAgent, Handle: handle, DisplayName: handle, Status: agents.StatusActive,
		CreatedAt: time.Now(), CreatedBy: f.owner().ID, UpdatedAt: time.Now()}
	f.users[a.ID] = identity.User{ID: a.ID, Kind: kernel.KindAgent, Handle: handle, Status: identity.StatusActive}
	f.m.principals[a.ID] = authz.PrincipalRef{ID: a.ID, Active: true}
	f.emit(agents.EvAgentCreated.Name, kernel.Scope{}, a.ID, agentPayload(a))
	return kernel.Actor{ID: a.ID, Kind: kernel.KindAgent, Handle: handle}, a
}

// setAgentStatus announces a's new status with agent.updated.
func (f *follower) setAgentStatus(a agents.Agent, status string) agents.Agent {
	a.Status = status
	u := f.users[a.ID]
	u.Status = status
	f.users[a.ID] = u
	f.m.principals[a.ID] = authz.PrincipalRef{ID: a.ID, Active: status == agents.StatusActive}
	f.emit(agents.EvAgentUpdated.Name, kernel.Scope{}, a.ID, agentPayload(a))
	return a
}

func TestObserveAgents(t *testing.T) {
	t.Run("an agent is a principal like a person from agent.created on, and never an owner", func(t *testing.T) {
		f := newFollower(t)
		sp := f.space()
		c, other := f.channel(sp, chat.KindChannel), f.channel(sp, chat.KindChannel)
		bot, _ := f.agent("bot")
		f.expect(bot, messaging.ActMessageRead, chanRes(f, c, f.owner()), notFound)
		f.expect(bot, chat.ActSpaceCreate, instance, forbidden)
		f.grant(bot, c, authz.LevelView)
		f.expect(bot, messaging.ActMessageRead, chanRes(f, c, f.owner()), ok)
		f.expect(bot, messaging.ActMessageCreate, chanRes(f, c, bot), forbidden)
		f.expect(bot, messaging.ActMessageRead, chanRes(f, other, f.owner()), notFound)
		// The credential of a mistaken store may say owner: the cache does not believe it.
		f.expect(kernel.Actor{ID: bot.ID, Kind: kernel.KindAgent, IsOwner: true}, messaging.ActMessageRead, chanRes(f, other, f.owner()), notFound)
		if vis, err := f.svc.Delivery().Visible(bg, bot, catchup.ActEventsCatchUp); err != nil || vis.All() || !vis.Channel(c) || vis.Channel(other) {
			t.Fatalf("visible: %v %v", vis, err)
		}
	})

	t.Run("a disabled agent is unauthenticated and reported once; enabled, it has its grants again", func(t *testing.T) {
		f := newFollower(t)
		sp := f.space()
		c := f.channel(sp, chat.KindChannel)
		bot, a := f.agent("bot")
		f.grant(bot, c, authz.LevelPost)
		a = f.setAgentStatus(a, agents.StatusDisabled)
		if len(f.disabled) != 1 || f.disabled[0] != bot.ID {
			t.Fatalf("OnPrincipalDisabled saw %v", f.disabled)
		}
		f.expect(bot, messaging.ActMessageRead, chanRes(f, c, f.owner()), unauthorized)
		f.setAgentStatus(a, agents.StatusDisabled) // again: nothing to report
		f.setAgentStatus(a, agents.StatusActive)
		f.expect(bot, messaging.ActMessageCreate, chanRes(f, c, bot), ok)
		if len(f.disabled) != 1 {
			t.Fatalf("OnPrincipalDisabled saw %v", f.disabled)
		}
	})

	t.Run("an agent.created without a status cannot be applied and reloads the cache", func(t *testing.T) {
		m := fixture()
		svc := warmed(t, m)
		var errs []int64
		svc.OnObserveError(func(seq int64, err error) { errs = append(errs, seq) })
		m.head++
		svc.Observe(event(m.head, agents.EvAgentCreated.Name, `{"id":"`+string(kernel.NewID())+`"}`))
		if len(errs) != 1 || errs[0] != m.head {
			t.Fatalf("observe errors at %v", errs)
		}
		if seq, warm := svc.Delivery().Seq(); seq != m.head || !warm {
			t.Fatalf("the cache is at %d (warm %v)", seq, warm)
		}
	})
}
