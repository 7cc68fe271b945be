package components

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestMessageComponents(t *testing.T) {
	view := func(canInteract bool) MessageView {
		return MessageView{ID: "m1", CSRF: "tok", CanInteract: canInteract, Components: []ComponentRowView{{Components: []ComponentView{
			{Type: "button", ID: "go", Label: "Deploy", Style: "primary"},
			{Type: "button", ID: "old", Label: "Old", Style: "secondary", Disabled: true},
			{Type: "select", ID: "where", Placeholder: "Region", Min: 1, Max: 1, Options: []OptionView{{Label: "Europe", Value: "eu"}}},
		}}}}
	}
	render := func(t *testing.T, v MessageView) string {
		var b bytes.Buffer
		if err := Message(v).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	t.Run("a button posts its id to the interactions form, styled by its style; a disabled one is disabled", func(t *testing.T) {
		html := render(t, view(true))
		for _, want := range []string{
			`action="/console/messages/m1/interactions"`,
			`name="component_id" value="go" class="component primary"`,
			`data-testid="component-button" data-component="go">Deploy</button>`,
			`value="old" class="component secondary" disabled`,
			`<option value="eu">Europe</option>`,
			`name="csrf_token"`,
		} {
			if !strings.Contains(html, want) {
				t.Errorf("the message lacks %s:\n%s", want, html)
			}
		}
		if strings.Count(html, `data-testid="component-row"`) != 1 {
			t.Errorf("rows: %s", html)
		}
	})

	t.Run("a person who may not answer sees every component disabled", func(t *testing.T) {
		html := render(t, view(false))
		if !strings.Contains(html, `value="go" class="component primary" disabled`) || !strings.Contains(html, `class="quiet" disabled data-testid="component-submit"`) {
			t.Fatalf("the components are not disabled:\n%s", html)
		}
	})

	t.Run("a message without components shows none", func(t *testing.T) {
		if html := render(t, MessageView{ID: "m2"}); strings.Contains(html, "message-components") {
			t.Fatalf("%s", html)
		}
	})
}
