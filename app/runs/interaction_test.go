package runs_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/storage"
)

// interacting is the fixture with the interactions use case on the real stores, rules that let
// whoever reads the channel read its messages and whoever posts interact, and a message of the
// agent echo with an approve button, a disabled one and a select of one or two colours.
func interacting(t *testing.T) (*fixture, *runs.Interactions, messaging.Message) {
	t.Helper()
	f := mustRuns(t)
	rules := f.decide
	f.authz.Fn = func(actor kernel.Actor, action kernel.Action, r kernel.Resource) error {
		switch action {
		case messaging.ActMessageRead:
			return rules(actor, runs.ActRunRead, r)
		case runs.ActInteractionCreate:
			return rules(actor, messaging.ActMessageCreate, r)
		}
		return rules(actor, action, r)
	}
	x := runs.NewInteractions(runs.InteractionDeps{Messages: f.messages, Store: storage.NewInteractionStore(f.db),
		UoW: f.db, Events: f.db, Authz: f.authz, Clock: f.clock})
	two := 2
	rows, err := messaging.NormalizeComponents([]messaging.ActionRow{{Components: []messaging.Component{
		{Type: "button", ID: "approve", Label: "Approve", Value: "yes"},
		{Type: "button", ID: "old", Label: "Old", Disabled: true},
		{Type: "select", ID: "colour", Max: &two, Options: []messaging.SelectOption{{Label: "Red", Value: "red"}, {Label: "Blue", Value: "blue"}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	m := f.message(kernel.Actor{ID: echo, Kind: kernel.KindAgent})
	m.Components = rows
	f.do(t, func(ctx context.Context) error { _, err := f.messages.InsertMessage(ctx, m); return err })
	f.after = f.db.Head()
	return f, x, m
}

func TestInteract(t *testing.T) {
	ctx := context.Background()

	t.Run("a person who may post clicks a button: it is recorded and interaction.created goes to the message's author alone", func(t *testing.T) {
		f, x, m := interacting(t)
		got, err := x.Interact(ctx, poster, m.ID, runs.NewInteraction{ComponentID: "approve"})
		if err != nil || got.ID.IsZero() {
			t.Fatalf("%+v, %v", got, err)
		}
		evs := f.events(t)
		if len(evs) != 1 || evs[0].Type != runs.EvInteractionCreated.Name || evs[0].Scope.PrincipalID != echo || evs[0].ActorID != poster.ID {
			t.Fatalf("events %+v", evs)
		}
		in, err := runs.EvInteractionCreated.Decode(evs[0])
		if err != nil || in.ID != got.ID || in.MessageID != m.ID || in.ThreadID != m.ThreadID || in.ChannelID != m.ChannelID ||
			in.ComponentID != "approve" || !slices.Equal(in.Values, []string{"yes"}) || in.UserID != poster.ID {
			t.Fatalf("payload %+v, %v", in, err)
		}
	})

	t.Run("a select takes its picks; picks it does not take change nothing", func(t *testing.T) {
		f, x, m := interacting(t)
		if _, err := x.Interact(ctx, poster, m.ID, runs.NewInteraction{ComponentID: "colour", Values: []string{"blue", "red"}}); err != nil {
			t.Fatal(err)
		}
		for _, values := range [][]string{nil, {"green"}, {"red", "red"}} {
			if _, err := x.Interact(ctx, poster, m.ID, runs.NewInteraction{ComponentID: "colour", Values: values}); !kernel.IsCode(err, kernel.CodeValidation) {
				t.Errorf("values %v: %v, want validation_failed", values, err)
			}
		}
		if evs := f.events(t); len(evs) != 1 {
			t.Fatalf("%d events, want the one of the valid pick", len(evs))
		}
	})

	t.Run("refuses a disabled or missing component, a deleted message, who may not post, who may not read, and agents", func(t *testing.T) {
		f, x, m := interacting(t)
		cases := []struct {
			name  string
			actor kernel.Actor
			comp  string
			code  kernel.Code
		}{
			{"a disabled button", poster, "old", runs.CodeComponentDisabled},
			{"a component the message does not have", poster, "gone", runs.CodeComponentUnavailable},
			{"a reader without post", viewer, "approve", kernel.CodeForbidden},
			{"someone who cannot read the channel", stranger, "approve", kernel.CodeNotFound},
			{"an agent", kernel.Actor{ID: helper, Kind: kernel.KindAgent}, "approve", kernel.CodeForbidden},
		}
		f.levels[helper] = post
		for _, c := range cases {
			if _, err := x.Interact(ctx, c.actor, m.ID, runs.NewInteraction{ComponentID: c.comp}); !kernel.IsCode(err, c.code) {
				t.Errorf("%s: %v, want %s", c.name, err, c.code)
			}
		}
		f.do(t, func(ctx context.Context) error {
			m.Content, m.Deleted, m.Version = "", true, 2
			return f.messages.DeleteMessage(ctx, m, f.clock.Now())
		})
		if _, err := x.Interact(ctx, poster, m.ID, runs.NewInteraction{ComponentID: "approve"}); !kernel.IsCode(err, runs.CodeComponentUnavailable) {
			t.Errorf("a deleted message: %v, want component_unavailable", err)
		}
		if evs := f.events(t); len(evs) != 0 {
			t.Fatalf("events %v after refusals", typesOf(evs))
		}
	})
}

func TestPrepareInteraction(t *testing.T) {
	ctx := context.Background()
	agent := kernel.Actor{ID: echo, Kind: kernel.KindAgent}
	clicked := func(t *testing.T) (*fixture, kernel.LoggedEvent) {
		f, x, m := interacting(t)
		if _, err := x.Interact(ctx, poster, m.ID, runs.NewInteraction{ComponentID: "approve"}); err != nil {
			t.Fatal(err)
		}
		return f, f.events(t)[0]
	}

	t.Run("adds a token for the thread with no run: refused for a run, accepted for the thread", func(t *testing.T) {
		f, e := clicked(t)
		payload, deliver, err := f.svc.Prepare(ctx, agent, e)
		if err != nil || !deliver {
			t.Fatalf("deliver %v, %v", deliver, err)
		}
		var d runs.PreparedInteraction
		if err := json.Unmarshal(payload, &d); err != nil || d.InvocationToken == "" || d.ExpiresAt.IsZero() || d.ComponentID != "approve" {
			t.Fatalf("payload %s, %v", payload, err)
		}
		c, err := f.svc.CheckToken(ctx, agent, d.InvocationToken, kernel.NilID)
		if err != nil || c.RunID != kernel.NilID || c.InteractionID != d.ID || c.ThreadID != d.ThreadID || c.ChannelID != d.ChannelID {
			t.Fatalf("claims %+v, %v", c, err)
		}
		r := f.run(t, invokeOnce(t, f))
		if _, err := f.svc.Start(ctx, agent, r.ID, d.InvocationToken); !kernel.IsCode(err, runs.CodeInvocationTokenInvalid) {
			t.Fatalf("start with the interaction's token: %v, want invocation_token_invalid", err)
		}
		if _, err := f.svc.CheckToken(ctx, kernel.Actor{ID: helper, Kind: kernel.KindAgent}, d.InvocationToken, kernel.NilID); !kernel.IsCode(err, runs.CodeInvocationTokenInvalid) {
			t.Fatalf("another agent's use: %v, want invocation_token_invalid", err)
		}
	})

	t.Run("holds back the interaction when the agent may no longer read the thread", func(t *testing.T) {
		f, e := clicked(t)
		f.levels[echo] = none
		if _, deliver, err := f.svc.Prepare(ctx, agent, e); err != nil || deliver {
			t.Fatalf("deliver %v, %v", deliver, err)
		}
	})

	t.Run("hands the event unchanged to a principal who is not an agent", func(t *testing.T) {
		f, e := clicked(t)
		p, deliver, err := f.svc.Prepare(ctx, kernel.Actor{ID: echo, Kind: kernel.KindApp}, e)
		if err != nil || !deliver || string(p) != string(e.Payload) {
			t.Fatalf("%s %v %v", p, deliver, err)
		}
	})
}

// invokeOnce makes a queued run of echo by a mention from the invoker and answers its id.
func invokeOnce(t *testing.T, f *fixture) kernel.ID {
	t.Helper()
	if state := f.post(t, invoker, f.message(invoker, echo), false); state != "triggered" {
		t.Fatalf("trigger state %q", state)
	}
	for _, r := range f.allRuns(t) {
		return r.ID
	}
	t.Fatal("no run")
	return ""
}
