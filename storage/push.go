package storage

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/push"
)

// PushStore implements push.Store on push_subscriptions and vapid_keys (migration 0018), and
// reads a message's text for a preview.
type PushStore struct{ db *DB }

var _ push.Store = (*PushStore)(nil)

// NewPushStore returns the push repository on db.
func NewPushStore(db *DB) *PushStore { return &PushStore{db: db} }

const pushColumns = `id, principal_id, endpoint, p256dh, auth, previews, created_at, last_error`

func scanPush(row interface{ Scan(...any) error }) (push.Subscription, error) {
	var s push.Subscription
	var previews int
	var created string
	var lastErr sql.NullString
	if err := row.Scan(&s.ID, &s.PrincipalID, &s.Endpoint, &s.P256DH, &s.Auth, &previews, &created, &lastErr); err != nil {
		return push.Subscription{}, err
	}
	s.Previews, s.CreatedAt, s.LastError = previews != 0, parseTime(created), lastErr.String
	return s, nil
}

func (s *PushStore) one(ctx context.Context, where string, arg string) (push.Subscription, error) {
	sub, err := scanPush(s.db.q(ctx).QueryRowContext(ctx, `SELECT `+pushColumns+` FROM push_subscriptions WHERE `+where, arg))
	return sub, s.db.mapErr(err, "push subscription")
}

func (s *PushStore) SubscriptionByEndpoint(ctx context.Context, endpoint string) (push.Subscription, error) {
	return s.one(ctx, `endpoint = ?`, endpoint)
}

func (s *PushStore) Subscription(ctx context.Context, id kernel.ID) (push.Subscription, error) {
	return s.one(ctx, `id = ?`, string(id))
}

func (s *PushStore) Subscriptions(ctx context.Context, principalID kernel.ID) ([]push.Subscription, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT `+pushColumns+` FROM push_subscriptions
		WHERE principal_id = ? ORDER BY created_at, id`, string(principalID))
	if err != nil {
		return nil, s.db.mapErr(err, "push subscriptions")
	}
	defer rows.Close()
	out := []push.Subscription{}
	for rows.Next() {
		sub, err := scanPush(rows)
		if err != nil {
			return nil, s.db.mapErr(err, "push subscriptions")
		}
		out = append(out, sub)
	}
	return out, s.db.mapErr(rows.Err(), "push subscriptions")
}

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *PushStore) InsertSubscription(ctx context.Context, sub push.Subscription) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO push_subscriptions (`+pushColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			string(sub.ID), string(sub.PrincipalID), sub.Endpoint, sub.P256DH, sub.Auth, boolInt(sub.Previews),
			fmtTime(sub.CreatedAt), nullText(sub.LastError))
		return s.db.mapErr(err, "push subscription")
	})
}

func (s *PushStore) UpdateSubscription(ctx context.Context, sub push.Subscription) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE push_subscriptions SET p256dh = ?, auth = ?, previews = ?, last_error = ?
			WHERE id = ?`, sub.P256DH, sub.Auth, boolInt(sub.Previews), nullText(sub.LastError), string(sub.ID))
		return s.db.mapErr(err, "push subscription")
	})
}

func (s *PushStore) DeleteSubscription(ctx context.Context, id, principalID kernel.ID) (bool, error) {
	var n int64
	err := s.db.Do(ctx, func(ctx context.Context) error {
		q, args := `DELETE FROM push_subscriptions WHERE id = ?`, []any{string(id)}
		if !principalID.IsZero() {
			q, args = q+` AND principal_id = ?`, append(args, string(principalID))
		}
		res, err := s.db.q(ctx).ExecContext(ctx, q, args...)
		if err != nil {
			return s.db.mapErr(err, "push subscription")
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("storage: push subscription: %w", err)
		}
		return nil
	})
	return n > 0, err
}

// SetLastError records why the last send to subscription id did not deliver ("": it did).
func (s *PushStore) SetLastError(ctx context.Context, id kernel.ID, msg string) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE push_subscriptions SET last_error = ? WHERE id = ?`, nullText(msg), string(id))
		return s.db.mapErr(err, "push subscription")
	})
}

// EnsureVAPIDKey implements push.Store: insert-if-absent on the one row, then read it, in one
// Unit of Work; two nodes racing both read the first commit's key.
func (s *PushStore) EnsureVAPIDKey(ctx context.Context, c push.VAPIDKey) (push.VAPIDKey, error) {
	var out push.VAPIDKey
	err := s.db.Do(ctx, func(ctx context.Context) error {
		if _, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO vapid_keys (id, private_key, created_at) VALUES (1, ?, ?)
			ON CONFLICT DO NOTHING`, base64.StdEncoding.EncodeToString(c.Private), fmtTime(c.CreatedAt)); err != nil {
			return s.db.mapErr(err, "vapid key")
		}
		var key, created string
		if err := s.db.q(ctx).QueryRowContext(ctx, `SELECT private_key, created_at FROM vapid_keys WHERE id = 1`).Scan(&key, &created); err != nil {
			return s.db.mapErr(err, "vapid key")
		}
		b, err := base64.StdEncoding.DecodeString(key)
		if err != nil {
			return fmt.Errorf("storage: vapid key: %w", err)
		}
		out = push.VAPIDKey{Private: b, CreatedAt: parseTime(created)}
		return nil
	})
	return out, err
}

// Preview implements push.Store: the message's text unless it is deleted.
func (s *PushStore) Preview(ctx context.Context, messageID kernel.ID) (string, error) {
	var text string
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT content FROM messages WHERE id = ? AND deleted_at IS NULL`, string(messageID)).Scan(&text)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return text, s.db.mapErr(err, "message")
}

const pendingColumns = `id, subscription_id, message_id, channel_id, thread_id, reason, attempts, due_at, created_at`

func (s *PushStore) AddPending(ctx context.Context, rows []push.Pending) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		for _, p := range rows {
			if _, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO push_outbox (`+pendingColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				string(p.ID), string(p.SubscriptionID), string(p.MessageID), string(p.ChannelID), string(p.ThreadID), p.Reason,
				p.Attempts, fmtTime(p.DueAt), fmtTime(p.CreatedAt)); err != nil {
				return s.db.mapErr(err, "push send")
			}
		}
		return nil
	})
}

// ClaimPending implements push.Store with one UPDATE … RETURNING: of two senders claiming at
// once on PostgreSQL, the second waits on the first's row locks and then finds the rows' due
// time moved past now, so no send is claimed twice.
func (s *PushStore) ClaimPending(ctx context.Context, now, leaseUntil time.Time, limit int) ([]push.Pending, error) {
	var out []push.Pending
	err := s.db.Do(ctx, func(ctx context.Context) error {
		out = out[:0]
		rows, err := s.db.q(ctx).QueryContext(ctx, `UPDATE push_outbox SET due_at = ?
			WHERE id IN (SELECT id FROM push_outbox WHERE due_at <= ? ORDER BY due_at, id LIMIT ?) AND due_at <= ?
			RETURNING `+pendingColumns, fmtTime(leaseUntil), fmtTime(now), limit, fmtTime(now))
		if err != nil {
			return s.db.mapErr(err, "push sends")
		}
		defer rows.Close()
		for rows.Next() {
			var p push.Pending
			var due, created string
			if err := rows.Scan(&p.ID, &p.SubscriptionID, &p.MessageID, &p.ChannelID, &p.ThreadID, &p.Reason, &p.Attempts, &due, &created); err != nil {
				return s.db.mapErr(err, "push sends")
			}
			p.DueAt, p.CreatedAt = parseTime(due), parseTime(created)
			out = append(out, p)
		}
		return s.db.mapErr(rows.Err(), "push sends")
	})
	return out, err
}

func (s *PushStore) FinishPending(ctx context.Context, done []kernel.ID, retry []push.Pending, gone []kernel.ID, notes []push.Note) error {
	return s.db.Do(ctx, func(ctx context.Context) error {
		if err := s.deleteIn(ctx, `DELETE FROM push_outbox WHERE id IN `, done); err != nil {
			return err
		}
		for _, p := range retry {
			if _, err := s.db.q(ctx).ExecContext(ctx, `UPDATE push_outbox SET attempts = ?, due_at = ? WHERE id = ?`,
				p.Attempts, fmtTime(p.DueAt), string(p.ID)); err != nil {
				return s.db.mapErr(err, "push send")
			}
		}
		// The subscriptions' sends go with them (ON DELETE CASCADE).
		if err := s.deleteIn(ctx, `DELETE FROM push_subscriptions WHERE id IN `, gone); err != nil {
			return err
		}
		last := map[kernel.ID]string{}
		for _, n := range notes {
			last[n.SubscriptionID] = n.Error
		}
		for id, msg := range last {
			if err := s.SetLastError(ctx, id, msg); err != nil {
				return err
			}
		}
		return nil
	})
}

// deleteIn runs del (a DELETE ending in "IN ") on ids, 500 at a time.
func (s *PushStore) deleteIn(ctx context.Context, del string, ids []kernel.ID) error {
	for len(ids) > 0 {
		n := min(len(ids), 500)
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = string(id)
		}
		if _, err := s.db.q(ctx).ExecContext(ctx, del+`(?`+strings.Repeat(`, ?`, n-1)+`)`, args...); err != nil {
			return s.db.mapErr(err, "push sends")
		}
		ids = ids[n:]
	}
	return nil
}

func (s *PushStore) NextPendingDue(ctx context.Context) (time.Time, bool, error) {
	var due sql.NullString
	if err := s.db.q(ctx).QueryRowContext(ctx, `SELECT MIN(due_at) FROM push_outbox`).Scan(&due); err != nil {
		return time.Time{}, false, s.db.mapErr(err, "push sends")
	}
	if !due.Valid {
		return time.Time{}, false, nil
	}
	return parseTime(due.String), true, nil
}
