package storage

import (
	"context"

	"bothy.dev/bothy/app/instance"
)

// InstanceStore implements instance.Store on the one row of the instance table.
type InstanceStore struct{ db *DB }

var _ instance.Store = (*InstanceStore)(nil)

// NewInstanceStore returns the settings repository on db.
func NewInstanceStore(db *DB) *InstanceStore { return &InstanceStore{db: db} }

// Settings implements instance.Store.
func (s *InstanceStore) Settings(ctx context.Context) (instance.Settings, error) {
	var st instance.Settings
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT name, broadcast_mentions FROM instance WHERE id = 1`).Scan(&st.Name, &st.BroadcastMentions)
	return st, s.db.mapErr(err, "instance")
}

// SetName implements instance.Store.
func (s *InstanceStore) SetName(ctx context.Context, name string) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE instance SET name = ? WHERE id = 1`, name)
	return s.db.mapErr(err, "instance")
}

// SetBroadcastMentions implements instance.Store.
func (s *InstanceStore) SetBroadcastMentions(ctx context.Context, v string) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE instance SET broadcast_mentions = ? WHERE id = 1`, v)
	return s.db.mapErr(err, "instance")
}

// BroadcastMentions implements messaging.BroadcastPolicy: who may mention a whole channel.
func (s *InstanceStore) BroadcastMentions(ctx context.Context) (string, error) {
	var v string
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT broadcast_mentions FROM instance WHERE id = 1`).Scan(&v)
	return v, s.db.mapErr(err, "instance")
}
