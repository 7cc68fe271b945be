package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/notify"
)

// NotifyStore implements notify.Store on notification_levels, thread_subscriptions and
// log_cursors, and reads mentions and principals for the notifier.
type NotifyStore struct{ db *DB }

var _ notify.Store = (*NotifyStore)(nil)

// NewNotifyStore returns the notify repository on db.
func NewNotifyStore(db *DB) *NotifyStore { return &NotifyStore{db: db} }

func (s *NotifyStore) Level(ctx context.Context, principalID, channelID kernel.ID) (notify.Level, bool, error) {
	return s.level(ctx, `SELECT level FROM notification_levels WHERE principal_id = ? AND channel_id = ?`, principalID, channelID)
}

func (s *NotifyStore) Subscription(ctx context.Context, principalID, threadID kernel.ID) (notify.Level, bool, error) {
	return s.level(ctx, `SELECT level FROM thread_subscriptions WHERE principal_id = ? AND thread_id = ?`, principalID, threadID)
}

func (s *NotifyStore) level(ctx context.Context, q string, principalID, id kernel.ID) (notify.Level, bool, error) {
	var l string
	err := s.db.q(ctx).QueryRowContext(ctx, q, string(principalID), string(id)).Scan(&l)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.db.mapErr(err, "notification level")
	}
	return notify.Level(l), true, nil
}

func (s *NotifyStore) SetLevel(ctx context.Context, principalID, channelID kernel.ID, l notify.Level, at time.Time) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO notification_levels (principal_id, channel_id, level, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (principal_id, channel_id) DO UPDATE SET level = excluded.level, updated_at = excluded.updated_at`,
			string(principalID), string(channelID), string(l), fmtTime(at))
		return s.db.mapErr(err, "notification level")
	})
}

func (s *NotifyStore) SetSubscription(ctx context.Context, principalID, threadID kernel.ID, l notify.Level, at time.Time) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO thread_subscriptions (principal_id, thread_id, level, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (principal_id, thread_id) DO UPDATE SET level = excluded.level, updated_at = excluded.updated_at`,
			string(principalID), string(threadID), string(l), fmtTime(at))
		return s.db.mapErr(err, "thread subscription")
	})
}

// Follow implements notify.Store: one statement for the writer, one more for the author of the
// message a new thread starts under (read in the same statement, a person only).
func (s *NotifyStore) Follow(ctx context.Context, threadID, principalID, parentID kernel.ID, at time.Time) error {
	if !inTx(ctx) {
		panic("storage: Follow outside a unit of work")
	}
	q := s.db.q(ctx)
	if !principalID.IsZero() {
		if _, err := q.ExecContext(ctx, `INSERT INTO thread_subscriptions (principal_id, thread_id, level, updated_at) VALUES (?, ?, 'all', ?)
			ON CONFLICT (principal_id, thread_id) DO NOTHING`, string(principalID), string(threadID), fmtTime(at)); err != nil {
			return s.db.mapErr(err, "thread subscription")
		}
	}
	if !parentID.IsZero() && parentID != principalID {
		// The WHERE keeps SQLite from reading ON CONFLICT as a join's ON.
		if _, err := q.ExecContext(ctx, `INSERT INTO thread_subscriptions (principal_id, thread_id, level, updated_at)
			SELECT m.author_id, ?, 'all', ? FROM messages m JOIN principals p ON p.id = m.author_id
			WHERE m.id = ? AND p.kind = 'person'
			ON CONFLICT (principal_id, thread_id) DO NOTHING`, string(threadID), fmtTime(at), string(parentID)); err != nil {
			return s.db.mapErr(err, "thread subscription")
		}
	}
	return nil
}

func (s *NotifyStore) Mentioned(ctx context.Context, messageID kernel.ID) ([]kernel.ID, error) {
	return s.db.queryIDs(ctx, "mentions", `SELECT principal_id FROM mentions WHERE message_id = ?`, string(messageID))
}

func (s *NotifyStore) ChannelChoosing(ctx context.Context, channelID kernel.ID, l notify.Level) ([]kernel.ID, error) {
	return s.db.queryIDs(ctx, "notification levels", `SELECT principal_id FROM notification_levels WHERE channel_id = ? AND level = ?`, string(channelID), string(l))
}

// queryIDs runs q, which selects one id column, and answers the ids; what names the rows in errors.
func (db *DB) queryIDs(ctx context.Context, what, q string, args ...any) ([]kernel.ID, error) {
	rows, err := db.q(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.mapErr(err, what)
	}
	defer rows.Close()
	var out []kernel.ID
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, db.mapErr(err, what)
		}
		out = append(out, kernel.ID(id))
	}
	return out, db.mapErr(rows.Err(), what)
}

// maxInList bounds the ids of one IN list; longer lists are read in parts.
const maxInList = 500

// inParts runs read on ids in parts of at most maxInList.
func inParts(ids []kernel.ID, read func(part []kernel.ID) error) error {
	for len(ids) > 0 {
		n := min(len(ids), maxInList)
		if err := read(ids[:n]); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

func idArgs(first []any, ids []kernel.ID) []any {
	args := append(make([]any, 0, len(first)+len(ids)), first...)
	for _, id := range ids {
		args = append(args, string(id))
	}
	return args
}

func (s *NotifyStore) ChannelLevels(ctx context.Context, channelID kernel.ID, ids []kernel.ID) (map[kernel.ID]notify.Level, error) {
	out := map[kernel.ID]notify.Level{}
	err := inParts(ids, func(part []kernel.ID) error {
		return s.levels(ctx, out, `SELECT principal_id, level FROM notification_levels WHERE channel_id = ? AND principal_id IN (`+placeholders(len(part))+`)`,
			idArgs([]any{string(channelID)}, part)...)
	})
	return out, err
}

func (s *NotifyStore) ThreadLevels(ctx context.Context, threadID kernel.ID) (map[kernel.ID]notify.Level, error) {
	out := map[kernel.ID]notify.Level{}
	return out, s.levels(ctx, out, `SELECT principal_id, level FROM thread_subscriptions WHERE thread_id = ?`, string(threadID))
}

func (s *NotifyStore) levels(ctx context.Context, out map[kernel.ID]notify.Level, q string, args ...any) error {
	rows, err := s.db.q(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return s.db.mapErr(err, "notification levels")
	}
	defer rows.Close()
	for rows.Next() {
		var id, l string
		if err := rows.Scan(&id, &l); err != nil {
			return s.db.mapErr(err, "notification levels")
		}
		out[kernel.ID(id)] = notify.Level(l)
	}
	return s.db.mapErr(rows.Err(), "notification levels")
}

func (s *NotifyStore) People(ctx context.Context, ids []kernel.ID) (map[kernel.ID]notify.Person, error) {
	out := make(map[kernel.ID]notify.Person, len(ids))
	err := inParts(ids, func(part []kernel.ID) error {
		rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT id, is_owner FROM principals
			WHERE kind = 'person' AND status = 'active' AND id IN (`+placeholders(len(part))+`)`, idArgs(nil, part)...)
		if err != nil {
			return s.db.mapErr(err, "principals")
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var owner int
			if err := rows.Scan(&id, &owner); err != nil {
				return s.db.mapErr(err, "principals")
			}
			out[kernel.ID(id)] = notify.Person{ID: kernel.ID(id), IsOwner: owner != 0}
		}
		return s.db.mapErr(rows.Err(), "principals")
	})
	return out, err
}

// Cursor implements notify.Store: the row is made once (a second node's insert does nothing) and
// read back, so every node starts where the first one stored.
func (s *NotifyStore) Cursor(ctx context.Context, name string, start int64) (int64, error) {
	var seq int64
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT seq FROM log_cursors WHERE name = ?`, name).Scan(&seq)
	if err == nil {
		return seq, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, s.db.mapErr(err, "log cursor")
	}
	err = s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO log_cursors (name, seq, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
			name, start, fmtTime(s.db.clock.Now()))
		if err != nil {
			return s.db.mapErr(err, "log cursor")
		}
		return s.db.mapErr(s.db.q(ctx).QueryRowContext(ctx, `SELECT seq FROM log_cursors WHERE name = ?`, name).Scan(&seq), "log cursor")
	})
	return seq, err
}

func (s *NotifyStore) MoveCursor(ctx context.Context, name string, from, to int64, at time.Time) (bool, error) {
	if !inTx(ctx) {
		panic("storage: MoveCursor outside a unit of work")
	}
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE log_cursors SET seq = ?, updated_at = ? WHERE name = ? AND seq = ?`,
		to, fmtTime(at), name, from)
	return s.db.changedRows(res, err, "log cursor")
}
