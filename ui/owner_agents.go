package ui

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/appliance/clientaddr"
	"bothy.dev/bothy/ui/pages"
)

// AgentRuns reads the latest runs of one agent, newest first, for its page. It authorizes
// nothing: the page shows only the runs Authorize lets the viewer read. *storage.RunStore
// implements it.
type AgentRuns interface {
	// AgentRuns returns at most limit runs of agentID, newest first. Errors: internal.
	AgentRuns(ctx context.Context, agentID kernel.ID, limit int) ([]runs.Run, error)
}

// AgentsSeen reads when each agent's consumer last showed a sign of life (agent_consumers.seen_at:
// a gateway connection or a REST poll, and every acknowledgement). *storage.AgentStore
// implements it.
type AgentsSeen interface {
	// ConsumersSeen returns the time of each of ids that was ever seen; the others are missing.
	// Errors: internal.
	ConsumersSeen(ctx context.Context, ids []kernel.ID) (map[kernel.ID]time.Time, error)
}

// agentOnlineWithin is how recent a sign of life must be for the console to call an agent
// online. The gateway marks the agents connected to it seen at least every 30 s (a quarter of
// agent.stall_timeout, at most 30 s) and a REST poll waits at most 25 s, so a minute and a half
// tells a connected agent from a gone one with room to spare.
const agentOnlineWithin = 90 * time.Second

// agentRunsShown is how many runs an agent's page lists.
const agentRunsShown = 10

// agentTokenCookie carries a new agent's API token from the create form to the agent's page,
// once: HttpOnly, scoped to that page, short-lived, read and cleared by the next GET. The token
// never appears in a URL or a log line.
const agentTokenCookie = "bothy_agent_token"

func agentPath(id kernel.ID) string { return "/console/agents/" + string(id) }

// agentRoutes registers the owner's agents pages.
func (c *Console) agentRoutes() {
	c.handle("GET /console/agents", ownerOnly, c.agentsPage)
	c.handle("POST /console/agents", ownerOnly, c.agentCreate)
	c.handle("GET /console/agents/{id}", ownerOnly, c.agentPage)
	c.handle("POST /console/agents/{id}/disable", ownerOnly, c.agentDisable)
	c.handle("POST /console/agents/{id}/enable", ownerOnly, c.agentEnable)
	c.handle("POST /console/agents/{id}/token", ownerOnly, c.agentResetToken)
	c.handle("POST /console/agents/{id}/budget", ownerOnly, c.agentBudgetSet)
	c.handle("POST /console/agents/{id}/budget/delete", ownerOnly, c.agentBudgetDelete)
}

func (c *Console) agentsPage(rq *request) error {
	return c.renderAgents(rq, http.StatusOK, pages.AgentsView{})
}

// renderAgents shows the list of agents with v's form (kept after a refused create).
func (c *Console) renderAgents(rq *request, status int, v pages.AgentsView) error {
	if c.d.Agents == nil {
		return kernel.ErrNotFound
	}
	list, more, err := c.d.Agents.List(rq.ctx(), rq.actor, chat.Page{Limit: chat.MaxPageLimit})
	if err != nil {
		return err
	}
	v.Chrome, v.More = c.chrome(rq, "Agents", "agents"), more
	rows, err := c.agentRows(rq, list, 1)
	if err != nil {
		return err
	}
	for i, r := range rows {
		v.Agents = append(v.Agents, r.row)
		if len(r.runs) > 0 {
			v.Agents[i].LastRun = &r.runs[0]
		}
	}
	return c.render(rq, status, pages.Agents(v))
}

// agentRow is an agent with its runs, as a page shows them.
type agentRow struct {
	row  pages.AgentRow
	runs []pages.RunRow
}

// agentRows makes the rows of agents, newest first, each with up to runsEach of its runs that
// the viewer may read, and whether its consumer was seen lately (one read for all).
func (c *Console) agentRows(rq *request, list []agents.Agent, runsEach int) ([]agentRow, error) {
	ids := make([]kernel.ID, len(list))
	for i, a := range list {
		ids[i] = a.ID
	}
	var seen map[kernel.ID]time.Time
	if c.d.AgentsSeen != nil {
		var err error
		if seen, err = c.d.AgentsSeen.ConsumersSeen(rq.ctx(), ids); err != nil {
			return nil, err
		}
	}
	now := c.d.Clock.Now()
	out := make([]agentRow, 0, len(list))
	for i := len(list) - 1; i >= 0; i-- { // the list comes in id order: newest last
		a := list[i]
		r := agentRow{row: pages.AgentRow{ID: string(a.ID), Handle: a.Handle, Name: a.DisplayName,
			Active: a.Status == agents.StatusActive, Seen: "never connected"}}
		if at, ok := seen[a.ID]; ok {
			r.row.Online = r.row.Active && now.Sub(at) < agentOnlineWithin
			r.row.Seen = "seen " + agoText(now, at)
		}
		var err error
		if r.runs, err = c.agentRunRows(rq, a.ID, runsEach); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// agentRunRows lists up to limit of the agent's latest runs that Authorize lets the viewer read
// (run.read: whoever may read its thread).
func (c *Console) agentRunRows(rq *request, id kernel.ID, limit int) ([]pages.RunRow, error) {
	if c.d.AgentRuns == nil || c.d.Authz == nil {
		return nil, nil
	}
	list, err := c.d.AgentRuns.AgentRuns(rq.ctx(), id, limit)
	if err != nil {
		return nil, err
	}
	var out []pages.RunRow
	for _, r := range list {
		err := c.d.Authz.Authorize(rq.ctx(), rq.actor, runs.ActRunRead, r.Resource())
		switch kernel.CodeOf(err) {
		case kernel.Code{}:
		case kernel.CodeNotFound, kernel.CodeForbidden:
			continue
		default:
			return nil, err
		}
		row := pages.RunRow{ID: string(r.ID), Status: string(r.Status), Reason: string(r.Reason),
			ThreadHref: runThreadHref(r), Created: whenText(r.CreatedAt)}
		if r.EndedAt != nil {
			row.Ended = whenText(*r.EndedAt)
		}
		out = append(out, row)
	}
	return out, nil
}

// runThreadHref is where the chat view shows a run's thread.
func runThreadHref(r runs.Run) string {
	return "/console/threads/" + string(r.ThreadID)
}

// agoText says how long ago at was, coarsely.
func agoText(now, at time.Time) string {
	d := now.Sub(at)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " min ago"
	case d < 48*time.Hour:
		return strconv.FormatInt(int64(d/time.Hour), 10) + " h ago"
	}
	return "on " + at.UTC().Format("2006-01-02")
}

// agentCreate creates an agent and leads to its page, which shows the token once.
func (c *Console) agentCreate(rq *request) error {
	if c.d.Agents == nil {
		return kernel.ErrNotFound
	}
	f := rq.r.PostForm
	in := agents.NewAgent{Handle: strings.TrimSpace(f.Get("handle")), DisplayName: f.Get("display_name"), Description: f.Get("description")}
	a, token, err := c.d.Agents.Create(rq.ctx(), rq.actor, in)
	if err != nil {
		if !refusal(err, kernel.CodeValidation, kernel.CodeConflict) {
			return err
		}
		v := pages.AgentsView{Handle: in.Handle, DisplayName: in.DisplayName, Description: in.Description, Error: formError(err)}
		return c.renderAgents(rq, http.StatusUnprocessableEntity, v)
	}
	c.leaveAgentToken(rq, a.ID, token)
	return c.formOutcome(rq, nil, agentPath(a.ID), "Agent @"+a.Handle+" created.")
}

// leaveAgentToken keeps a new token for the agent's page, which shows it once (takeAgentToken).
func (c *Console) leaveAgentToken(rq *request, id kernel.ID, token string) {
	c.leaveSecret(rq.w, agentTokenCookie, agentPath(id), token)
}

// agentResetToken gives the agent a new token (its others stop at once, its connections close)
// and shows it once on the agent's page, as at creation.
func (c *Console) agentResetToken(rq *request) error {
	if c.d.Agents == nil {
		return kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	a, token, err := c.d.Agents.ResetToken(rq.ctx(), rq.actor, id)
	if err == nil {
		c.leaveAgentToken(rq, a.ID, token)
	}
	return c.formOutcome(rq, err, agentPath(id), "Agent @"+a.Handle+" has a new token: the old one no longer works.")
}

// takeAgentToken reads the token agentCreate left for the agent's page and clears it, so that a
// reload no longer shows it.
func (c *Console) takeAgentToken(rq *request, id kernel.ID) string {
	token, _ := c.takeSecret(rq.w, rq.r, agentTokenCookie, agentPath(id))
	return token
}

func (c *Console) agentPage(rq *request) error {
	if c.d.Agents == nil {
		return kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	a, err := c.d.Agents.Get(rq.ctx(), rq.actor, id)
	if err != nil {
		return err
	}
	rows, err := c.agentRows(rq, []agents.Agent{a}, agentRunsShown)
	if err != nil {
		return err
	}
	budget, err := c.agentBudgetView(rq, a.ID)
	if err != nil {
		return err
	}
	v := pages.AgentView{Chrome: c.chrome(rq, a.DisplayName, "agents"), Agent: rows[0].row, Runs: rows[0].runs,
		Description: a.Description, Created: whenText(a.CreatedAt), Token: c.takeAgentToken(rq, a.ID), URL: c.publicBase(rq),
		Budget: budget}
	return c.render(rq, http.StatusOK, pages.Agent(v))
}

// publicBase is the instance's address for the connect hint: the configured public URL, or the
// address the browser used.
func (c *Console) publicBase(rq *request) string {
	if u := strings.TrimSuffix(c.d.PublicURL, "/"); u != "" {
		return u
	}
	cl := clientaddr.From(rq.r) // behind a trusted proxy, what the browser asked the proxy for
	return cl.Scheme + "://" + cl.Host
}

func (c *Console) agentDisable(rq *request) error {
	return c.agentStatus(rq, true)
}

func (c *Console) agentEnable(rq *request) error {
	return c.agentStatus(rq, false)
}

func (c *Console) agentStatus(rq *request, disable bool) error {
	if c.d.Agents == nil {
		return kernel.ErrNotFound
	}
	id, err := pathID(rq)
	if err != nil {
		return err
	}
	if disable {
		a, err := c.d.Agents.Disable(rq.ctx(), rq.actor, id)
		return c.formOutcome(rq, err, agentPath(id), "Agent @"+a.Handle+" disabled: its token no longer works.")
	}
	a, err := c.d.Agents.Enable(rq.ctx(), rq.actor, id)
	return c.formOutcome(rq, err, agentPath(id), "Agent @"+a.Handle+" enabled: its token works again.")
}
