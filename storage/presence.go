package storage

import (
	"context"
	"slices"
	"strings"
	"time"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/app/kernel"
)

// PresenceStore implements gateway.PresenceStore on gateway_presence: the live people
// connections of every node of a cluster. Only several nodes use it (PostgreSQL); on SQLite the
// table stays empty, but the repository works the same there, as the tests show.
type PresenceStore struct{ db *DB }

var _ gateway.PresenceStore = (*PresenceStore)(nil)

// NewPresenceStore returns the presence repository on db.
func NewPresenceStore(db *DB) *PresenceStore { return &PresenceStore{db: db} }

// presenceChunks are the only numbers of rows a multi-row statement of this file writes, largest
// first: a few statement texts, so that the writer's cache of prepared statements (which starts
// over when full) is not filled with one text per count of rows.
var presenceChunks = []int{250, 16, 1}

// inChunks calls fn with ids cut into chunks of the sizes of presenceChunks.
func inChunks(ids []kernel.ID, fn func(chunk []kernel.ID) error) error {
	for _, size := range presenceChunks {
		for len(ids) >= size {
			if err := fn(ids[:size]); err != nil {
				return err
			}
			ids = ids[size:]
		}
	}
	return nil
}

// WritePresence implements gateway.PresenceStore.
func (s *PresenceStore) WritePresence(ctx context.Context, node, principal kernel.ID, connections int, at time.Time) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		if connections <= 0 {
			_, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM gateway_presence WHERE node_id = ? AND principal_id = ?`,
				string(node), string(principal))
			return s.db.mapErr(err, "presence")
		}
		return s.upsert(ctx, node, []kernel.ID{principal}, map[kernel.ID]int{principal: connections}, at)
	})
}

// FlushPresence implements gateway.PresenceStore.
func (s *PresenceStore) FlushPresence(ctx context.Context, node kernel.ID, counts map[kernel.ID]int, at, stale time.Time) error {
	ids := make([]kernel.ID, 0, len(counts))
	for id, n := range counts {
		if n > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids) // the same lock order on every node
	return s.db.Do(ctx, func(ctx context.Context) error {
		q := s.db.q(ctx)
		if _, err := q.ExecContext(ctx, `DELETE FROM gateway_presence WHERE updated_at < ?`, fmtTime(stale)); err != nil {
			return s.db.mapErr(err, "presence")
		}
		rows, err := q.QueryContext(ctx, `SELECT principal_id FROM gateway_presence WHERE node_id = ?`, string(node))
		if err != nil {
			return s.db.mapErr(err, "presence")
		}
		var gone []kernel.ID
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return s.db.mapErr(err, "presence")
			}
			if counts[kernel.ID(id)] <= 0 {
				gone = append(gone, kernel.ID(id))
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.db.mapErr(err, "presence")
		}
		err = inChunks(gone, func(chunk []kernel.ID) error {
			args := []any{string(node)}
			for _, id := range chunk {
				args = append(args, string(id))
			}
			_, err := q.ExecContext(ctx, `DELETE FROM gateway_presence WHERE node_id = ? AND principal_id IN (`+placeholders(len(chunk))+`)`, args...)
			return s.db.mapErr(err, "presence")
		})
		if err != nil {
			return err
		}
		return s.upsert(ctx, node, ids, counts, at)
	})
}

// upsert writes node's rows of ids with their counts, updated at at, in multi-row statements.
func (s *PresenceStore) upsert(ctx context.Context, node kernel.ID, ids []kernel.ID, counts map[kernel.ID]int, at time.Time) error {
	when := fmtTime(at)
	return inChunks(ids, func(chunk []kernel.ID) error {
		args := make([]any, 0, 4*len(chunk))
		for _, id := range chunk {
			args = append(args, string(node), string(id), counts[id], when)
		}
		values := strings.Repeat("(?, ?, ?, ?), ", len(chunk)-1) + "(?, ?, ?, ?)"
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO gateway_presence (node_id, principal_id, connections, updated_at) VALUES `+values+`
			ON CONFLICT (node_id, principal_id) DO UPDATE SET connections = excluded.connections, updated_at = excluded.updated_at`, args...)
		return s.db.mapErr(err, "presence")
	})
}

// PresenceRows implements gateway.PresenceStore.
func (s *PresenceStore) PresenceRows(ctx context.Context, principal kernel.ID, since time.Time) ([]gateway.PresenceRow, error) {
	q := `SELECT node_id, principal_id, connections, updated_at FROM gateway_presence WHERE updated_at >= ?`
	args := []any{fmtTime(since)}
	if !principal.IsZero() {
		q += ` AND principal_id = ?`
		args = append(args, string(principal))
	}
	rows, err := s.db.q(ctx).QueryContext(ctx, q+` ORDER BY principal_id, node_id`, args...)
	if err != nil {
		return nil, s.db.mapErr(err, "presence")
	}
	defer rows.Close()
	var out []gateway.PresenceRow
	for rows.Next() {
		var r gateway.PresenceRow
		var node, id, at string
		if err := rows.Scan(&node, &id, &r.Connections, &at); err != nil {
			return nil, s.db.mapErr(err, "presence")
		}
		r.Node, r.Principal, r.UpdatedAt = kernel.ID(node), kernel.ID(id), parseTime(at)
		out = append(out, r)
	}
	return out, s.db.mapErr(rows.Err(), "presence")
}

// DeleteNodePresence implements gateway.PresenceStore.
func (s *PresenceStore) DeleteNodePresence(ctx context.Context, node kernel.ID) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM gateway_presence WHERE node_id = ?`, string(node))
		return s.db.mapErr(err, "presence")
	})
}
