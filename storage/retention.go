package storage

import (
	"context"
	"database/sql"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// Retention: the prunes the retention job runs (appliance/retention.go), each one batch in a
// short Unit of Work of its own that reports how many rows it removed, so that the job calls it
// again until a batch removes fewer than its limit and no transaction holds the writer for long.
// Messages are not pruned here: MessagesBefore only finds them, and messaging deletes each as a
// person's delete would (messaging.ExpireMessages), never by a DELETE of its row.

// RetainedAfter returns the seq after which every committed event is still in the log: the seq
// just before the oldest kept event, 0 while nothing was pruned. A cursor below it has lost
// events to retention. It reads the smallest seq on the primary key, so it costs one index step.
func (db *DB) RetainedAfter(ctx context.Context) (int64, error) {
	var oldest sql.NullInt64
	if err := db.q(ctx).QueryRowContext(ctx, `SELECT MIN(seq) FROM event_log`).Scan(&oldest); err != nil {
		return 0, db.mapErr(err, "event log")
	}
	if !oldest.Valid || oldest.Int64 < 1 {
		return 0, nil
	}
	return oldest.Int64 - 1, nil
}

// PruneEventsBefore removes up to limit of the oldest events logged before t, never the newest
// event of the log: the head stays, so that the oldest kept seq is always known and a cursor at
// the head always valid. It walks the log from its oldest event in seq order and stops at the
// first one logged at or after t, so a batch reads at most limit rows on the primary key (an
// event stamped earlier than one before it, by a clock set back, waits for the next run).
func (db *DB) PruneEventsBefore(ctx context.Context, t time.Time, limit int) (int64, error) {
	var n int64
	err := db.Do(ctx, func(ctx context.Context) error {
		n = 0
		q := db.q(ctx)
		var newest sql.NullInt64
		if err := q.QueryRowContext(ctx, `SELECT MAX(seq) FROM event_log`).Scan(&newest); err != nil {
			return db.mapErr(err, "event log")
		}
		if !newest.Valid {
			return nil
		}
		rows, err := q.QueryContext(ctx, `SELECT seq, created_at FROM event_log WHERE seq < ? ORDER BY seq LIMIT ?`,
			newest.Int64, limit)
		if err != nil {
			return db.mapErr(err, "event log")
		}
		cutoff := fmtTime(t)
		var through int64
		for rows.Next() {
			var seq int64
			var created string
			if err := rows.Scan(&seq, &created); err != nil {
				rows.Close()
				return db.mapErr(err, "event log")
			}
			if created >= cutoff {
				break
			}
			through, n = seq, n+1
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return db.mapErr(err, "event log")
		}
		if n == 0 {
			return nil
		}
		_, err = q.ExecContext(ctx, `DELETE FROM event_log WHERE seq <= ?`, through)
		return db.mapErr(err, "event log")
	})
	return n, err
}

// PruneRevisionsBefore removes up to limit of the earlier versions of edited messages that were
// written before t. The messages themselves, with their current content, stay.
func (db *DB) PruneRevisionsBefore(ctx context.Context, t time.Time, limit int) (int64, error) {
	var n int64
	err := db.Do(ctx, func(ctx context.Context) error {
		res, err := db.q(ctx).ExecContext(ctx, `DELETE FROM message_revisions WHERE (message_id, version) IN (
			SELECT message_id, version FROM message_revisions WHERE created_at < ? LIMIT ?)`, fmtTime(t), limit)
		if err != nil {
			return db.mapErr(err, "message revisions")
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// PruneRunOutputBefore removes the output of up to limit runs that ended before t, and returns
// how many runs it emptied. A run that has not ended keeps its output whatever its age; an
// emptied run keeps its row, its status and its steps, with an output of length 0.
func (db *DB) PruneRunOutputBefore(ctx context.Context, t time.Time, limit int) (int64, error) {
	var n int64
	err := db.Do(ctx, func(ctx context.Context) error {
		const ended = `SELECT r.id FROM runs r WHERE r.ended_at IS NOT NULL AND r.ended_at < ?
			AND EXISTS (SELECT 1 FROM run_output o WHERE o.run_id = r.id) LIMIT ?`
		rows, err := db.q(ctx).QueryContext(ctx, ended, fmtTime(t), limit)
		if err != nil {
			return db.mapErr(err, "runs")
		}
		var ids []any
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return db.mapErr(err, "runs")
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return db.mapErr(err, "runs")
		}
		n = int64(len(ids))
		if n == 0 {
			return nil
		}
		in := placeholders(len(ids))
		if _, err := db.q(ctx).ExecContext(ctx, `DELETE FROM run_output WHERE run_id IN (`+in+`)`, ids...); err != nil {
			return db.mapErr(err, "run output")
		}
		_, err = db.q(ctx).ExecContext(ctx, `UPDATE runs SET output_bytes = 0 WHERE id IN (`+in+`)`, ids...)
		return db.mapErr(err, "runs")
	})
	return n, err
}

var _ messaging.Expiring = (*MessageStore)(nil)

// MessagesBefore implements messaging.Expiring: it walks the messages in the order of their
// ids (UUIDv7, so the oldest first) on the primary key, past the tombstones, and stops at the
// first one created at t or later: ids and creation times grow together, so the walk reads no
// further than what it expires (a walk with created_at < t in its WHERE would read the whole
// table when nothing is old enough). A message whose time is a moment out of order with its id
// goes one run later.
func (s *MessageStore) MessagesBefore(ctx context.Context, t time.Time, limit int) ([]kernel.ID, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT id, created_at FROM messages WHERE deleted_at IS NULL ORDER BY id LIMIT ?`, limit)
	if err != nil {
		return nil, s.db.mapErr(err, "messages")
	}
	defer rows.Close()
	cutoff := fmtTime(t)
	var ids []kernel.ID
	for rows.Next() {
		var id, created string
		if err := rows.Scan(&id, &created); err != nil {
			return nil, s.db.mapErr(err, "messages")
		}
		if created >= cutoff {
			break
		}
		ids = append(ids, kernel.ID(id))
	}
	return ids, s.db.mapErr(rows.Err(), "messages")
}
