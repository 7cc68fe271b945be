package runs

import (
	"context"
	"strings"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// CommandCall is a slash command at the start of a message: "/name args" or "/name@handle args".
type CommandCall struct {
	Name string
	// Handle names the agent (lower case) when the message wrote /name@handle, else "".
	Handle string
	// Args is the rest of the message after the command, trimmed.
	Args string
}

// InvocationCommand is the command of an invocation as agent.invocation carries it.
type InvocationCommand struct {
	Name string `json:"name"`
	Args string `json:"args"`
}

// ParseCommand reads the slash command content starts with: a '/', a command's name
// (agents.ValidCommandName), optionally '@' and an agent's handle, then the end or white space.
// ok is false for anything else ("/ hello", "/Deploy", "/deploy!", a path like "/usr/bin").
func ParseCommand(content string) (c CommandCall, ok bool) {
	if !strings.HasPrefix(content, "/") {
		return c, false
	}
	rest := content[1:]
	i := 0
	for i < len(rest) && rest[i] != '@' && !isSpace(rest[i]) {
		i++
	}
	c.Name, rest = rest[:i], rest[i:]
	if !agents.ValidCommandName(c.Name) {
		return CommandCall{}, false
	}
	if strings.HasPrefix(rest, "@") {
		j := 1
		for j < len(rest) && !isSpace(rest[j]) {
			j++
		}
		c.Handle, rest = strings.ToLower(rest[1:j]), rest[j:]
		if c.Handle == "" {
			return CommandCall{}, false
		}
	}
	if rest != "" && !isSpace(rest[0]) {
		return CommandCall{}, false
	}
	c.Args = strings.TrimSpace(rest)
	return c, true
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// CommandHolder is an agent that declares a command: the trigger's candidates for /name.
type CommandHolder struct {
	AgentID kernel.ID
	Handle  string
	Status  string
}

// ChannelCommand is one command people may type in a channel, with the agent that answers it.
type ChannelCommand struct {
	agents.Command
	AgentID     kernel.ID `json:"agent_id"`
	AgentHandle string    `json:"agent_handle"`
}

// commandTarget picks the agent a slash command invokes among the holders of its name: the one
// its @handle names, the only holder, or the only one of several that is active and may read
// the channel. ambiguous are the agents that could answer when several could and the message
// named none of them; a zero target without ambiguity means no agent declares the command (an ordinary message).
func (s *Service) commandTarget(ctx context.Context, call CommandCall, author kernel.ID, channel kernel.Resource) (target kernel.ID, ambiguous []kernel.ID, err error) {
	holders, err := s.agents.CommandHolders(ctx, call.Name)
	if err != nil {
		return kernel.NilID, nil, err
	}
	var named []CommandHolder
	for _, h := range holders {
		if h.AgentID == author || call.Handle != "" && !strings.EqualFold(h.Handle, call.Handle) {
			continue
		}
		named = append(named, h)
	}
	switch len(named) {
	case 0:
		return kernel.NilID, nil, nil
	case 1:
		return named[0].AgentID, nil, nil
	}
	var usable []kernel.ID
	for _, h := range named {
		if h.Status != agents.StatusActive {
			continue
		}
		reads, err := s.allowed(ctx, kernel.Actor{ID: h.AgentID, Kind: kernel.KindAgent}, chat.ActChannelRead, channel)
		if err != nil {
			return kernel.NilID, nil, err
		}
		if reads {
			usable = append(usable, h.AgentID)
		}
	}
	switch len(usable) {
	case 0:
		return named[0].AgentID, nil, nil // its refusal is the message's state
	case 1:
		return usable[0], nil, nil
	}
	return kernel.NilID, usable, nil
}

// ChannelCommands lists the slash commands the actor may type in a channel: those of the active
// agents that may read it, when the actor holds invoke there (none otherwise), by the agents'
// handles and each agent's own order. Errors: unauthenticated, not_found (a channel the actor
// may not read).
func (s *Service) ChannelCommands(ctx context.Context, actor kernel.Actor, channelID kernel.ID) ([]ChannelCommand, error) {
	ch, err := s.structure.Channel(ctx, channelID)
	if err != nil {
		return nil, err
	}
	res := ch.Resource()
	if err := s.authz.Authorize(ctx, actor, chat.ActChannelRead, res); err != nil {
		return nil, err
	}
	out := []ChannelCommand{}
	may, err := s.allowed(ctx, actor, ActAgentInvoke, res)
	if err != nil || !may {
		return out, err
	}
	all, err := s.agents.ActiveCommands(ctx)
	if err != nil {
		return nil, err
	}
	reads := map[kernel.ID]bool{}
	for _, c := range all {
		ok, seen := reads[c.AgentID]
		if !seen {
			if ok, err = s.allowed(ctx, kernel.Actor{ID: c.AgentID, Kind: kernel.KindAgent}, chat.ActChannelRead, res); err != nil {
				return nil, err
			}
			reads[c.AgentID] = ok
		}
		if ok && c.AgentID != actor.ID {
			out = append(out, c)
		}
	}
	return out, nil
}
