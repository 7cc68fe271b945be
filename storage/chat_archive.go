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
