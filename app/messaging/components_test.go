package messaging_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

func intp(n int) *int { return &n }

// buttons is one row with an approve and a deny button and a select of two of three colours.
func buttons() []messaging.ActionRow {
	return []messaging.ActionRow{{Components: []messaging.Component{
		{Type: messaging.ComponentButton, ID: "approve", Label: "Approve", Style: messaging.ButtonPrimary, Value: "yes"},
		{Type: messaging.ComponentButton, ID: "deny", Label: "Deny"},
	}}, {Components: []messaging.Component{
		{Type: messaging.ComponentSelect, ID: "colour", Placeholder: "Pick", Max: intp(2), Options: []messaging.SelectOption{
			{Label: "Red", Value: "red"}, {Label: "Green", Value: "green"}, {Label: "Blue", Value: "blue"}}},
	}}}
}

func TestComponents(t *testing.T) {
	ctx := context.Background()

	t.Run("an agent's message carries its components, with the defaults filled, in the store and in message.created", func(t *testing.T) {
		f := mustMessaging(t)
		m, _, err := f.svc.CreateMessage(ctx, carol, f.main.ID, messaging.NewMessage{Content: "Deploy?", Components: buttons()})
		if err != nil {
			t.Fatal(err)
		}
		got := f.message(t, m.ID).Components
		if len(got) != 2 || got[0].Components[1].Style != messaging.ButtonSecondary || *got[1].Components[0].Min != 1 || *got[1].Components[0].Max != 2 {
			t.Fatalf("stored components %+v", got)
		}
		evs := f.events(t)
		created, err := messaging.EvMessageCreated.Decode(evs[len(evs)-1])
		if err != nil || len(created.Components) != 2 || created.Components[0].Components[0].Value != "yes" {
			t.Fatalf("message.created %+v, %v", created.Components, err)
		}
	})

	t.Run("a person's message may not carry components", func(t *testing.T) {
		f := mustMessaging(t)
		n := f.messageCount(t)
		_, _, err := f.svc.CreateMessage(ctx, alice, f.main.ID, messaging.NewMessage{Content: "Deploy?", Components: buttons()})
		if !kernel.IsCode(err, messaging.CodeComponentsNotAllowed) {
			t.Fatalf("err %v, want components_not_allowed", err)
		}
		if f.messageCount(t) != n {
			t.Fatal("the refused message was stored")
		}
	})

	t.Run("refuses components that break a rule, naming the field", func(t *testing.T) {
		long := strings.Repeat("x", 101)
		cases := []struct {
			name  string
			edit  func(rows []messaging.ActionRow) []messaging.ActionRow
			field string
		}{
			{"a duplicate id", func(r []messaging.ActionRow) []messaging.ActionRow {
				r[0].Components[1].ID = "approve"
				return r
			}, "components[0].components[1].id"},
			{"an id over 100 bytes", func(r []messaging.ActionRow) []messaging.ActionRow {
				r[0].Components[0].ID = long
				return r
			}, "components[0].components[0].id"},
			{"a label over 80 characters", func(r []messaging.ActionRow) []messaging.ActionRow {
				r[0].Components[0].Label = strings.Repeat("é", 81)
				return r
			}, "components[0].components[0].label"},
			{"an unknown style", func(r []messaging.ActionRow) []messaging.ActionRow {
				r[0].Components[0].Style = "loud"
				return r
			}, "components[0].components[0].style"},
			{"an unknown type", func(r []messaging.ActionRow) []messaging.ActionRow {
				r[0].Components[0].Type = "slider"
				return r
			}, "components[0].components[0].type"},
			{"more than 25 options", func(r []messaging.ActionRow) []messaging.ActionRow {
				for i := 0; i < 26; i++ {
					r[1].Components[0].Options = append(r[1].Components[0].Options, messaging.SelectOption{Label: "o", Value: strings.Repeat("v", i+1)})
				}
				return r
			}, "components[1].components[0].options"},
			{"max above the options", func(r []messaging.ActionRow) []messaging.ActionRow {
				r[1].Components[0].Max = intp(4)
				return r
			}, "components[1].components[0].max"},
			{"min above max", func(r []messaging.ActionRow) []messaging.ActionRow {
				r[1].Components[0].Min = intp(3)
				return r
			}, "components[1].components[0].min"},
			{"six components in a row", func(r []messaging.ActionRow) []messaging.ActionRow {
				for i := 0; i < 4; i++ {
					r[0].Components = append(r[0].Components, messaging.Component{Type: "button", ID: "b" + strings.Repeat("x", i), Label: "B"})
				}
				return r
			}, "components[0].components"},
			{"six rows", func(r []messaging.ActionRow) []messaging.ActionRow {
				for i := 0; i < 4; i++ {
					r = append(r, messaging.ActionRow{Components: []messaging.Component{{Type: "button", ID: "r" + strings.Repeat("x", i), Label: "B"}}})
				}
				return r
			}, "components"},
		}
		for _, c := range cases {
			_, err := messaging.NormalizeComponents(c.edit(buttons()))
			var ke *kernel.Error
			if !kernel.IsCode(err, kernel.CodeValidation) || !errorAs(err, &ke) || ke.Field != c.field {
				t.Errorf("%s: %v (field %q), want validation_failed on %s", c.name, err, fieldOf(err), c.field)
			}
		}
	})

	t.Run("the author disables a button without an edit of the content, and null removes the components", func(t *testing.T) {
		f := mustMessaging(t)
		m, _, err := f.svc.CreateMessage(ctx, carol, f.main.ID, messaging.NewMessage{Content: "Deploy?", Components: buttons()})
		if err != nil {
			t.Fatal(err)
		}
		rows := buttons()
		rows[0].Components[0].Disabled = true
		got, err := f.svc.ChangeMessage(ctx, carol, m.ID, messaging.MessageChange{SetComponents: true, Components: rows}, nil)
		if err != nil || got.Version != 2 || got.EditedAt != nil || !got.Components[0].Components[0].Disabled {
			t.Fatalf("change: %+v, %v", got, err)
		}
		if revs, err := f.svc.ListRevisions(ctx, carol, m.ID); err != nil || len(revs) != 0 {
			t.Fatalf("revisions %v, %v", revs, err)
		}
		evs := f.events(t)
		updated, err := messaging.EvMessageUpdated.Decode(evs[len(evs)-1])
		if err != nil || !updated.Components[0].Components[0].Disabled {
			t.Fatalf("message.updated %+v, %v", updated.Components, err)
		}
		if got, err = f.svc.ChangeMessage(ctx, carol, m.ID, messaging.MessageChange{SetComponents: true}, nil); err != nil || got.Components != nil {
			t.Fatalf("remove: %+v, %v", got.Components, err)
		}
		if stored := f.message(t, m.ID); stored.Components != nil || stored.Version != 3 || stored.Content != "Deploy?" {
			t.Fatalf("stored %+v", stored)
		}
	})

	t.Run("someone else may not change the components", func(t *testing.T) {
		f := mustMessaging(t)
		m, _, err := f.svc.CreateMessage(ctx, carol, f.main.ID, messaging.NewMessage{Content: "Deploy?", Components: buttons()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.ChangeMessage(ctx, alice, m.ID, messaging.MessageChange{SetComponents: true}, nil); !kernel.IsCode(err, kernel.CodeForbidden) {
			t.Fatalf("err %v, want forbidden", err)
		}
	})

	t.Run("a deleted message keeps no components", func(t *testing.T) {
		f := mustMessaging(t)
		m, _, err := f.svc.CreateMessage(ctx, carol, f.main.ID, messaging.NewMessage{Content: "Deploy?", Components: buttons()})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.svc.DeleteMessage(ctx, carol, m.ID); err != nil {
			t.Fatal(err)
		}
		if got := f.message(t, m.ID); got.Components != nil {
			t.Fatalf("tombstone components %+v", got.Components)
		}
	})
}

func TestCheckPicks(t *testing.T) {
	rows, err := messaging.NormalizeComponents(buttons())
	if err != nil {
		t.Fatal(err)
	}
	approve, _ := messaging.Find(rows, "approve")
	deny, _ := messaging.Find(rows, "deny")
	colour, _ := messaging.Find(rows, "colour")
	for _, c := range []struct {
		name   string
		c      messaging.Component
		values []string
		want   string // the values recorded, joined; "!" a refusal
	}{
		{"a button sent without values records its value", approve, nil, "yes"},
		{"a button sent with its value records it", approve, []string{"yes"}, "yes"},
		{"a button sent another value is refused", approve, []string{"no"}, "!"},
		{"a button without a value records none", deny, nil, ""},
		{"a select takes picks within min and max", colour, []string{"blue", "red"}, "blue,red"},
		{"a select refuses no pick below its min", colour, nil, "!"},
		{"a select refuses more picks than its max", colour, []string{"red", "green", "blue"}, "!"},
		{"a select refuses a value that is no option", colour, []string{"pink"}, "!"},
		{"a select refuses the same pick twice", colour, []string{"red", "red"}, "!"},
	} {
		got, err := messaging.CheckPicks(c.c, c.values)
		switch {
		case c.want == "!" && !kernel.IsCode(err, kernel.CodeValidation):
			t.Errorf("%s: %v, %v, want validation_failed", c.name, got, err)
		case c.want != "!" && (err != nil || strings.Join(got, ",") != c.want):
			t.Errorf("%s: %v, %v, want %q", c.name, got, err, c.want)
		}
	}
}

func errorAs(err error, target **kernel.Error) bool { return errors.As(err, target) }

func fieldOf(err error) string {
	var ke *kernel.Error
	if errors.As(err, &ke) {
		return ke.Field
	}
	return ""
}
