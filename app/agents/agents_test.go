package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/storetest"
)

var (
	owner  = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "olga", IsOwner: true}
	person = kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: "pia"}
	ctx    = context.Background()
)

func codeAndField(err error) (kernel.Code, string) {
	var ke *kernel.Error
	if errors.As(err, &ke) {
		return ke.Code, ke.Field
	}
	return kernel.CodeOf(err), ""
}

func TestCreate(t *testing.T) {
	refusals := []struct {
		name      string
		in        agents.NewAgent
		deny      error
		wantCode  kernel.Code
		wantField string
	}{
		{name: "refuses a caller the rules refuse", in: agents.NewAgent{Handle: "bot", DisplayName: "Bot"},
			deny: kernel.Errorf(kernel.CodeForbidden, "owners only"), wantCode: kernel.CodeForbidden},
		{name: "refuses an empty handle", in: agents.NewAgent{Handle: "", DisplayName: "Bot"}, wantCode: kernel.CodeValidation, wantField: "handle"},
		{name: "refuses a handle with a space", in: agents.NewAgent{Handle: "my bot", DisplayName: "Bot"}, wantCode: kernel.CodeValidation, wantField: "handle"},
		{name: "refuses a handle of 33 characters", in: agents.NewAgent{Handle: strings.Repeat("b", 33), DisplayName: "Bot"},
			wantCode: kernel.CodeValidation, wantField: "handle"},
		{name: "refuses a blank display name", in: agents.NewAgent{Handle: "bot", DisplayName: "  "}, wantCode: kernel.CodeValidation, wantField: "display_name"},
		{name: "refuses a control character in the display name", in: agents.NewAgent{Handle: "bot", DisplayName: "B\x07t"},
			wantCode: kernel.CodeValidation, wantField: "display_name"},
		{name: "refuses a description of 501 characters", in: agents.NewAgent{Handle: "bot", DisplayName: "Bot", Description: strings.Repeat("d", 501)},
			wantCode: kernel.CodeValidation, wantField: "description"},
		{name: "refuses a bidi override in the description", in: agents.NewAgent{Handle: "bot", DisplayName: "Bot", Description: "a\u202eb"},
			wantCode: kernel.CodeValidation, wantField: "description"},
		{name: "refuses invalid UTF-8 in the description", in: agents.NewAgent{Handle: "bot", DisplayName: "Bot", Description: "a\xffb"},
			wantCode: kernel.CodeValidation, wantField: "description"},
	}
	for _, tt := range refusals {
		t.Run(tt.name+" and changes nothing", func(t *testing.T) {
			f := mustAgents(t)
			f.authz.Fn = func(kernel.Actor, kernel.Action, kernel.Resource) error { return tt.deny }
			_, token, err := f.svc.Create(ctx, owner, tt.in)
			if code, field := codeAndField(err); code != tt.wantCode || field != tt.wantField {
				t.Fatalf("err = %v (field %q), want %s on %q", err, field, tt.wantCode, tt.wantField)
			}
			if token != "" || len(f.events(t)) != 0 || len(f.agents(t)) != 0 || (tt.in.Handle != "" && f.handleTaken(t, tt.in.Handle)) {
				t.Fatal("a refused create changed something")
			}
			if c := f.authz.Calls[0]; c.Action != agents.ActAgentCreate || c.Resource.Kind != kernel.ResInstance {
				t.Fatalf("authorized %+v first, want agent.create on the instance", c)
			}
		})
	}

	t.Run("creates the principal, the row, the consumer's cursor and agent.created in one unit and shows the token once", func(t *testing.T) {
		f := mustAgents(t)
		a, token, err := f.svc.Create(ctx, owner, agents.NewAgent{Handle: "Echo", DisplayName: "  Echo bot ", Description: " repeats what it reads "})
		if err != nil {
			t.Fatal(err)
		}
		if a.Kind != kernel.KindAgent || a.Handle != "Echo" || a.DisplayName != "Echo bot" || a.Description != "repeats what it reads" ||
			a.Status != agents.StatusActive || a.CreatedBy != owner.ID || a.CreatedAt.IsZero() || a.DisabledAt != nil {
			t.Fatalf("agent = %+v", a)
		}
		if token == "" || f.tokenOf(t, token) != a.ID {
			t.Fatalf("token %q, want the one identity made", token)
		}
		if got, err := f.store.Agent(ctx, a.ID); err != nil || got.Description != a.Description || got.CreatedBy != owner.ID {
			t.Fatalf("stored %+v, %v", got, err)
		}
		if !f.consumerStarted(t, a.ID) {
			t.Fatal("the new agent's consumer has no cursor: what is addressed to it before it connects would be lost")
		}
		evs := f.events(t)
		if len(evs) != 1 || evs[0].Type != agents.EvAgentCreated.Name || evs[0].Scope != (kernel.Scope{}) ||
			evs[0].SubjectID != a.ID || evs[0].ActorID != owner.ID {
			t.Fatalf("events = %+v", evs)
		}
		b := evs[0].Payload
		if strings.Contains(string(b), token) || strings.Contains(string(b), "token") {
			t.Fatalf("the payload holds the token: %s", b)
		}
		var p map[string]any
		_ = json.Unmarshal(b, &p)
		if p["id"] != string(a.ID) || p["kind"] != "agent" || p["status"] != "active" || p["description"] != a.Description {
			t.Fatalf("payload %s", b)
		}
	})

	t.Run("a handle taken answers conflict naming the field and appends nothing", func(t *testing.T) {
		f := mustAgents(t)
		f.mustCreate(t, "echo")
		n := len(f.events(t))
		_, _, err := f.svc.Create(ctx, owner, agents.NewAgent{Handle: "ECHO", DisplayName: "Another"})
		if code, field := codeAndField(err); code != kernel.CodeConflict || field != "handle" {
			t.Fatalf("err = %v", err)
		}
		if len(f.events(t)) != n || len(f.agents(t)) != 1 {
			t.Fatal("the refused create changed something")
		}
	})

	t.Run("a failing store write appends nothing and rolls the principal back", func(t *testing.T) {
		f := mustAgents(t)
		f.store.createAgent = func(context.Context, agents.Agent) error { return errors.New("disk full") }
		if _, token, err := f.svc.Create(ctx, owner, agents.NewAgent{Handle: "bot", DisplayName: "Bot"}); err == nil || token != "" {
			t.Fatalf("err = %v, token %q", err, token)
		}
		if len(f.events(t)) != 0 {
			t.Fatal("an event was kept")
		}
		if f.handleTaken(t, "bot") {
			t.Fatal("the principal was kept")
		}
	})
}

func TestReadAgents(t *testing.T) {
	t.Run("lists a page in id order with has_more, and gets one", func(t *testing.T) {
		f := mustAgents(t)
		var made []agents.Agent
		for _, h := range []string{"a1", "a2", "a3"} {
			a, _ := f.mustCreate(t, h)
			made = append(made, a)
		}
		page, more, err := f.svc.List(ctx, person, chat.Page{Limit: 2})
		if err != nil || !more || len(page) != 2 || page[0].ID != made[1].ID || page[1].ID != made[2].ID {
			t.Fatalf("newest page: %+v more %v, %v", page, more, err)
		}
		page, more, err = f.svc.List(ctx, person, chat.Page{Before: made[1].ID})
		if err != nil || more || len(page) != 1 || page[0].ID != made[0].ID {
			t.Fatalf("page before: %+v more %v, %v", page, more, err)
		}
		if c := f.authz.Last(); c.Action != agents.ActAgentRead {
			t.Fatalf("authorized %+v", c)
		}
		got, err := f.svc.Get(ctx, person, made[0].ID)
		if err != nil || got.Handle != "a1" || got.Kind != kernel.KindAgent {
			t.Fatalf("get: %+v, %v", got, err)
		}
		if c := f.authz.Last(); c.Action != agents.ActAgentRead || c.Resource.ID != made[0].ID {
			t.Fatalf("authorized %+v", c)
		}
	})
	t.Run("refuses a bad page", func(t *testing.T) {
		f := mustAgents(t)
		for _, p := range []chat.Page{{Limit: 201}, {Limit: -1}, {Before: kernel.NewID(), After: kernel.NewID()}} {
			if _, _, err := f.svc.List(ctx, person, p); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Errorf("%+v: err = %v", p, err)
			}
		}
	})
	t.Run("an unknown id is not found", func(t *testing.T) {
		f := mustAgents(t)
		if _, err := f.svc.Get(ctx, person, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("the rules are asked before anything is read", func(t *testing.T) {
		f := mustAgents(t)
		a, _ := f.mustCreate(t, "bot")
		f.authz.Fn = func(kernel.Actor, kernel.Action, kernel.Resource) error {
			return kernel.Errorf(kernel.CodeForbidden, "people only")
		}
		if _, _, err := f.svc.List(ctx, person, chat.Page{}); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("list: %v", err)
		}
		if _, err := f.svc.Get(ctx, person, a.ID); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("get: %v", err)
		}
		if _, err := f.svc.Get(ctx, person, kernel.NewID()); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("get of an unknown id: %v (a refused caller must not learn what exists)", err)
		}
	})
}

func TestDisableEnable(t *testing.T) {
	t.Run("disable switches the principal, publishes AgentDisabled and appends agent.updated; again changes nothing", func(t *testing.T) {
		f := mustAgents(t)
		a, _ := f.mustCreate(t, "bot")
		n := len(f.events(t))
		f.clock.Advance(time.Minute)
		got, err := f.svc.Disable(ctx, owner, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != agents.StatusDisabled || got.DisabledAt == nil || !got.UpdatedAt.After(a.UpdatedAt) || got.Description != a.Description {
			t.Fatalf("agent = %+v", got)
		}
		if u := f.principal(t, a.ID); u.Status != agents.StatusDisabled {
			t.Fatalf("the principal is %s", u.Status)
		}
		if len(f.disabled) != 1 || f.disabled[0] != a.ID {
			t.Fatalf("AgentDisabled delivered for %v", f.disabled)
		}
		evs := f.events(t)[n:]
		if len(evs) != 1 || evs[0].Type != agents.EvAgentUpdated.Name || evs[0].Scope != (kernel.Scope{}) || evs[0].SubjectID != a.ID ||
			storetest.Payload[agents.Agent](t, evs[0]).Status != agents.StatusDisabled {
			t.Fatalf("events = %+v", evs)
		}
		if c := f.authz.Last(); c.Action != agents.ActAgentDisable || c.Resource.ID != a.ID {
			t.Fatalf("authorized %+v", c)
		}
		again, err := f.svc.Disable(ctx, owner, a.ID)
		if err != nil || again.Status != agents.StatusDisabled || len(f.events(t)) != n+1 || len(f.disabled) != 1 {
			t.Fatalf("disabling again: %+v %v", again, err)
		}
	})
	t.Run("enable makes it active again with agent.updated; again changes nothing", func(t *testing.T) {
		f := mustAgents(t)
		a, _ := f.mustCreate(t, "bot")
		if _, err := f.svc.Disable(ctx, owner, a.ID); err != nil {
			t.Fatal(err)
		}
		n := len(f.events(t))
		got, err := f.svc.Enable(ctx, owner, a.ID)
		if err != nil || got.Status != agents.StatusActive || got.DisabledAt != nil {
			t.Fatalf("enable: %+v, %v", got, err)
		}
		evs := f.events(t)[n:]
		if len(evs) != 1 || evs[0].Type != agents.EvAgentUpdated.Name || storetest.Payload[agents.Agent](t, evs[0]).Status != agents.StatusActive {
			t.Fatalf("events = %+v", evs)
		}
		if c := f.authz.Last(); c.Action != agents.ActAgentEnable {
			t.Fatalf("authorized %+v", c)
		}
		if _, err := f.svc.Enable(ctx, owner, a.ID); err != nil || len(f.events(t)) != n+1 {
			t.Fatalf("enabling again: %v", err)
		}
		if len(f.disabled) != 1 {
			t.Fatalf("AgentDisabled delivered %d times", len(f.disabled))
		}
	})
	t.Run("refusals change nothing", func(t *testing.T) {
		f := mustAgents(t)
		a, _ := f.mustCreate(t, "bot")
		n := len(f.events(t))
		if _, err := f.svc.Disable(ctx, owner, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("unknown id: %v", err)
		}
		if _, err := f.svc.Enable(ctx, owner, person.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("a person's id: %v", err)
		}
		f.authz.Fn = func(kernel.Actor, kernel.Action, kernel.Resource) error {
			return kernel.Errorf(kernel.CodeForbidden, "owners only")
		}
		if _, err := f.svc.Disable(ctx, person, a.ID); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("not an owner: %v", err)
		}
		if len(f.events(t)) != n || len(f.disabled) != 0 {
			t.Fatal("a refusal changed something")
		}
		if u := f.principal(t, a.ID); u.Status != agents.StatusActive {
			t.Fatal("the agent was disabled")
		}
	})
	t.Run("a veto of a subscriber rolls the disable back", func(t *testing.T) {
		f := mustAgents(t)
		a, _ := f.mustCreate(t, "bot")
		bus := kernel.NewTxBus()
		kernel.Subscribe(bus, "veto", func(context.Context, agents.AgentDisabled) error { return errors.New("no") })
		bus.Seal()
		svc := f.service(bus)
		n := len(f.events(t))
		if _, err := svc.Disable(ctx, owner, a.ID); err == nil || !strings.Contains(err.Error(), "veto") {
			t.Fatalf("err = %v", err)
		}
		if len(f.events(t)) != n {
			t.Fatal("agent.updated was kept")
		}
		if u := f.principal(t, a.ID); u.Status != agents.StatusActive {
			t.Fatal("the principal's disable was kept")
		}
	})
}

func TestResetToken(t *testing.T) {
	t.Run("the owner gets a new token for the agent, shown once", func(t *testing.T) {
		f := mustAgents(t)
		a, first := f.mustCreate(t, "bot")
		got, token, err := f.svc.ResetToken(ctx, owner, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != a.ID || token == "" || token == first || f.tokenOf(t, token) != a.ID {
			t.Fatalf("agent %+v, token %q (was %q)", got, token, first)
		}
		if f.tokenOf(t, first) != "" {
			t.Fatal("the old token still authenticates")
		}
		if c := f.authz.Last(); c.Action != agents.ActAgentTokenReset || c.Resource.ID != a.ID {
			t.Fatalf("authorized %+v", c)
		}
	})
	t.Run("nobody else may, and an unknown agent is not found", func(t *testing.T) {
		f := mustAgents(t)
		a, first := f.mustCreate(t, "bot")
		f.authz.Fn = func(actor kernel.Actor, _ kernel.Action, _ kernel.Resource) error {
			if actor.ID != owner.ID {
				return kernel.Errorf(kernel.CodeForbidden, "not allowed")
			}
			return nil
		}
		if _, _, err := f.svc.ResetToken(ctx, person, a.ID); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("a person: %v", err)
		}
		if f.tokenOf(t, first) != a.ID {
			t.Fatal("a refused reset changed the token")
		}
		if _, _, err := f.svc.ResetToken(ctx, owner, kernel.NewID()); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("an unknown agent: %v", err)
		}
	})
}
