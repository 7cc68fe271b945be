package messaging

import (
	"context"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// Expiring finds the messages that retention (messaging.retention) deletes;
// *storage.MessageStore implements it.
type Expiring interface {
	// MessagesBefore returns the ids of up to limit messages created before t that are not
	// deleted, oldest first. Errors: internal.
	MessagesBefore(ctx context.Context, t time.Time, limit int) ([]kernel.ID, error)
}

// ExpireMessages deletes up to limit of the messages created before t, each in a Unit of Work
// of its own and exactly as DeleteMessage does (tombstone, redaction of the log, files, the
// thread's count, pins, the search index), with no actor: the message.deleted it appends names
// none. It returns how many messages it looked at, so that the caller repeats it until that is
// below limit; one deleted meanwhile by someone is left as it is. No permission is checked:
// only the retention job calls it, on the instance's setting. Errors: internal.
func (s *Service) ExpireMessages(ctx context.Context, src Expiring, t time.Time, limit int) (int64, error) {
	ids, err := src.MessagesBefore(ctx, t, limit)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		err := s.uow.Do(ctx, func(ctx context.Context) error {
			m, err := s.store.Message(ctx, id)
			if err != nil || m.Deleted {
				return err
			}
			return s.tombstone(ctx, kernel.Actor{}, m)
		})
		if err != nil && !kernel.IsCode(err, kernel.CodeNotFound) {
			return 0, err
		}
	}
	return int64(len(ids)), nil
}
