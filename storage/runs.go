package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// RunStore implements runs.Store on the runs table and run_output (migration 0011). The run
// document's status line and steps are stored as JSON text (runDocHead) next to its version,
// which is the truth the document is read with. Its output is stored in parts, rows of
// run_output keyed by the version of the latest patch each holds (part 0 for an output that a
// run was made with or that migration 0011 moved), and runs.output_bytes keeps its length: a
// patch writes its own part and the small columns of its run, never the whole output (foldParts
// merges the latest parts into the new one now and then, so that few remain). A replace deletes
// the parts and writes one. The reads that answer a run join the parts in order
// (string_agg, which both engines have).
type RunStore struct{ db *DB }

var (
	_ runs.Store  = (*RunStore)(nil)
	_ runs.Agents = (*AgentStore)(nil)
)

// NewRunStore returns the runs repository on db.
func NewRunStore(db *DB) *RunStore { return &RunStore{db: db} }

// runDocHead is the stored JSON of a run document: what a patch upserts but the output, which
// run_output holds, and the version, which the version column holds.
type runDocHead struct {
	Status string      `json:"status"`
	Steps  []runs.Step `json:"steps"`
}

func encodeDocHead(d runs.Document) (string, error) {
	if d.Steps == nil {
		d.Steps = []runs.Step{}
	}
	b, err := json.Marshal(runDocHead{Status: d.Status, Steps: d.Steps})
	if err != nil {
		return "", fmt.Errorf("storage: encode run document: %w", err)
	}
	return string(b), nil
}

// CreateRun implements runs.Store.
func (s *RunStore) CreateRun(ctx context.Context, r runs.Run) error {
	doc, err := encodeDocHead(r.Document)
	if err != nil {
		return err
	}
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO runs (id, agent_id, thread_id, channel_id, space_id, trigger_message_id,
			invoked_by, status, reason, version, document, cancel_requested_at, created_at, started_at, ended_at, last_activity_at,
			updated_at, output_bytes, depth)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			string(r.ID), string(r.AgentID), string(r.ThreadID), string(r.ChannelID), string(r.SpaceID), nullIDPtr(r.TriggerMessageID),
			string(r.InvokedBy), string(r.Status), emptyAsNull(string(r.Reason)), r.Version, doc, fmtTimePtr(r.CancelRequestedAt),
			fmtTime(r.CreatedAt), fmtTimePtr(r.StartedAt), fmtTimePtr(r.EndedAt), fmtTime(r.LastActivityAt), fmtTime(r.UpdatedAt),
			len(r.Document.Output), r.Depth)
		if err != nil {
			return s.db.mapErr(err, "run")
		}
		s.db.countCreated(ctx, statRuns, r.CreatedAt)
		return s.insertPart(ctx, r.ID, r.Version, r.Document.Output)
	})
}

// UpdateRun implements runs.Store: the state columns only, never the document.
func (s *RunStore) UpdateRun(ctx context.Context, r runs.Run) error {
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE runs SET status = ?, reason = ?, error_message = ?, cancel_requested_at = ?,
		started_at = ?, ended_at = ?, last_activity_at = ?, updated_at = ? WHERE id = ?`,
		string(r.Status), emptyAsNull(string(r.Reason)), nullStringPtr(r.ErrorMessage), fmtTimePtr(r.CancelRequestedAt),
		fmtTimePtr(r.StartedAt), fmtTimePtr(r.EndedAt), fmtTime(r.LastActivityAt), fmtTime(r.UpdatedAt), string(r.ID))
	return s.db.oneRowOrNotFound(res, err, "run")
}

// PatchRun implements runs.Store. The row is updated on the condition that its version is the
// patch's base, before the part is written: of two patches for the same version only one writes,
// and the other finds no row and answers run_version_conflict.
func (s *RunStore) PatchRun(ctx context.Context, r runs.Run, p runs.Patch) error {
	set, args := `status = ?, reason = ?, version = ?, output_bytes = ?, cancel_requested_at = ?, started_at = ?, ended_at = ?,
		last_activity_at = ?, updated_at = ?, input_tokens = ?, output_tokens = ?, cost_micros = ?`, []any{string(r.Status),
		emptyAsNull(string(r.Reason)), r.Version, r.OutputBytes, fmtTimePtr(r.CancelRequestedAt), fmtTimePtr(r.StartedAt),
		fmtTimePtr(r.EndedAt), fmtTime(r.LastActivityAt), fmtTime(r.UpdatedAt), r.Usage.InputTokens, r.Usage.OutputTokens,
		runs.Micros(r.Usage.CostUSD)}
	if p.Status != nil || len(p.Steps) > 0 {
		doc, err := encodeDocHead(r.Document)
		if err != nil {
			return err
		}
		set, args = set+`, document = ?`, append(args, doc)
	}
	return s.db.Do(ctx, func(ctx context.Context) error {
		res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE runs SET `+set+` WHERE id = ? AND version = ?`,
			append(args, string(r.ID), p.BaseVersion())...)
		if err != nil {
			return s.db.mapErr(err, "run")
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.db.mapErr(err, "run")
		} else if n == 0 {
			var v int
			if err := s.db.q(ctx).QueryRowContext(ctx, `SELECT version FROM runs WHERE id = ?`, string(r.ID)).Scan(&v); err != nil {
				return s.db.mapErr(err, "run")
			}
			return kernel.Errorf(runs.CodeRunVersionConflict, "the run document is at version %d: the next patch has version %d", v, v+1)
		}
		if p.Output != nil {
			if _, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM run_output WHERE run_id = ?`, string(r.ID)); err != nil {
				return s.db.mapErr(err, "run output")
			}
			return s.insertPart(ctx, r.ID, r.Version, *p.Output+p.OutputAppend)
		}
		text, err := s.foldParts(ctx, r.ID, r.Version)
		if err != nil {
			return err
		}
		return s.insertPart(ctx, r.ID, r.Version, text+p.OutputAppend)
	})
}

// foldParts deletes the parts of run id between version v-lowbit(v) and v (both excluded) and
// returns their text, which the part of version v then begins with: a Fenwick tree over the
// versions. A run's output so keeps at most about log2(v)+2 parts, which a read joins cheaply,
// and each byte appended is rewritten at most log2(v) times, so a patch costs its own size
// times log2 of the version, never the output so far. A patch without output folds too, so
// that runs which append only every other patch do not pile up parts.
func (s *RunStore) foldParts(ctx context.Context, id kernel.ID, v int) (string, error) {
	lo := v - v&-v
	if v-lo < 2 {
		return "", nil // no version lies between
	}
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT text FROM run_output WHERE run_id = ? AND part > ? AND part < ? ORDER BY part`,
		string(id), lo, v)
	if err != nil {
		return "", s.db.mapErr(err, "run output")
	}
	defer rows.Close()
	var b strings.Builder
	n := 0
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return "", s.db.mapErr(err, "run output")
		}
		b.WriteString(t)
		n++
	}
	if err := rows.Err(); err != nil {
		return "", s.db.mapErr(err, "run output")
	}
	if n == 0 {
		return "", nil
	}
	if _, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM run_output WHERE run_id = ? AND part > ? AND part < ?`, string(id), lo, v); err != nil {
		return "", s.db.mapErr(err, "run output")
	}
	return b.String(), nil
}

// insertPart writes text as part of run id's output; an empty text is no part.
func (s *RunStore) insertPart(ctx context.Context, id kernel.ID, part int, text string) error {
	if text == "" {
		return nil
	}
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO run_output (run_id, part, text) VALUES (?, ?, ?)`, string(id), part, text)
	return s.db.mapErr(err, "run output")
}

// runColumns are the columns scanRun reads; runSelect adds the output joined from its parts
// (NULL without any), runHeadSelect does without it.
const runColumns = `SELECT r.id, r.agent_id, r.thread_id, r.channel_id, r.space_id, r.trigger_message_id, r.invoked_by, r.status,
	r.reason, r.version, r.document, r.cancel_requested_at, r.created_at, r.started_at, r.ended_at, r.last_activity_at,
	r.updated_at, c.kind, r.output_bytes, r.error_message, r.depth, r.input_tokens, r.output_tokens, r.cost_micros`

const (
	runSelect = runColumns + `, (SELECT string_agg(o.text, '' ORDER BY o.part) FROM run_output o WHERE o.run_id = r.id)
	FROM runs r JOIN channels c ON c.id = r.channel_id`
	runHeadSelect = runColumns + `, NULL FROM runs r JOIN channels c ON c.id = r.channel_id`
)

func scanRun(sc interface{ Scan(...any) error }) (runs.Run, error) {
	var r runs.Run
	var trigger, reason, cancel, started, ended, errMsg, output sql.NullString
	var status, doc, created, active, updated string
	var costMicros int64
	if err := sc.Scan(&r.ID, &r.AgentID, &r.ThreadID, &r.ChannelID, &r.SpaceID, &trigger, &r.InvokedBy, &status, &reason,
		&r.Version, &doc, &cancel, &created, &started, &ended, &active, &updated, &r.ChannelKind, &r.OutputBytes, &errMsg,
		&r.Depth, &r.Usage.InputTokens, &r.Usage.OutputTokens, &costMicros, &output); err != nil {
		return r, err
	}
	r.Usage.CostUSD = runs.FromMicros(costMicros)
	if trigger.Valid {
		id := kernel.ID(trigger.String)
		r.TriggerMessageID = &id
	}
	r.Status, r.Reason = runs.Status(status), runs.Reason(reason.String)
	if errMsg.Valid {
		r.ErrorMessage = &errMsg.String
	}
	if !r.Status.Valid() {
		return r, fmt.Errorf("run %s is in unknown state %q", r.ID, status)
	}
	if err := json.Unmarshal([]byte(doc), &r.Document); err != nil {
		return r, fmt.Errorf("run %s: decode its document: %w", r.ID, err)
	}
	r.Document.Version, r.Document.Output = r.Version, output.String
	r.CancelRequestedAt, r.StartedAt, r.EndedAt = parseNullTime(cancel), parseNullTime(started), parseNullTime(ended)
	r.CreatedAt, r.LastActivityAt, r.UpdatedAt = parseTime(created), parseTime(active), parseTime(updated)
	return r, nil
}

// Run implements runs.Store.
func (s *RunStore) Run(ctx context.Context, id kernel.ID) (runs.Run, error) {
	r, err := scanRun(s.db.q(ctx).QueryRowContext(ctx, runSelect+` WHERE r.id = ?`, string(id)))
	return r, s.db.mapErr(err, "run")
}

// RunHead implements runs.Store.
func (s *RunStore) RunHead(ctx context.Context, id kernel.ID) (runs.Run, error) {
	r, err := scanRun(s.db.q(ctx).QueryRowContext(ctx, runHeadSelect+` WHERE r.id = ?`, string(id)))
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
	return s.list(ctx, runHeadSelect+` WHERE r.agent_id = ? AND r.status IN (?, ?, ?) ORDER BY r.id`, string(agentID),
		string(runs.StatusQueued), string(runs.StatusRunning), string(runs.StatusWaitingInput))
}

// StalledRuns implements runs.Store. A run waiting for a pending approval is not stalled: it
// waits for a person, and the approval's own timeout bounds the wait.
func (s *RunStore) StalledRuns(ctx context.Context, before time.Time, limit int) ([]runs.Run, error) {
	return s.list(ctx, runHeadSelect+` WHERE r.status IN (?, ?) AND r.last_activity_at < ?
		AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.run_id = r.id AND a.state = ?)
		ORDER BY r.last_activity_at, r.id LIMIT ?`,
		string(runs.StatusRunning), string(runs.StatusWaitingInput), fmtTime(before), string(runs.ApprovalPending), limit)
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

func nullStringPtr(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// AgentRuns returns the latest limit runs of an agent, newest first, for the console's page of
// the agent (ui's port), without their output. It authorizes nothing: the caller decides run.read
// on each.
func (s *RunStore) AgentRuns(ctx context.Context, agentID kernel.ID, limit int) ([]runs.Run, error) {
	return s.list(ctx, runHeadSelect+` WHERE r.agent_id = ? ORDER BY r.id DESC LIMIT ?`, string(agentID), limit)
}
