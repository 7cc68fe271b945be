package storage

import (
	"context"
	"database/sql"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// AgentStore implements agents.Store. An agent's public fields live in two tables: its principal
// (identity's) and its agents row; reads join them.
type AgentStore struct{ db *DB }

var _ agents.Store = (*AgentStore)(nil)

// NewAgentStore returns the agents repository on db.
func NewAgentStore(db *DB) *AgentStore { return &AgentStore{db: db} }

// CreateAgent implements agents.Store.
func (s *AgentStore) CreateAgent(ctx context.Context, a agents.Agent) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO agents (principal_id, description, created_by, created_at) VALUES (?, ?, ?, ?)`,
		string(a.ID), a.Description, string(a.CreatedBy), fmtTime(a.CreatedAt))
	return s.db.mapErr(err, "agent")
}

const agentSelect = `SELECT p.id, p.kind, p.handle, p.display_name, a.description, p.status, p.created_at, a.created_by,
	p.updated_at, p.disabled_at FROM agents a JOIN principals p ON p.id = a.principal_id`

func scanAgent(sc interface{ Scan(...any) error }) (agents.Agent, error) {
	var a agents.Agent
	var id, kind, by, created, updated string
	var disabled sql.NullString
	if err := sc.Scan(&id, &kind, &a.Handle, &a.DisplayName, &a.Description, &a.Status, &created, &by, &updated, &disabled); err != nil {
		return a, err
	}
	a.ID, a.Kind, a.CreatedBy = kernel.ID(id), kernel.PrincipalKind(kind), kernel.ID(by)
	a.CreatedAt, a.UpdatedAt, a.DisabledAt = parseTime(created), parseTime(updated), parseNullTime(disabled)
	return a, nil
}

// Agent implements agents.Store.
func (s *AgentStore) Agent(ctx context.Context, id kernel.ID) (agents.Agent, error) {
	a, err := scanAgent(s.db.q(ctx).QueryRowContext(ctx, agentSelect+` WHERE a.principal_id = ?`, string(id)))
	return a, s.db.mapErr(err, "agent")
}

// Agents implements agents.Store: a keyset page on the agents primary key.
func (s *AgentStore) Agents(ctx context.Context, p chat.Page) ([]agents.Agent, bool, error) {
	q, args, desc := keysetQuery(agentSelect+` WHERE 1 = 1`, "a.principal_id", nil, p)
	rows, err := s.db.q(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, s.db.mapErr(err, "agents")
	}
	defer rows.Close()
	out := make([]agents.Agent, 0, p.Limit+1)
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, false, s.db.mapErr(err, "agents")
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.db.mapErr(err, "agents")
	}
	out, more := trimPage(out, p.Limit, desc)
	return out, more, nil
}
