package storage

import (
	"context"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// ReactionsOf lists the reactions on the messages ids, in no particular order: what
// the console's chat view shows under each message of a page. It reads by the primary key
// (message_id first), one query for the page. It does not authorize: the caller has read the
// messages through messaging, which did.
func (s *MessageStore) ReactionsOf(ctx context.Context, ids []kernel.ID) ([]messaging.Reaction, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = string(id)
	}
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT message_id, principal_id, emoji, created_at FROM reactions
		WHERE message_id IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return nil, s.db.mapErr(err, "reactions")
	}
	defer rows.Close()
	var out []messaging.Reaction
	for rows.Next() {
		var r messaging.Reaction
		var created string
		if err := rows.Scan(&r.MessageID, &r.PrincipalID, &r.Emoji, &created); err != nil {
			return nil, s.db.mapErr(err, "reactions")
		}
		r.CreatedAt = parseTime(created)
		out = append(out, r)
	}
	return out, s.db.mapErr(rows.Err(), "reactions")
}
