package storage

import (
	"context"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

const pinColumns = `message_id, channel_id, thread_id, pinned_by, pinned_at`

func scanPin(sc interface{ Scan(...any) error }) (messaging.Pin, error) {
	var p messaging.Pin
	var at string
	err := sc.Scan(&p.MessageID, &p.ChannelID, &p.ThreadID, &p.PinnedBy, &at)
	p.PinnedAt = parseTime(at)
	return p, err
}

func (s *MessageStore) InsertPin(ctx context.Context, p messaging.Pin) (bool, error) {
	res, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO message_pins (`+pinColumns+`) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (message_id) DO NOTHING`,
		string(p.MessageID), string(p.ChannelID), string(p.ThreadID), string(p.PinnedBy), fmtTime(p.PinnedAt))
	return s.db.changedRows(res, err, "pin")
}

func (s *MessageStore) Pin(ctx context.Context, messageID kernel.ID) (messaging.Pin, error) {
	p, err := scanPin(s.db.q(ctx).QueryRowContext(ctx, `SELECT `+pinColumns+` FROM message_pins WHERE message_id = ?`, string(messageID)))
	return p, s.db.mapErr(err, "pin")
}

func (s *MessageStore) DeletePin(ctx context.Context, messageID kernel.ID) (messaging.Pin, bool, error) {
	p, err := scanPin(s.db.q(ctx).QueryRowContext(ctx, `DELETE FROM message_pins WHERE message_id = ? RETURNING `+pinColumns, string(messageID)))
	if err != nil {
		if err = s.db.mapErr(err, "pin"); kernel.IsCode(err, kernel.CodeNotFound) {
			return messaging.Pin{}, false, nil
		}
		return messaging.Pin{}, false, err
	}
	return p, true, nil
}

func (s *MessageStore) CountPins(ctx context.Context, channelID kernel.ID) (int, error) {
	var n int
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT COUNT(*) FROM message_pins WHERE channel_id = ?`, string(channelID)).Scan(&n)
	return n, s.db.mapErr(err, "pins")
}

// Pins reads the channel's pins by the index message_pins_channel, then their messages (and
// their mentions) in one query each.
func (s *MessageStore) Pins(ctx context.Context, channelID kernel.ID, limit int) ([]messaging.PinnedMessage, error) {
	q := s.db.q(ctx)
	rows, err := q.QueryContext(ctx, `SELECT `+pinColumns+` FROM message_pins WHERE channel_id = ?
		ORDER BY pinned_at DESC, message_id DESC LIMIT ?`, string(channelID), limit)
	if err != nil {
		return nil, s.db.mapErr(err, "pins")
	}
	var out []messaging.PinnedMessage
	for rows.Next() {
		p, err := scanPin(rows)
		if err != nil {
			rows.Close()
			return nil, s.db.mapErr(err, "pins")
		}
		out = append(out, messaging.PinnedMessage{Pin: p})
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(out) == 0 {
		return out, s.db.mapErr(err, "pins")
	}
	args := make([]any, len(out))
	for i, p := range out {
		args[i] = string(p.MessageID)
	}
	rows, err = q.QueryContext(ctx, messageSelect+` WHERE m.id IN (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return nil, s.db.mapErr(err, "messages")
	}
	msgs := make([]messaging.Message, 0, len(out))
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			rows.Close()
			return nil, s.db.mapErr(err, "messages")
		}
		msgs = append(msgs, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.db.mapErr(err, "messages")
	}
	if err := s.fillMentions(ctx, q, msgs); err != nil {
		return nil, err
	}
	byID := make(map[kernel.ID]messaging.Message, len(msgs))
	for _, m := range msgs {
		byID[m.ID] = m
	}
	for i := range out {
		out[i].Message = byID[out[i].MessageID]
	}
	return out, nil
}
