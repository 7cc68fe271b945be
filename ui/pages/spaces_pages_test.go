package pages_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/a-h/templ"

	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

func mustRender(t *testing.T, c templ.Component) string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func has(html, id string) bool { return strings.Contains(html, `data-testid="`+id+`"`) }

var chrome = layouts.Chrome{CSRF: "tok", User: &layouts.User{Handle: "olga", DisplayName: "Olga", IsOwner: true}}

var levels = []pages.LevelOption{{Name: "view", Help: "read"}, {Name: "post", Help: "write"}}

func TestAccessPage(t *testing.T) {
	v := pages.AccessView{Chrome: chrome, ChannelID: "c1", ChannelName: "general", SpaceID: "s1", SpaceName: "Home",
		Levels: levels, Back: "/console/spaces/s1", BackLabel: "Home",
		Principals: []pages.Option{{Value: "p1", Label: "Pia (@pia)"}},
		Grants: []pages.GrantRow{
			{PrincipalID: "p1", Name: "Pia", Handle: "pia", Kind: "person", Level: "post", Scope: "channel", Editable: true},
			{PrincipalID: "a1", Name: "Echo", Handle: "echo", Kind: "agent", Level: "view", Scope: "space"},
		}}
	t.Run("shows each grant; only the editable ones can be changed or revoked", func(t *testing.T) {
		html := mustRender(t, pages.Access(v))
		if strings.Count(html, `data-testid="grant-row"`) != 2 || strings.Count(html, `data-testid="grant-revoke"`) != 1 ||
			strings.Count(html, `data-testid="grant-level-form"`) != 1 || !has(html, "grant-level") || !has(html, "grant-agent") {
			t.Fatal(html)
		}
		if !strings.Contains(html, `<option value="post" selected>`) {
			t.Errorf("the held level is not selected: %s", html)
		}
		if strings.Contains(html, `name="scope" value="space"`) || strings.Contains(html, `id="grant-scope"`) {
			t.Errorf("offers the space to a viewer who may not grant there")
		}
		if strings.Count(html, `name="csrf_token" value="tok"`) < 3 {
			t.Errorf("a form without its CSRF field")
		}
	})
	t.Run("offers the space to whoever may grant there", func(t *testing.T) {
		w := v
		w.SpaceScope = true
		if html := mustRender(t, pages.Access(w)); !strings.Contains(html, `id="grant-scope"`) {
			t.Fatal(html)
		}
	})
	t.Run("an empty list says who sees the channel anyway", func(t *testing.T) {
		w := v
		w.Grants = nil
		if html := mustRender(t, pages.Access(w)); !has(html, "grants-empty") || has(html, "grant-row") {
			t.Fatal(html)
		}
	})
}

func TestAgentPage(t *testing.T) {
	v := pages.AgentView{Chrome: chrome, URL: "https://chat.example", Agent: pages.AgentRow{ID: "a1", Handle: "echo", Name: "Echo", Active: true},
		Runs: []pages.RunRow{{ID: "r1", Status: "failed", Reason: "interrupted", ThreadHref: "/console/threads/t1"}}}
	t.Run("without a token shows no secret, with the runs and the disable button", func(t *testing.T) {
		html := mustRender(t, pages.Agent(v))
		if has(html, "agent-token") || has(html, "agent-connect") || !has(html, "agent-disable") || has(html, "agent-enable") ||
			!strings.Contains(html, `data-status="failed"`) || !strings.Contains(html, "interrupted") || !has(html, "agent-offline") {
			t.Fatal(html)
		}
	})
	t.Run("right after the create shows the token with the connect hint", func(t *testing.T) {
		w := v
		w.Token = "bthy_secret"
		html := mustRender(t, pages.Agent(w))
		if !strings.Contains(html, `data-testid="agent-token">bthy_secret<`) ||
			!strings.Contains(html, "bothy agent echo --url https://chat.example --token-file echo.token") {
			t.Fatal(html)
		}
		if strings.Contains(html, "bthy_secret</code>") {
			t.Error("the token is in the command line")
		}
	})
	t.Run("a disabled agent offers enable", func(t *testing.T) {
		w := v
		w.Agent.Active, w.Runs = false, nil
		html := mustRender(t, pages.Agent(w))
		if !has(html, "agent-enable") || has(html, "agent-disable") || !has(html, "agent-disabled") || !has(html, "runs-empty") {
			t.Fatal(html)
		}
	})
}

func TestSpacePages(t *testing.T) {
	t.Run("the space lists its channels with their forms and the operator", func(t *testing.T) {
		v := pages.SpaceView{Chrome: chrome, ID: "s1", Name: "Home", Agents: []pages.Option{{Value: "a1", Label: "Echo (@echo)"}},
			Channels: []pages.ChannelRow{{ID: "c1", Name: "general", OperatorID: "a1", Operator: "Echo (@echo)"}, {ID: "c2", Name: "help"}}}
		html := mustRender(t, pages.Space(v))
		for _, id := range []string{"space-rename-form", "channel-create-form", "channel-edit-form", "channel-archive", "channel-access-link",
			"channel-operator"} {
			if !has(html, id) {
				t.Errorf("no %s", id)
			}
		}
		if strings.Count(html, `data-testid="channel-row"`) != 2 || !strings.Contains(html, `<option value="a1" selected>`) ||
			!strings.Contains(html, `href="/console/channels/c2/access"`) {
			t.Fatal(html)
		}
	})
	t.Run("an empty list invites the first space", func(t *testing.T) {
		html := mustRender(t, pages.Spaces(pages.SpacesView{Chrome: chrome}))
		if !has(html, "spaces-empty") || !has(html, "space-create-form") {
			t.Fatal(html)
		}
	})
	t.Run("a refused agent keeps what was typed", func(t *testing.T) {
		html := mustRender(t, pages.Agents(pages.AgentsView{Chrome: chrome, Handle: "pia", DisplayName: "Not Pia", Error: "handle taken"}))
		if !has(html, "form-error") || !strings.Contains(html, `value="Not Pia"`) || !has(html, "agents-empty") {
			t.Fatal(html)
		}
	})
}
