package storage

import (
	"context"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// The slash commands of agents (migration 0022): agent_commands, one row per agent and name,
// position keeping the order the agent gave.

// SetCommands implements agents.Store: the agent's rows are replaced whole.
func (s *AgentStore) SetCommands(ctx context.Context, id kernel.ID, cmds []agents.Command) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		if _, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM agent_commands WHERE agent_id = ?`, string(id)); err != nil {
			return s.db.mapErr(err, "commands")
		}
		for i, c := range cmds {
			if _, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO agent_commands (agent_id, name, description, args_hint, position)
				VALUES (?, ?, ?, ?, ?)`, string(id), c.Name, c.Description, c.ArgsHint, i); err != nil {
				return s.db.mapErr(err, "commands")
			}
		}
		return nil
	})
}

// Commands implements agents.Store.
func (s *AgentStore) Commands(ctx context.Context, id kernel.ID) ([]agents.Command, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT name, description, args_hint FROM agent_commands WHERE agent_id = ? ORDER BY position`,
		string(id))
	if err != nil {
		return nil, s.db.mapErr(err, "commands")
	}
	defer rows.Close()
	out := []agents.Command{}
	for rows.Next() {
		var c agents.Command
		if err := rows.Scan(&c.Name, &c.Description, &c.ArgsHint); err != nil {
			return nil, s.db.mapErr(err, "commands")
		}
		out = append(out, c)
	}
	return out, s.db.mapErr(rows.Err(), "commands")
}

// CommandHolders implements runs.Agents on the index agent_commands_name.
func (s *AgentStore) CommandHolders(ctx context.Context, name string) ([]runs.CommandHolder, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT c.agent_id, p.handle, p.status FROM agent_commands c
		JOIN principals p ON p.id = c.agent_id WHERE c.name = ? ORDER BY p.handle_key`, name)
	if err != nil {
		return nil, s.db.mapErr(err, "commands")
	}
	defer rows.Close()
	var out []runs.CommandHolder
	for rows.Next() {
		var h runs.CommandHolder
		if err := rows.Scan(&h.AgentID, &h.Handle, &h.Status); err != nil {
			return nil, s.db.mapErr(err, "commands")
		}
		out = append(out, h)
	}
	return out, s.db.mapErr(rows.Err(), "commands")
}

// ActiveCommands implements runs.Agents.
func (s *AgentStore) ActiveCommands(ctx context.Context) ([]runs.ChannelCommand, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT c.agent_id, p.handle, c.name, c.description, c.args_hint FROM agent_commands c
		JOIN principals p ON p.id = c.agent_id WHERE p.status = 'active' ORDER BY p.handle_key, c.position`)
	if err != nil {
		return nil, s.db.mapErr(err, "commands")
	}
	defer rows.Close()
	var out []runs.ChannelCommand
	for rows.Next() {
		var c runs.ChannelCommand
		if err := rows.Scan(&c.AgentID, &c.AgentHandle, &c.Name, &c.Description, &c.ArgsHint); err != nil {
			return nil, s.db.mapErr(err, "commands")
		}
		out = append(out, c)
	}
	return out, s.db.mapErr(rows.Err(), "commands")
}

// DisabledAgents implements runs.Agents on principals' handle keys, in one read.
func (s *AgentStore) DisabledAgents(ctx context.Context, handleKeys []string) ([]kernel.ID, error) {
	if len(handleKeys) == 0 {
		return nil, nil
	}
	args := make([]any, len(handleKeys))
	for i, k := range handleKeys {
		args[i] = k
	}
	return s.ids(ctx, "principals", `SELECT id FROM principals WHERE kind = 'agent' AND status <> 'active'
		AND handle_key IN (`+placeholders(len(handleKeys))+`)`, args...)
}
