package tests

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// mustConsoleSignIn signs b in with the console's form.
func mustConsoleSignIn(tb testing.TB, b *browser, handle, password string) {
	tb.Helper()
	b.get("/console/signin").want(tb, http.StatusOK)
	b.post("/console/signin", url.Values{"handle": {handle}, "password": {password}, "next": {"/console/"}}).want(tb, http.StatusSeeOther)
}

// followOK follows the redirect of a form and wants the page it leads to, with its flash.
func (b *browser) followOK(tb testing.TB, p consolePage, wantPrefix string) consolePage {
	tb.Helper()
	p.want(tb, http.StatusSeeOther)
	if !strings.HasPrefix(p.location(), wantPrefix) {
		tb.Fatalf("redirected to %q, want %q…", p.location(), wantPrefix)
	}
	next := b.get(p.location()).want(tb, http.StatusOK)
	if !next.has("flash") {
		tb.Fatalf("no flash after the form: %.800s", next.body)
	}
	return next
}

// row returns the opening tag of the element with data-testid id whose attribute attr is value,
// or "" when the page has none.
func (p consolePage) row(id, attr, value string) string {
	re := regexp.MustCompile(`<[a-z]+ [^>]*data-testid="` + regexp.QuoteMeta(id) + `"[^>]*>`)
	for _, tag := range re.FindAllString(p.body, -1) {
		if strings.Contains(tag, attr+`="`+value+`"`) {
			return tag
		}
	}
	return ""
}

var tokenShown = regexp.MustCompile(`data-testid="agent-token">([^<]+)<`)

// TestConsoleSpacesAccessAgents is the console's owner pages for spaces and channels, access and
// agents, without a browser: every change goes through the same use cases as the API, which
// sees it at once.
func TestConsoleSpacesAccessAgents(t *testing.T) {
	t.Parallel()
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		pia, piaAPI := in.mustCreateUser(t, "pia")
		b := newBrowser(t, in.srv.public)
		mustConsoleSignIn(t, b, "owner", ownerPassword)
		var spaceID, channelID, helpID string

		t.Run("the owner creates a space and renames it", func(t *testing.T) {
			p := b.get("/console/spaces").want(t, http.StatusOK)
			if !p.has("spaces") || !p.has("spaces-empty") || !p.has("space-create-form") {
				t.Fatalf("%.800s", p.body)
			}
			created := b.post("/console/spaces", url.Values{"name": {"Home"}})
			p = b.followOK(t, created, "/console/spaces/")
			spaceID = strings.TrimPrefix(created.location(), "/console/spaces/")
			if !p.has("space") || !p.has("channels-empty") || !strings.Contains(p.body, ">Home<") {
				t.Fatalf("%.800s", p.body)
			}
			b.followOK(t, b.post("/console/spaces/"+spaceID+"/rename", url.Values{"name": {"Hearth"}}), "/console/spaces/"+spaceID)
			var sp space
			in.owner.do(t, http.MethodGet, api("spaces", spaceID), nil).want(t, http.StatusOK).decode(t, &sp)
			if sp.Name != "Hearth" {
				t.Fatalf("the API reads %q", sp.Name)
			}
			if p := b.get("/console/spaces").want(t, http.StatusOK); p.row("space-row", "data-id", spaceID) == "" {
				t.Fatalf("the list lacks the space: %.800s", p.body)
			}
		})

		t.Run("a refused name comes back with the use case's reason and changes nothing", func(t *testing.T) {
			p := b.post("/console/spaces/"+spaceID+"/rename", url.Values{"name": {"  "}}).want(t, http.StatusSeeOther)
			p = b.get(p.location()).want(t, http.StatusOK)
			if !strings.Contains(p.body, `class="flash error"`) || !strings.Contains(p.body, "Hearth") {
				t.Fatalf("%.800s", p.body)
			}
		})

		t.Run("the owner creates channels and renames one", func(t *testing.T) {
			b.followOK(t, b.post("/console/spaces/"+spaceID+"/channels", url.Values{"name": {"general"}, "topic": {"All of it"}}), "/console/spaces/"+spaceID)
			b.followOK(t, b.post("/console/spaces/"+spaceID+"/channels", url.Values{"name": {"help"}}), "/console/spaces/"+spaceID)
			var list page[channel]
			in.owner.do(t, http.MethodGet, api("spaces", spaceID, "channels"), nil).want(t, http.StatusOK).decode(t, &list)
			if len(list.Items) != 2 || list.Items[0].Name != "general" || list.Items[0].Topic != "All of it" {
				t.Fatalf("the API lists %+v", list.Items)
			}
			channelID, helpID = list.Items[0].ID, list.Items[1].ID
			p := b.followOK(t, b.post("/console/channels/"+channelID+"/edit", url.Values{"name": {"lobby"}, "topic": {""}}), "/console/spaces/"+spaceID)
			if p.row("channel-row", "data-id", channelID) == "" || !strings.Contains(p.body, ">lobby<") {
				t.Fatalf("%.800s", p.body)
			}
			var ch channel
			in.owner.do(t, http.MethodGet, api("channels", channelID), nil).want(t, http.StatusOK).decode(t, &ch)
			if ch.Name != "lobby" || ch.Topic != "" {
				t.Fatalf("the API reads %+v", ch)
			}
		})

		t.Run("a grant lets a person see the channel; its level changes; a revoke hides it again", func(t *testing.T) {
			access := "/console/channels/" + channelID + "/access"
			p := b.get(access).want(t, http.StatusOK)
			if !p.has("access") || !p.has("grants-empty") || !p.has("grant-form") || !strings.Contains(p.body, `value="`+pia.ID+`"`) {
				t.Fatalf("%.800s", p.body)
			}
			piaAPI.do(t, http.MethodGet, api("channels", channelID), nil).want(t, http.StatusNotFound)

			p = b.followOK(t, b.post(access, url.Values{"principal_id": {pia.ID}, "level": {"view"}}), access)
			if p.row("grant-row", "data-principal", pia.ID) == "" || !strings.Contains(p.row("grant-row", "data-principal", pia.ID), `data-level="view"`) {
				t.Fatalf("%.800s", p.body)
			}
			var ch channel
			piaAPI.do(t, http.MethodGet, api("channels", channelID), nil).want(t, http.StatusOK).decode(t, &ch)
			piaAPI.do(t, http.MethodPost, api("threads", ch.MainThreadID, "messages"), map[string]any{"content": "hi"}).
				want(t, http.StatusForbidden)

			p = b.followOK(t, b.post(access, url.Values{"principal_id": {pia.ID}, "level": {"post"}, "scope": {"channel"}}), access)
			if !strings.Contains(p.row("grant-row", "data-principal", pia.ID), `data-level="post"`) {
				t.Fatalf("%.800s", p.body)
			}
			piaAPI.mustPost(t, ch.MainThreadID, "hello from pia")

			b.followOK(t, b.post(access+"/revoke", url.Values{"principal_id": {pia.ID}, "scope": {"channel"}}), access)
			piaAPI.do(t, http.MethodGet, api("channels", channelID), nil).want(t, http.StatusNotFound)
		})

		t.Run("a grant on the space shows on the channel's access page and opens its channels", func(t *testing.T) {
			access := "/console/channels/" + channelID + "/access"
			p := b.followOK(t, b.post(access, url.Values{"principal_id": {pia.ID}, "level": {"view"}, "scope": {"space"}}), access)
			if tag := p.row("grant-row", "data-principal", pia.ID); !strings.Contains(tag, `data-scope="space"`) {
				t.Fatalf("%q in %.800s", tag, p.body)
			}
			piaAPI.do(t, http.MethodGet, api("channels", helpID), nil).want(t, http.StatusOK)
			b.followOK(t, b.post(access+"/revoke", url.Values{"principal_id": {pia.ID}, "scope": {"space"}}), access)
			piaAPI.do(t, http.MethodGet, api("channels", helpID), nil).want(t, http.StatusNotFound)
		})

		t.Run("a bad level is refused with a reason", func(t *testing.T) {
			access := "/console/channels/" + channelID + "/access"
			p := b.post(access, url.Values{"principal_id": {pia.ID}, "level": {"admin"}}).want(t, http.StatusSeeOther)
			if p = b.get(p.location()); !strings.Contains(p.body, `class="flash error"`) || p.has("grant-row") {
				t.Fatalf("%.800s", p.body)
			}
		})

		t.Run("someone who is no owner gets the 404 page, and a channel's manager its access page", func(t *testing.T) {
			pb := newBrowser(t, in.srv.public)
			mustConsoleSignIn(t, pb, "pia", "pia-password-1")
			for _, path := range []string{"/console/spaces", "/console/spaces/" + spaceID, "/console/agents", "/console/channels/" + channelID + "/access"} {
				if p := pb.get(path).want(t, http.StatusNotFound); !p.has("error-page") {
					t.Fatalf("%s: %.600s", path, p.body)
				}
			}
			pb.get("/console/chat")
			if p := pb.post("/console/spaces", url.Values{"name": {"Mine"}}).want(t, http.StatusNotFound); !p.has("error-page") {
				t.Fatalf("%.600s", p.body)
			}
			pb.post("/console/channels/"+channelID+"/archive", url.Values{}).want(t, http.StatusNotFound)
			in.owner.mustGrant(t, channelID, pia.ID, "manage")
			p := pb.get("/console/channels/"+channelID+"/access").want(t, http.StatusOK)
			if !strings.Contains(p.row("grant-row", "data-principal", pia.ID), `data-level="manage"`) {
				t.Fatalf("%.800s", p.body)
			}
			in.owner.do(t, http.MethodDelete, api("channels", channelID, "grants", pia.ID), nil).want(t, http.StatusNoContent)
			pb.get("/console/channels/"+channelID+"/access").want(t, http.StatusNotFound)
		})

		t.Run("forms without their CSRF token are refused and change nothing", func(t *testing.T) {
			for _, path := range []string{"/console/spaces", "/console/spaces/" + spaceID + "/channels", "/console/channels/" + channelID + "/archive",
				"/console/channels/" + channelID + "/access", "/console/agents"} {
				p := b.post(path, url.Values{"csrf_token": {""}, "name": {"sneaky"}, "handle": {"sneaky"}, "display_name": {"S"},
					"principal_id": {pia.ID}, "level": {"manage"}}).want(t, http.StatusForbidden)
				if !p.has("error-page") {
					t.Fatalf("%s: %.600s", path, p.body)
				}
			}
			var spaces page[space]
			in.owner.do(t, http.MethodGet, api("spaces"), nil).want(t, http.StatusOK).decode(t, &spaces)
			piaAPI.do(t, http.MethodGet, api("channels", channelID), nil).want(t, http.StatusNotFound)
			in.owner.do(t, http.MethodGet, api("channels", channelID), nil).want(t, http.StatusOK)
			if len(spaces.Items) != 1 {
				t.Fatalf("%d spaces", len(spaces.Items))
			}
		})

		t.Run("the owner archives a channel: gone from the console and the API", func(t *testing.T) {
			p := b.followOK(t, b.post("/console/channels/"+channelID+"/archive", url.Values{}), "/console/spaces/"+spaceID)
			if p.row("channel-row", "data-id", channelID) != "" || p.row("channel-row", "data-id", helpID) == "" {
				t.Fatalf("%.800s", p.body)
			}
			in.owner.do(t, http.MethodGet, api("channels", channelID), nil).want(t, http.StatusNotFound)
			b.get("/console/channels/"+channelID+"/access").want(t, http.StatusNotFound)
		})

		t.Run("a channel the API archives is gone from the console too", func(t *testing.T) {
			ch := in.owner.mustCreateChannel(t, spaceID, "attic")
			if p := b.get("/console/spaces/" + spaceID); p.row("channel-row", "data-id", ch.ID) == "" {
				t.Fatalf("%.800s", p.body)
			}
			in.owner.do(t, http.MethodPost, api("threads", ch.MainThreadID, "messages"), map[string]any{"content": "before"}).
				want(t, http.StatusCreated)
			r := in.owner.do(t, http.MethodPost, api("channels", ch.ID, "archive"), nil).want(t, http.StatusOK)
			if r.obj()["id"] != ch.ID || r.obj()["archived_at"] == nil {
				t.Fatalf("%s", r)
			}
			if p := b.get("/console/spaces/" + spaceID); p.row("channel-row", "data-id", ch.ID) != "" {
				t.Fatalf("%.800s", p.body)
			}
			in.owner.do(t, http.MethodPost, api("channels", ch.ID, "archive"), nil).want(t, http.StatusNotFound)
			in.owner.do(t, http.MethodPost, api("threads", ch.MainThreadID, "messages"), map[string]any{"content": "anyone?"}).
				want(t, http.StatusNotFound)
		})

		t.Run("the owner archives a space: it and its channels are gone from the console and the API", func(t *testing.T) {
			attic := in.owner.mustCreateSpace(t, "Attic")
			ch := in.owner.mustCreateChannel(t, attic.ID, "boxes")
			in.owner.do(t, http.MethodPost, api("threads", ch.MainThreadID, "messages"), map[string]any{"content": "old stuff"}).
				want(t, http.StatusCreated)
			b.get("/console/spaces/"+attic.ID).want(t, http.StatusOK)
			p := b.followOK(t, b.post("/console/spaces/"+attic.ID+"/archive", url.Values{}), "/console/spaces")
			if strings.Contains(p.body, attic.ID) || !p.has("flash") {
				t.Fatalf("%.800s", p.body)
			}
			b.get("/console/spaces/"+attic.ID).want(t, http.StatusNotFound)
			in.owner.do(t, http.MethodGet, api("spaces", attic.ID), nil).want(t, http.StatusNotFound)
			in.owner.do(t, http.MethodGet, api("channels", ch.ID), nil).want(t, http.StatusNotFound)
			in.owner.do(t, http.MethodPost, api("threads", ch.MainThreadID, "messages"), map[string]any{"content": "anyone?"}).
				want(t, http.StatusNotFound)
			// The API answers the archived space once, with archived_at; then it is gone.
			other := in.owner.mustCreateSpace(t, "Cellar")
			r := in.owner.do(t, http.MethodPost, api("spaces", other.ID, "archive"), nil).want(t, http.StatusOK)
			if r.obj()["id"] != other.ID || r.obj()["archived_at"] == nil {
				t.Fatalf("%s", r)
			}
			in.owner.do(t, http.MethodPost, api("spaces", other.ID, "archive"), nil).want(t, http.StatusNotFound)
		})

		var agentID, token string
		t.Run("the owner creates an agent; its token is shown once and works", func(t *testing.T) {
			p := b.get("/console/agents").want(t, http.StatusOK)
			if !p.has("agents") || !p.has("agents-empty") {
				t.Fatalf("%.800s", p.body)
			}
			created := b.post("/console/agents", url.Values{"handle": {"echo"}, "display_name": {"Echo"}, "description": {"Says it back"}}).
				want(t, http.StatusSeeOther)
			agentID = strings.TrimPrefix(created.location(), "/console/agents/")
			if strings.Contains(created.location(), "token") || strings.Contains(created.location(), "?") {
				t.Fatalf("location %q", created.location())
			}
			p = b.get(created.location()).want(t, http.StatusOK)
			m := tokenShown.FindStringSubmatch(p.body)
			if m == nil || !p.has("agent-connect") || !strings.Contains(p.body, "bothy agent echo --url ") {
				t.Fatalf("no token or hint: %.1200s", p.body)
			}
			token = m[1]
			if strings.Contains(created.location(), token) {
				t.Fatal("the token is in the URL")
			}
			var me user
			as(in.srv, token).do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK).decode(t, &me)
			if me.ID != agentID || me.Kind != "agent" || me.Handle != "echo" {
				t.Fatalf("the token is %+v", me)
			}
			if again := b.get(created.location()).want(t, http.StatusOK); again.has("agent-token") || strings.Contains(again.body, token) {
				t.Fatal("the token was shown twice")
			}
			p = b.get("/console/agents").want(t, http.StatusOK)
			if tag := p.row("agent-row", "data-id", agentID); tag == "" || !p.has("agent-offline") || !p.has("agent-active") {
				t.Fatalf("%.800s", p.body)
			}
		})

		t.Run("a reset token is shown once on the agent's page; the old one stops", func(t *testing.T) {
			reset := b.post("/console/agents/"+agentID+"/token", url.Values{}).want(t, http.StatusSeeOther)
			p := b.get(reset.location()).want(t, http.StatusOK)
			m := tokenShown.FindStringSubmatch(p.body)
			if m == nil || m[1] == token || !p.has("flash") {
				t.Fatalf("no new token: %.1200s", p.body)
			}
			as(in.srv, token).do(t, http.MethodGet, api("me"), nil).want(t, http.StatusUnauthorized)
			as(in.srv, m[1]).do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK)
			token = m[1]
			if again := b.get(reset.location()).want(t, http.StatusOK); again.has("agent-token") {
				t.Fatal("the new token was shown twice")
			}
		})

		t.Run("a taken handle is refused on the form, which keeps what was typed", func(t *testing.T) {
			p := b.post("/console/agents", url.Values{"handle": {"pia"}, "display_name": {"Not Pia"}}).want(t, http.StatusUnprocessableEntity)
			if !p.has("form-error") || !strings.Contains(p.body, `value="Not Pia"`) {
				t.Fatalf("%.800s", p.body)
			}
		})

		t.Run("an agent that polls is online, and its runs are listed", func(t *testing.T) {
			ac := as(in.srv, token)
			ac.do(t, http.MethodGet, api("agents", "me", "events")+"?wait=0s", nil).want(t, http.StatusOK)
			in.owner.mustGrant(t, helpID, agentID, "post")
			var ch channel
			in.owner.do(t, http.MethodGet, api("channels", helpID), nil).want(t, http.StatusOK).decode(t, &ch)
			in.owner.mustPost(t, ch.MainThreadID, "@echo are you there?")
			p := b.get("/console/agents/"+agentID).want(t, http.StatusOK)
			if !p.has("agent-online") || p.row("run-row", "data-status", "queued") == "" ||
				!strings.Contains(p.body, "/console/threads/"+ch.MainThreadID) {
				t.Fatalf("%.1500s", p.body)
			}
			if p := b.get("/console/agents").want(t, http.StatusOK); !p.has("agent-online") || !strings.Contains(p.body, "queued") {
				t.Fatalf("%.800s", p.body)
			}
		})

		t.Run("the owner names the agent a channel's operator and clears it", func(t *testing.T) {
			space := "/console/spaces/" + spaceID
			p := b.followOK(t, b.post("/console/channels/"+helpID+"/operator", url.Values{"agent_id": {agentID}}), space)
			if !p.has("channel-operator") {
				t.Fatalf("%.800s", p.body)
			}
			var ch struct {
				OperatorID *string `json:"operator_id"`
			}
			in.owner.do(t, http.MethodGet, api("channels", helpID), nil).want(t, http.StatusOK).decode(t, &ch)
			if ch.OperatorID == nil || *ch.OperatorID != agentID {
				t.Fatalf("the API reads operator %v", ch.OperatorID)
			}
			b.followOK(t, b.post("/console/channels/"+helpID+"/operator", url.Values{"agent_id": {""}}), space)
			in.owner.do(t, http.MethodGet, api("channels", helpID), nil).want(t, http.StatusOK).decode(t, &ch)
			if ch.OperatorID != nil {
				t.Fatalf("the operator stays: %v", *ch.OperatorID)
			}
			p = b.post("/console/channels/"+helpID+"/operator", url.Values{"agent_id": {pia.ID}}).want(t, http.StatusSeeOther)
			if p = b.get(p.location()); !strings.Contains(p.body, `class="flash error"`) {
				t.Fatalf("a person was named the operator: %.800s", p.body)
			}
		})

		t.Run("the owner disables the agent and enables it again", func(t *testing.T) {
			p := b.followOK(t, b.post("/console/agents/"+agentID+"/disable", url.Values{}), "/console/agents/"+agentID)
			if !p.has("agent-enable") || !p.has("agent-disabled") {
				t.Fatalf("%.800s", p.body)
			}
			as(in.srv, token).do(t, http.MethodGet, api("me"), nil).want(t, http.StatusUnauthorized)
			p = b.followOK(t, b.post("/console/agents/"+agentID+"/enable", url.Values{}), "/console/agents/"+agentID)
			if !p.has("agent-disable") || !p.has("agent-active") {
				t.Fatalf("%.800s", p.body)
			}
			as(in.srv, token).do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK)
		})
	})
}
