package storage

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
)

// ApprovalStore implements runs.ApprovalStore on approvals and approval_approvers (migration
// 0021): the approvers are rows of their own, so that a person's inbox is one range of the index
// (principal_id, approval_id), newest first by the ids' time order.
type ApprovalStore struct{ db *DB }

var _ runs.ApprovalStore = (*ApprovalStore)(nil)

// NewApprovalStore returns the approvals repository on db.
func NewApprovalStore(db *DB) *ApprovalStore { return &ApprovalStore{db: db} }

const approvalColumns = `a.id, a.run_id, a.agent_id, a.thread_id, a.channel_id, a.space_id, a.title, a.detail, a.state,
	a.decision, a.scope, a.decided_by, a.decided_at, a.expires_at, a.created_at, c.kind`

const approvalSelect = `SELECT ` + approvalColumns + ` FROM approvals a JOIN channels c ON c.id = a.channel_id`

// CreateApproval implements runs.ApprovalStore.
func (s *ApprovalStore) CreateApproval(ctx context.Context, a runs.Approval) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		var by any
		if a.By != nil {
			by = string(*a.By)
		}
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO approvals (id, run_id, agent_id, thread_id, channel_id, space_id,
			title, detail, state, decision, scope, decided_by, decided_at, expires_at, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			string(a.ID), string(a.RunID), string(a.AgentID), string(a.ThreadID), string(a.ChannelID), string(a.SpaceID),
			a.Title, a.Detail, string(a.State), nullStringPtr(a.Decision), nullStringPtr(a.Scope), by, fmtTimePtr(a.DecidedAt),
			fmtTime(a.ExpiresAt), fmtTime(a.CreatedAt))
		if err != nil {
			return s.db.mapErr(err, "approval")
		}
		for i, p := range a.ApproverIDs {
			if _, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO approval_approvers (approval_id, principal_id, position)
				VALUES (?, ?, ?)`, string(a.ID), string(p), i); err != nil {
				return s.db.mapErr(err, "approval approver")
			}
		}
		return nil
	})
}

// Approval implements runs.ApprovalStore.
func (s *ApprovalStore) Approval(ctx context.Context, id kernel.ID) (runs.Approval, error) {
	out, err := s.list(ctx, approvalSelect+` WHERE a.id = ?`, string(id))
	if err != nil {
		return runs.Approval{}, err
	}
	if len(out) == 0 {
		return runs.Approval{}, kernel.ErrNotFound
	}
	return out[0], nil
}

// PendingApprovals implements runs.ApprovalStore on the index (run_id, state).
func (s *ApprovalStore) PendingApprovals(ctx context.Context, runID kernel.ID) ([]runs.Approval, error) {
	return s.list(ctx, approvalSelect+` WHERE a.run_id = ? AND a.state = ? ORDER BY a.id`, string(runID), string(runs.ApprovalPending))
}

// RunsApprovals implements runs.ApprovalStore on the index (run_id, state): each run's latest
// approvals, at most runs.MaxApprovalsShown of each, oldest first.
func (s *ApprovalStore) RunsApprovals(ctx context.Context, runIDs []kernel.ID) ([]runs.Approval, error) {
	if len(runIDs) == 0 {
		return []runs.Approval{}, nil
	}
	args := make([]any, 0, len(runIDs)+1)
	for _, id := range runIDs {
		args = append(args, string(id))
	}
	all, err := s.list(ctx, approvalSelect+` WHERE a.run_id IN (`+placeholders(len(runIDs))+`) ORDER BY a.id DESC LIMIT ?`,
		append(args, runs.MaxApprovalsShown*len(runIDs))...)
	if err != nil {
		return nil, err
	}
	per := map[kernel.ID]int{}
	kept := make([]runs.Approval, 0, len(all))
	for _, a := range all { // newest first
		if per[a.RunID]++; per[a.RunID] <= runs.MaxApprovalsShown {
			kept = append(kept, a)
		}
	}
	slices.Reverse(kept)
	return kept, nil
}

// RunGrant implements runs.ApprovalStore on the index (run_id, title).
func (s *ApprovalStore) RunGrant(ctx context.Context, runID kernel.ID, title string) (runs.Approval, bool, error) {
	out, err := s.list(ctx, approvalSelect+` WHERE a.run_id = ? AND a.title = ? AND a.state = ? AND a.scope = ?
		ORDER BY a.id LIMIT 1`, string(runID), title, string(runs.ApprovalApproved), runs.ScopeRun)
	if err != nil || len(out) == 0 {
		return runs.Approval{}, false, err
	}
	return out[0], true, nil
}

// DecideApproval implements runs.ApprovalStore: the write is conditional on the stored state
// still being pending, so that of two decisions at once one wins and the other is told.
func (s *ApprovalStore) DecideApproval(ctx context.Context, a runs.Approval) error {
	var by any
	if a.By != nil {
		by = string(*a.By)
	}
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE approvals SET state = ?, decision = ?, scope = ?,
		decided_by = ?, decided_at = ? WHERE id = ? AND state = ?`,
		string(a.State), nullStringPtr(a.Decision), nullStringPtr(a.Scope), by, fmtTimePtr(a.DecidedAt), string(a.ID),
		string(runs.ApprovalPending))
	changed, err := s.db.changedRows(res, err, "approval")
	if err != nil || changed {
		return err
	}
	var state string
	if err := s.db.q(ctx).QueryRowContext(ctx, `SELECT state FROM approvals WHERE id = ?`, string(a.ID)).Scan(&state); err != nil {
		return s.db.mapErr(err, "approval")
	}
	return kernel.Errorf(runs.CodeApprovalDecided, "the approval is %s already", state)
}

// ApproverInbox implements runs.ApprovalStore on the index (principal_id, approval_id).
func (s *ApprovalStore) ApproverInbox(ctx context.Context, principal kernel.ID, state runs.ApprovalState, before kernel.ID, limit int) ([]runs.Approval, error) {
	q := approvalSelect + ` JOIN approval_approvers aa ON aa.approval_id = a.id WHERE aa.principal_id = ?`
	args := []any{string(principal)}
	if state != "" {
		q += ` AND a.state = ?`
		args = append(args, string(state))
	}
	if !before.IsZero() {
		q += ` AND aa.approval_id < ?`
		args = append(args, string(before))
	}
	q += ` ORDER BY aa.approval_id DESC LIMIT ?`
	return s.list(ctx, q, append(args, limit)...)
}

// list reads approvals by q, then their approvers in one more read.
func (s *ApprovalStore) list(ctx context.Context, q string, args ...any) ([]runs.Approval, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.db.mapErr(err, "approvals")
	}
	out := []runs.Approval{}
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			rows.Close()
			return nil, s.db.mapErr(err, "approvals")
		}
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.db.mapErr(err, "approvals")
	}
	if len(out) == 0 {
		return out, nil
	}
	idx := make(map[kernel.ID]int, len(out))
	ids := make([]any, 0, len(out))
	for i, a := range out {
		idx[a.ID] = i
		ids = append(ids, string(a.ID))
	}
	rows, err = s.db.q(ctx).QueryContext(ctx, `SELECT approval_id, principal_id FROM approval_approvers
		WHERE approval_id IN (`+placeholders(len(ids))+`) ORDER BY approval_id, position`, ids...)
	if err != nil {
		return nil, s.db.mapErr(err, "approval approvers")
	}
	defer rows.Close()
	for rows.Next() {
		var aid, pid kernel.ID
		if err := rows.Scan(&aid, &pid); err != nil {
			return nil, s.db.mapErr(err, "approval approvers")
		}
		i := idx[aid]
		out[i].ApproverIDs = append(out[i].ApproverIDs, pid)
	}
	return out, s.db.mapErr(rows.Err(), "approval approvers")
}

func scanApproval(sc interface{ Scan(...any) error }) (runs.Approval, error) {
	var a runs.Approval
	var state, expires, created string
	var decision, scope, by, decidedAt sql.NullString
	if err := sc.Scan(&a.ID, &a.RunID, &a.AgentID, &a.ThreadID, &a.ChannelID, &a.SpaceID, &a.Title, &a.Detail, &state,
		&decision, &scope, &by, &decidedAt, &expires, &created, &a.ChannelKind); err != nil {
		return a, err
	}
	a.State = runs.ApprovalState(state)
	if !a.State.Valid() {
		return a, fmt.Errorf("approval %s is in unknown state %q", a.ID, strings.ToValidUTF8(state, "?"))
	}
	if decision.Valid {
		a.Decision = &decision.String
	}
	if scope.Valid {
		a.Scope = &scope.String
	}
	if by.Valid {
		id := kernel.ID(by.String)
		a.By = &id
	}
	a.TimedOut = a.State == runs.ApprovalTimedOut
	a.DecidedAt, a.ExpiresAt, a.CreatedAt = parseNullTime(decidedAt), parseTime(expires), parseTime(created)
	a.ApproverIDs = []kernel.ID{}
	return a, nil
}
