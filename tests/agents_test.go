package tests

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// agent is an agent as the API shows it; Token is set only in the answer of its creation.
type agent struct {
	ID          string  `json:"id"`
	Kind        string  `json:"kind"`
	Handle      string  `json:"handle"`
	DisplayName string  `json:"display_name"`
	Description string  `json:"description"`
	Status      string  `json:"status"`
	CreatedAt   string  `json:"created_at"`
	CreatedBy   string  `json:"created_by"`
	DisabledAt  *string `json:"disabled_at"`
	Token       string  `json:"token"`
}

// mustCreateAgent has the owner create an agent and returns it with a client on its token.
func (in *instance) mustCreateAgent(tb testing.TB, handle string) (agent, *client) {
	tb.Helper()
	var a agent
	in.owner.do(tb, http.MethodPost, api("agents"), map[string]any{
		"handle": handle, "display_name": "Agent " + handle, "description": "the " + handle + " agent",
	}).want(tb, http.StatusCreated).decode(tb, &a)
	if !strings.HasPrefix(a.Token, "bothy_") {
		tb.Fatalf("agent %s came with token %q", handle, a.Token)
	}
	return a, as(in.srv, a.Token)
}

// keepAgent makes the token of the answer the client called name.
func keepAgent(name string) func(t *testing.T, p *play, r *response) {
	return func(t *testing.T, p *play, r *response) {
		tok, _ := r.obj()["token"].(string)
		if !strings.HasPrefix(tok, "bothy_") || len(tok) < len("bothy_")+20 {
			t.Fatalf("%s: token %q, want bothy_ and a long secret", r, tok)
		}
		p.clients[name] = as(p.srv, tok)
	}
}

// TestAgents covers what an owner does with agents over the REST API: create one (its token shown
// once and working as the agent), read and list them, refuse what is bad, disable and enable,
// grant an agent read like a person, and name it the operator of a channel.
func TestAgents(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		piaU, pia := in.mustCreateUser(t, "pia")
		p := newPlay(in.srv)
		p.clients["owner"], p.clients["pia"] = in.owner, pia
		p.vars["owner"] = map[string]any{"id": in.me.ID}
		p.vars["pia"] = map[string]any{"id": piaU.ID}
		bad := func(field string) map[string]any { return map[string]any{"code": "validation_failed", "field": field} }
		p.run(t, []scenario{
			{
				name: "a person who is no owner may not create an agent", as: "pia", method: "POST", path: api("agents"),
				body: map[string]any{"handle": "echo", "display_name": "Echo"}, status: http.StatusForbidden,
				fields: map[string]any{"code": "forbidden"},
			},
			{
				name: "the owner creates an agent and sees its token once", as: "owner", method: "POST", path: api("agents"),
				body:   map[string]any{"handle": "echo", "display_name": "Echo", "description": "Says back what it reads."},
				status: http.StatusCreated, save: "echo", events: []string{"agent.created"}, check: keepAgent("echo"),
				fields: map[string]any{"kind": "agent", "handle": "echo", "display_name": "Echo", "description": "Says back what it reads.",
					"status": "active", "created_by": "{owner.id}", "disabled_at": nil, "id": present, "created_at": present, "token": present},
			},
			{
				name: "the token authenticates as the agent", as: "echo", method: "GET", path: api("me"), status: http.StatusOK,
				fields: map[string]any{"id": "{echo.id}", "kind": "agent", "handle": "echo", "is_owner": false, "status": "active"},
			},
			{
				name: "a handle an agent holds is taken, in any case", as: "owner", method: "POST", path: api("agents"),
				body: map[string]any{"handle": "ECHO", "display_name": "Another"}, status: http.StatusConflict,
				fields: map[string]any{"code": "conflict", "field": "handle"},
			},
			{
				name: "a handle a person holds is taken too", as: "owner", method: "POST", path: api("agents"),
				body: map[string]any{"handle": "pia", "display_name": "Not Pia"}, status: http.StatusConflict,
				fields: map[string]any{"code": "conflict", "field": "handle"},
			},
			{
				name: "a handle with a space is refused", as: "owner", method: "POST", path: api("agents"),
				body: map[string]any{"handle": "my bot", "display_name": "Bot"}, status: http.StatusBadRequest, fields: bad("handle"),
			},
			{
				name: "a long description is refused", as: "owner", method: "POST", path: api("agents"),
				body:   map[string]any{"handle": "wordy", "display_name": "Wordy", "description": strings.Repeat("w", 501)},
				opts:   []reqOption{breaksDocument()}, // the document's maxLength says so too
				status: http.StatusBadRequest, fields: bad("description"),
			},
			{
				name: "a missing display name is refused", as: "owner", method: "POST", path: api("agents"),
				body: map[string]any{"handle": "mute"}, opts: []reqOption{breaksDocument()}, status: http.StatusBadRequest,
				fields: bad("display_name"),
			},
			{
				name: "an agent cannot be made an owner", as: "owner", method: "POST", path: api("agents"),
				body: map[string]any{"handle": "boss", "display_name": "Boss", "is_owner": true}, opts: []reqOption{breaksDocument()},
				status: http.StatusBadRequest, fields: bad("is_owner"),
			},
			{
				name: "a person lists the agents, never with a token", as: "pia", method: "GET", path: api("agents"), status: http.StatusOK,
				fields: map[string]any{"has_more": false},
				check: func(t *testing.T, p *play, r *response) {
					var l page[agent]
					r.decode(t, &l)
					if len(l.Items) != 1 || l.Items[0].ID != p.lookup(t, "echo.id") || l.Items[0].Token != "" {
						t.Errorf("agents %+v, want only echo, without its token", l.Items)
					}
				},
			},
			{
				name: "a person reads one agent", as: "pia", method: "GET", path: api("agents", "{echo.id}"), status: http.StatusOK,
				fields: map[string]any{"id": "{echo.id}", "handle": "echo", "description": "Says back what it reads.", "token": absent},
			},
			{
				name: "a person's id is no agent", as: "pia", method: "GET", path: api("agents", "{pia.id}"), status: http.StatusNotFound,
				fields: map[string]any{"code": "not_found"},
			},
			{
				name: "an agent may not list the agents", as: "echo", method: "GET", path: api("agents"), status: http.StatusForbidden,
			},
			{
				name: "an agent has no owner's rights", as: "echo", method: "POST", path: api("spaces"), body: map[string]any{"name": "mine"},
				status: http.StatusForbidden,
			},
			{
				name: "the owner makes a space", as: "owner", method: "POST", path: api("spaces"), body: map[string]any{"name": "Bots"},
				status: http.StatusCreated, save: "sp", events: []string{"space.created"},
			},
			{
				name: "and a channel without an operator", as: "owner", method: "POST", path: api("spaces", "{sp.id}", "channels"),
				body: map[string]any{"name": "help"}, status: http.StatusCreated, save: "ch", events: []string{"channel.created", "thread.created"},
				fields: map[string]any{"operator_id": nil},
			},
			{
				name: "the agent does not see the channel yet", as: "echo", method: "GET", path: api("channels", "{ch.id}"),
				status: http.StatusNotFound,
			},
			{
				name: "an agent that cannot read the channel cannot operate it", as: "owner", method: "PUT", path: api("channels", "{ch.id}", "operator"),
				body: map[string]any{"agent_id": "{echo.id}"}, status: http.StatusBadRequest, fields: bad("agent_id"),
			},
			{
				name: "the owner grants the agent view like a person", as: "owner", method: "POST", path: api("channels", "{ch.id}", "grants"),
				body: map[string]any{"principal_id": "{echo.id}", "level": "view"}, status: http.StatusCreated, events: []string{"grant.changed"},
				fields: map[string]any{"principal_id": "{echo.id}", "level": "view"},
			},
			{
				name: "the agent reads the channel with its grant", as: "echo", method: "GET", path: api("channels", "{ch.id}"),
				status: http.StatusOK, fields: map[string]any{"id": "{ch.id}"},
			},
			{
				name: "the owner names the agent the channel's operator", as: "owner", method: "PUT", path: api("channels", "{ch.id}", "operator"),
				body: map[string]any{"agent_id": "{echo.id}"}, status: http.StatusOK, events: []string{"channel.updated"},
				fields: map[string]any{"id": "{ch.id}", "operator_id": "{echo.id}"},
			},
			{
				name: "the channel shows its operator", as: "echo", method: "GET", path: api("channels", "{ch.id}"), status: http.StatusOK,
				fields: map[string]any{"operator_id": "{echo.id}"},
			},
			{
				name: "naming the same operator again changes nothing", as: "owner", method: "PUT", path: api("channels", "{ch.id}", "operator"),
				body: map[string]any{"agent_id": "{echo.id}"}, status: http.StatusOK, fields: map[string]any{"operator_id": "{echo.id}"},
			},
			{
				name: "a person is no operator", as: "owner", method: "PUT", path: api("channels", "{ch.id}", "operator"),
				body: map[string]any{"agent_id": "{pia.id}"}, status: http.StatusBadRequest, fields: bad("agent_id"),
			},
			{
				name: "a malformed agent_id is refused", as: "owner", method: "PUT", path: api("channels", "{ch.id}", "operator"),
				body: map[string]any{"agent_id": "echo"}, status: http.StatusBadRequest, fields: bad("agent_id"),
			},
			{
				name: "agent_id is required", as: "owner", method: "PUT", path: api("channels", "{ch.id}", "operator"),
				body: map[string]any{}, opts: []reqOption{breaksDocument()}, status: http.StatusBadRequest, fields: bad("agent_id"),
			},
			{
				name: "a person who cannot see the channel cannot name its operator", as: "pia", method: "PUT", path: api("channels", "{ch.id}", "operator"),
				body: map[string]any{"agent_id": "{echo.id}"}, status: http.StatusNotFound,
			},
			{
				name: "an agent that reads the channel cannot name itself", as: "echo", method: "PUT", path: api("channels", "{ch.id}", "operator"),
				body: map[string]any{"agent_id": "{echo.id}"}, status: http.StatusForbidden,
			},
			{
				name: "a person who is no owner may not disable an agent", as: "pia", method: "POST", path: api("agents", "{echo.id}", "disable"),
				status: http.StatusForbidden,
			},
			{
				name: "an agent is not disabled as a person", as: "owner", method: "POST", path: api("users", "{echo.id}", "disable"),
				status: http.StatusNotFound,
			},
			{
				name: "the owner disables the agent", as: "owner", method: "POST", path: api("agents", "{echo.id}", "disable"),
				status: http.StatusOK, events: []string{"agent.updated"}, fields: map[string]any{"status": "disabled", "disabled_at": present},
			},
			{
				name: "the disabled agent's token answers 401 at once", as: "echo", method: "GET", path: api("me"),
				status: http.StatusUnauthorized, fields: map[string]any{"code": "unauthenticated"},
			},
			{
				name: "a disabled agent cannot be named an operator", as: "owner", method: "PUT", path: api("channels", "{ch.id}", "operator"),
				body: map[string]any{"agent_id": "{echo.id}"}, status: http.StatusBadRequest, fields: bad("agent_id"),
			},
			{
				name: "the channel keeps naming it while it is disabled", as: "owner", method: "GET", path: api("channels", "{ch.id}"),
				status: http.StatusOK, fields: map[string]any{"operator_id": "{echo.id}"},
			},
			{
				name: "the owner enables the agent", as: "owner", method: "POST", path: api("agents", "{echo.id}", "enable"),
				status: http.StatusOK, events: []string{"agent.updated"}, fields: map[string]any{"status": "active", "disabled_at": nil},
			},
			{
				name: "the same token works again", as: "echo", method: "GET", path: api("me"), status: http.StatusOK,
				fields: map[string]any{"status": "active"},
			},
			{
				name: "the agent still reads the channel with the grant it had", as: "echo", method: "GET", path: api("channels", "{ch.id}"),
				status: http.StatusOK,
			},
			{
				name: "the owner removes the operator", as: "owner", method: "DELETE", path: api("channels", "{ch.id}", "operator"),
				status: http.StatusNoContent, events: []string{"channel.updated"},
			},
			{
				name: "the channel has no operator", as: "owner", method: "GET", path: api("channels", "{ch.id}"), status: http.StatusOK,
				fields: map[string]any{"operator_id": nil},
			},
			{
				name: "removing it again changes nothing", as: "owner", method: "DELETE", path: api("channels", "{ch.id}", "operator"),
				status: http.StatusNoContent,
			},
			{
				name: "the agents' events reach people, never an agent", as: "pia", method: "GET", path: "/api/v1/events?after=0",
				status: http.StatusOK, events: anyEvents,
				check: func(t *testing.T, p *play, r *response) {
					var pg eventPage
					r.decode(t, &pg)
					var got []string
					for _, e := range pg.Events {
						if strings.HasPrefix(e.Type, "agent.") {
							got = append(got, e.Type)
							if _, has := e.Data["token"]; has || strings.Contains(jsonText(e.Data), "bothy_") {
								t.Errorf("%s holds a token: %v", e.Type, e.Data)
							}
						}
					}
					if want := []string{"agent.created", "agent.updated", "agent.updated"}; !slices.Equal(got, want) {
						t.Errorf("a person sees %v, want %v", got, want)
					}
					echo := p.client(t, "echo")
					evs, _ := echo.mustAllEvents(t, 0)
					for _, e := range evs {
						if strings.HasPrefix(e.Type, "agent.") || strings.HasPrefix(e.Type, "user.") {
							t.Errorf("the agent sees %s", e.Type)
						}
					}
				},
			},
		})
	})
}

// TestAgentGateway connects an agent to the gateway with its token, like a bot: it receives the
// events of the channel it was granted read on (and no other), a disable closes it with 4004 and
// its token stops at once, and once enabled it connects again.
func TestAgentGateway(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		a, ac := w.in.mustCreateAgent(t, "helper")
		start := w.in.owner.mustHead(t)
		w.in.owner.mustGrant(t, w.shared.ID, a.ID, "view")
		b := mustStartBot(t, "helper", w.in.srv.public, a.Token, botclient.WithCursor(start))

		t.Run("the agent's connection receives the events of the channel it may read, and no other", func(t *testing.T) {
			hidden := w.in.owner.mustPost(t, w.privTh.Thread.ID, "not for the agent")
			seen := w.alice.mustPost(t, w.sharedTh.Thread.ID, "hello @helper")
			seq := seqOf(t, w.in.owner, start, "alice's message", func(e event) bool { return e.Data["id"] == seen.ID })
			b.waitSeq(t, seq, 10*time.Second)
			for _, e := range b.handed() {
				if strings.Contains(string(e.Data), hidden.ID) {
					t.Errorf("the agent was handed %s of a channel it may not read", e.Type)
				}
			}
			if !slices.ContainsFunc(b.handed(), func(e botclient.Event) bool { return e.Type == "message.created" && e.Seq == seq }) {
				t.Errorf("the agent was not handed alice's message at %d", seq)
			}
			mustMatchCatchUp(t, b, ac, start)
		})

		t.Run("disabling the agent closes its connection with 4004 and its token stops", func(t *testing.T) {
			w.in.owner.do(t, http.MethodPost, api("agents", a.ID, "disable"), nil).want(t, http.StatusOK)
			select {
			case <-b.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the agent's bot still runs 10 s after the agent was disabled")
			}
			if err := b.stop(t); !errors.Is(err, botclient.ErrAuthenticationFailed) {
				t.Errorf("the bot ended with %v, want ErrAuthenticationFailed", err)
			}
			ac.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusUnauthorized)
			rc := mustDialGateway(t, w.in.srv.public, dialOptions{})
			rc.mustSend(t, "identify", map[string]any{"token": a.Token})
			if code, _ := rc.closeCode(5 * time.Second); code != 4004 {
				t.Errorf("identify with the disabled agent's token closed with %d, want 4004", code)
			}
		})

		t.Run("enabled again, the agent connects with the same token and receives again", func(t *testing.T) {
			w.in.owner.do(t, http.MethodPost, api("agents", a.ID, "enable"), nil).want(t, http.StatusOK)
			ac.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK)
			again := mustStartBot(t, "helper-again", w.in.srv.public, a.Token, botclient.WithCursor(w.in.owner.mustHead(t)))
			m := w.alice.mustPost(t, w.sharedTh.Thread.ID, "welcome back")
			seq := seqOf(t, w.in.owner, start, "the new message", func(e event) bool { return e.Data["id"] == m.ID })
			again.waitSeq(t, seq, 10*time.Second)

			t.Run("a reset token closes the agent's connection with 4004; the old token stops, the new one works", func(t *testing.T) {
				var reset agent
				w.in.owner.do(t, http.MethodPost, api("agents", a.ID, "token"), nil).want(t, http.StatusOK).decode(t, &reset)
				if reset.ID != a.ID || !strings.HasPrefix(reset.Token, "bothy_") || reset.Token == a.Token {
					t.Fatalf("reset answered %+v", reset)
				}
				select {
				case <-again.done:
				case <-time.After(10 * time.Second):
					t.Fatal("the agent's bot still runs 10 s after its token was reset")
				}
				if err := again.stop(t); !errors.Is(err, botclient.ErrAuthenticationFailed) {
					t.Errorf("the bot ended with %v, want ErrAuthenticationFailed", err)
				}
				ac.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusUnauthorized)
				as(w.in.srv, reset.Token).do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK)
				w.alice.do(t, http.MethodPost, api("agents", a.ID, "token"), nil).want(t, http.StatusForbidden)
			})
		})
	})
}
