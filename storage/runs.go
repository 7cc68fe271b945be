package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// RunStore implements runs.Store on the runs table. The run document is stored as JSON text
// (runs.Document) next to its version; the version column is the truth the document is read
// with.
type RunStore struct{ db *DB }

var (
	_ runs.Store  = (*RunStore)(nil)
	_ runs.Agents = (*AgentStore)(nil)
)

// NewRunStore returns the runs repository on db.
func NewRunStore(db *DB) *RunStore { return &RunStore{db: db} }

// CreateRun implements runs.Store.
func (s *RunStore) CreateRun(ctx context.Context, r runs.Run) error {
	doc, err := json.Marshal(r.Document)
	if err != nil {
		return fmt.Errorf("storage: encode run document: %w", err)
	}
	_, err = s.db.q(ctx).ExecContext(ctx, `INSERT INTO runs (id, agent_id, thread_id, channel_id, space_id, trigger_message_id,
		invoked_by, status, reason, version, document, cancel_requested_at, created_at, started_at, ended_at, last_activity_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		string(r.ID), string(r.AgentID), string(r.ThreadID), string(r.ChannelID), string(r.SpaceID), nullIDPtr(r.TriggerMessageID),
		string(r.InvokedBy), string(r.Status), emptyAsNull(string(r.Reason)), r.Version, string(doc), fmtTimePtr(r.CancelRequestedAt),
		fmtTime(r.CreatedAt), fmtTimePtr(r.StartedAt), fmtTimePtr(r.EndedAt), fmtTime(r.LastActivityAt), fmtTime(r.UpdatedAt))
	return s.db.mapErr(err, "run")
}

// UpdateRun implements runs.Store.
func (s *RunStore) UpdateRun(ctx context.Context, r runs.Run) error {
	doc, err := json.Marshal(r.Document)
	if err != nil {
		return fmt.Errorf("storage: encode run document: %w", err)
	}
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE runs SET status = ?, reason = ?, version = ?, document = ?, cancel_requested_at = ?,
		started_at = ?, ended_at = ?, last_activity_at = ?, updated_at = ? WHERE id = ?`,
		string(r.Status), emptyAsNull(string(r.Reason)), r.Version, string(doc), fmtTimePtr(r.CancelRequestedAt),
		fmtTimePtr(r.StartedAt), fmtTimePtr(r.EndedAt), fmtTime(r.LastActivityAt), fmtTime(r.UpdatedAt), string(r.ID))
	return s.db.oneRowOrNotFound(res, err, "run")
}

const runSelect = `SELECT r.id, r.agent_id, r.thread_id, r.channel_id, r.space_id, r.trigger_message_id, r.invoked_by, r.status,
	r.reason, r.version, r.document, r.cancel_requested_at, r.created_at, r.started_at, r.ended_at, r.last_activity_at,
	r.updated_at, c.kind FROM runs r JOIN channels c ON c.id = r.channel_id`

func scanRun(sc interface{ Scan(...any) error }) (runs.Run, error) {
	var r runs.Run
	var trigger, reason, cancel, started, ended sql.NullString
	var status, doc, created, active, updated string
	if err := sc.Scan(&r.ID, &r.AgentID, &r.ThreadID, &r.ChannelID, &r.SpaceID, &trigger, &r.InvokedBy, &status, &reason,
		&r.Version, &doc, &cancel, &created, &started, &ended, &active, &updated, &r.ChannelKind); err != nil {
		return r, err
	}
	if trigger.Valid {
		id := kernel.ID(trigger.String)
		r.TriggerMessageID = &id
	}
	r.Status, r.Reason = runs.Status(status), runs.Reason(reason.String)
	if !r.Status.Valid() {
		return r, fmt.Errorf("run %s is in unknown state %q", r.ID, status)
	}
	if err := json.Unmarshal([]byte(doc), &r.Document); err != nil {
		return r, fmt.Errorf("run %s: decode its document: %w", r.ID, err)
	}
	r.Document.Version = r.Version
	r.CancelRequestedAt, r.StartedAt, r.EndedAt = parseNullTime(cancel), parseNullTime(started), parseNullTime(ended)
	r.CreatedAt, r.LastActivityAt, r.UpdatedAt = parseTime(created), parseTime(active), parseTime(updated)
	return r, nil
}

// Run implements runs.Store.
func (s *RunStore) Run(ctx context.Context, id kernel.ID) (runs.Run, error) {
	r, err := scanRun(s.db.q(ctx).QueryRowContext(ctx, runSelect+` WHERE r.id = ?`, string(id)))
	return r, s.db.mapErr(err, "run")
}

// ThreadRuns implements runs.Store: a keyset page on the index (thread_id, id).
func (s *RunStore) ThreadRuns(ctx context.Context, threadID kernel.ID, p chat.Page) ([]runs.Run, bool, error) {
	q, args, desc := keysetQuery(runSelect+` WHERE r.thread_id = ?`, "r.id", []any{string(threadID)}, p)
	out, err := s.list(ctx, q, args...)
	if err != nil {
		return nil, false, err
	}
	out, more := trimPage(out, p.Limit, desc)
	return out, more, nil
}

// UnendedRuns implements runs.Store on the index (agent_id, status).
func (s *RunStore) UnendedRuns(ctx context.Context, agentID kernel.ID) ([]runs.Run, error) {
	return s.list(ctx, runSelect+` WHERE r.agent_id = ? AND r.status IN (?, ?, ?) ORDER BY r.id`, string(agentID),
		string(runs.StatusQueued), string(runs.StatusRunning), string(runs.StatusWaitingInput))
}

// StalledRuns implements runs.Store.
func (s *RunStore) StalledRuns(ctx context.Context, before time.Time, limit int) ([]runs.Run, error) {
	return s.list(ctx, runSelect+` WHERE r.status IN (?, ?) AND r.last_activity_at < ? ORDER BY r.last_activity_at, r.id LIMIT ?`,
		string(runs.StatusRunning), string(runs.StatusWaitingInput), fmtTime(before), limit)
}

func (s *RunStore) list(ctx context.Context, q string, args ...any) ([]runs.Run, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.db.mapErr(err, "runs")
	}
	defer rows.Close()
	out := []runs.Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, s.db.mapErr(err, "runs")
		}
		out = append(out, r)
	}
	return out, s.db.mapErr(rows.Err(), "runs")
}

// AgentStatuses implements runs.Agents: the status of each principal among ids that has an agents
// row, in one read.
func (s *AgentStore) AgentStatuses(ctx context.Context, ids []kernel.ID) (map[kernel.ID]string, error) {
	out := make(map[kernel.ID]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = string(id)
	}
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT p.id, p.status FROM agents a JOIN principals p ON p.id = a.principal_id
		WHERE a.principal_id IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return nil, s.db.mapErr(err, "agents")
	}
	defer rows.Close()
	for rows.Next() {
		var id kernel.ID
		var status string
		if err := rows.Scan(&id, &status); err != nil {
			return nil, s.db.mapErr(err, "agents")
		}
		out[id] = status
	}
	return out, s.db.mapErr(rows.Err(), "agents")
}

// ConsumersSeen implements runs.Agents on agent_consumers.seen_at, in one read.
func (s *AgentStore) ConsumersSeen(ctx context.Context, ids []kernel.ID) (map[kernel.ID]time.Time, error) {
	out := make(map[kernel.ID]time.Time, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = string(id)
	}
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT agent_id, seen_at FROM agent_consumers
		WHERE agent_id IN (`+placeholders(len(ids))+`) AND seen_at <> ''`, args...)
	if err != nil {
		return nil, s.db.mapErr(err, "agent consumers")
	}
	defer rows.Close()
	for rows.Next() {
		var id kernel.ID
		var seen string
		if err := rows.Scan(&id, &seen); err != nil {
			return nil, s.db.mapErr(err, "agent consumers")
		}
		out[id] = parseTime(seen)
	}
	return out, s.db.mapErr(rows.Err(), "agent consumers")
}

// Principal implements runs.Agents on principals.
func (s *AgentStore) Principal(ctx context.Context, id kernel.ID) (kernel.Actor, bool, error) {
	var kind, handle, status string
	var owner int
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT kind, handle, is_owner, status FROM principals WHERE id = ?`, string(id)).
		Scan(&kind, &handle, &owner, &status)
	if err != nil {
		return kernel.Actor{}, false, s.db.mapErr(err, "principal")
	}
	return kernel.Actor{ID: id, Kind: kernel.PrincipalKind(kind), Handle: handle, IsOwner: owner != 0}, status == "active", nil
}

// nullIDPtr maps a nil id to SQL NULL.
func nullIDPtr(id *kernel.ID) any {
	if id == nil {
		return nil
	}
	return nullID(*id)
}

// AgentRuns returns the latest limit runs of an agent, newest first, for the console's page of
// the agent (ui's port). It authorizes nothing: the caller decides run.read on each.
func (s *RunStore) AgentRuns(ctx context.Context, agentID kernel.ID, limit int) ([]runs.Run, error) {
	return s.list(ctx, runSelect+` WHERE r.agent_id = ? ORDER BY r.id DESC LIMIT ?`, string(agentID), limit)
}
