package pages

import (
	"strconv"

	"bothy.dev/bothy/ui/layouts"
)

// The views of the owner's spaces, channels, access and agents pages (handlers in
// ui/owner_spaces.go and ui/owner_agents.go). Every text is ready to show: times formatted,
// names resolved.

// Option is one entry of a select.
type Option struct {
	Value, Label string
}

// SpacesView is the list of spaces.
type SpacesView struct {
	Chrome layouts.Chrome
	Spaces []SpaceRow
}

// SpaceRow is one space of the list.
type SpaceRow struct {
	ID, Name string
	Channels int
	Created  string
}

// SpaceView is one space with its channels.
type SpaceView struct {
	Chrome   layouts.Chrome
	ID, Name string
	Created  string
	Channels []ChannelRow
	// Agents are the active agents one may name a channel's operator.
	Agents []Option
}

// ChannelRow is one channel of a space.
type ChannelRow struct {
	ID, Name, Topic string
	// OperatorID and Operator name the agent invoked by every new thread; "" for none.
	OperatorID, Operator string
	Created              string
}

// AccessView is "who can see this channel": the grants on the channel and on its space.
type AccessView struct {
	Chrome                 layouts.Chrome
	ChannelID, ChannelName string
	SpaceID, SpaceName     string
	// DM: a direct message, which grants on its space do not open.
	DM     bool
	Grants []GrantRow
	// Principals are the people and agents a level can be granted to.
	Principals []Option
	Levels     []LevelOption
	// SpaceScope: the viewer may grant on the space too (manage on the space).
	SpaceScope bool
	// Back is where the page leads back to (the space for an owner).
	Back, BackLabel string
}

// LevelOption is a level with what it allows.
type LevelOption struct {
	Name, Help string
}

// GrantRow is one grant: who, which level, on the channel or its whole space.
type GrantRow struct {
	PrincipalID  string
	Name, Handle string
	Kind         string // "person" or "agent"
	Level        string
	Scope        string // "channel" or "space"
	Since        string
	// Editable: the viewer may change and revoke this grant.
	Editable bool
}

// AgentsView is the list of agents.
type AgentsView struct {
	Chrome layouts.Chrome
	Agents []AgentRow
	// More: there are more agents than the list shows (the newest are shown).
	More bool
	// Handle, DisplayName and Description are kept after a refused form.
	Handle, DisplayName, Description string
	Error                            string
}

// AgentRow is one agent.
type AgentRow struct {
	ID, Handle, Name string
	Active           bool
	// Online: its consumer showed a sign of life recently; Seen says when ("never" when it never
	// connected).
	Online  bool
	Seen    string
	LastRun *RunRow
}

// AgentView is one agent's page.
type AgentView struct {
	Chrome      layouts.Chrome
	Agent       AgentRow
	Description string
	Created     string
	// Token is the agent's API token, shown once right after the agent was created; "" after.
	Token string
	// URL is the instance's address for the connect hint.
	URL  string
	Runs []RunRow
	// Budget is the agent's budget and usage, nil when the page has no budgets to show.
	Budget *AgentBudget
}

// AgentBudget is an agent's cap (Set) and its usage in the period: the cap's, or this month
// without one. The caps are the form's values ("" for none).
type AgentBudget struct {
	Set                  bool
	Period, PeriodStart  string
	MaxTokens, MaxCost   string
	UsedTokens, UsedCost string
	// Percent is the usage against the nearest cap (at most 100); Warned: the owners were warned
	// at 80 % in this period.
	Percent int
	Warned  bool
}

// RunRow is one run of an agent.
type RunRow struct {
	ID, Status, Reason string
	ThreadHref         string
	Created, Ended     string
}

func itoa(n int) string { return strconv.Itoa(n) }

// connectCommand is the README's "Connect a bot in five minutes" for this agent: save the token,
// start the reference agent.
func connectCommand(v AgentView) string {
	file := v.Agent.Handle + ".token"
	return "printf '%s\\n' 'TOKEN' > " + file + "\n" +
		"bothy agent echo --url " + v.URL + " --token-file " + file
}
