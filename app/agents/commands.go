package agents

import (
	"context"
	"fmt"
	"strings"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// Command is one slash command an agent declares: a message that starts with /name invokes it
// (docs/runs.md, "Slash commands"). Description and ArgsHint are shown where people type.
type Command struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	ArgsHint    string `json:"args_hint"`
}

// The bounds of an agent's commands.
const (
	MaxCommands           = 50
	MaxCommandName        = 32
	MaxCommandDescription = 200
	MaxCommandArgsHint    = 100
)

// ValidCommandName reports whether name is a command's name: 1 to MaxCommandName lower-case
// letters, digits, '-' and '_'.
func ValidCommandName(name string) bool {
	if name == "" || len(name) > MaxCommandName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// ValidateCommands checks a whole set in order and returns it cleaned (description and hint
// trimmed). Errors: validation_failed naming the field (commands[2].name, …).
func ValidateCommands(cmds []Command) ([]Command, error) {
	if len(cmds) > MaxCommands {
		return nil, kernel.Invalid("commands", "an agent declares at most %d commands", MaxCommands)
	}
	out := make([]Command, 0, len(cmds))
	seen := make(map[string]bool, len(cmds))
	for i, c := range cmds {
		field := func(name string) string { return fmt.Sprintf("commands[%d].%s", i, name) }
		if !ValidCommandName(c.Name) {
			return nil, kernel.Invalid(field("name"), "a command's name is 1 to %d lower-case letters, digits, - and _", MaxCommandName)
		}
		if seen[c.Name] {
			return nil, kernel.Invalid(field("name"), "the command %q appears twice", c.Name)
		}
		seen[c.Name] = true
		desc, err := chat.CleanOptional(field("description"), strings.TrimSpace(c.Description), MaxCommandDescription)
		if err != nil {
			return nil, err
		}
		hint, err := chat.CleanOptional(field("args_hint"), strings.TrimSpace(c.ArgsHint), MaxCommandArgsHint)
		if err != nil {
			return nil, err
		}
		out = append(out, Command{Name: c.Name, Description: desc, ArgsHint: hint})
	}
	return out, nil
}

// SetCommands replaces the calling agent's whole set of slash commands (agent.commands.write: an
// agent, on its own) and answers the set as stored. Errors: unauthenticated, forbidden (not an
// agent), validation_failed.
func (s *Service) SetCommands(ctx context.Context, actor kernel.Actor, cmds []Command) ([]Command, error) {
	if err := s.authz.Authorize(ctx, actor, ActAgentCommandsWrite, instanceResource); err != nil {
		return nil, err
	}
	cmds, err := ValidateCommands(cmds)
	if err != nil {
		return nil, err
	}
	err = s.uow.Do(ctx, func(ctx context.Context) error { return s.store.SetCommands(ctx, actor.ID, cmds) })
	if err != nil {
		return nil, err
	}
	return cmds, nil
}

// Commands lists the calling agent's slash commands (agent.commands.write's reading side: an
// agent, its own). Errors: unauthenticated, forbidden.
func (s *Service) Commands(ctx context.Context, actor kernel.Actor) ([]Command, error) {
	if err := s.authz.Authorize(ctx, actor, ActAgentCommandsWrite, instanceResource); err != nil {
		return nil, err
	}
	return s.store.Commands(ctx, actor.ID)
}
