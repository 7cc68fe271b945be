package storage

import (
	"context"

	"bothy.dev/bothy/app/chat"
)

// ArchiveChannel implements chat.Store: only a channel that is not archived yet is touched, so a
// second archive is not_found like the reads that no longer find it.
func (s *ChatStore) ArchiveChannel(ctx context.Context, c chat.Channel) error {
	if c.ArchivedAt == nil {
		panic("storage: ArchiveChannel without ArchivedAt")
	}
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE channels SET archived_at = ?, updated_at = ? WHERE id = ? AND archived_at IS NULL`,
		fmtTime(*c.ArchivedAt), fmtTime(c.UpdatedAt), string(c.ID))
	return s.db.oneRowOrNotFound(res, err, "channel")
}

// ArchiveSpace implements chat.Store: the space and, at the same time, its channels that are not
// archived yet; a second archive of the space is not_found.
func (s *ChatStore) ArchiveSpace(ctx context.Context, sp chat.Space) error {
	if sp.ArchivedAt == nil {
		panic("storage: ArchiveSpace without ArchivedAt")
	}
	at, upd := fmtTime(*sp.ArchivedAt), fmtTime(sp.UpdatedAt)
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE spaces SET archived_at = ?, updated_at = ? WHERE id = ? AND archived_at IS NULL`,
		at, upd, string(sp.ID))
	if err := s.db.oneRowOrNotFound(res, err, "space"); err != nil {
		return err
	}
	_, err = s.db.q(ctx).ExecContext(ctx, `UPDATE channels SET archived_at = ?, updated_at = ? WHERE space_id = ? AND archived_at IS NULL`,
		at, upd, string(sp.ID))
	return s.db.mapErr(err, "channels")
}
