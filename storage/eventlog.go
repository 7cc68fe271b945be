package storage

import (
	"context"
	"database/sql"
	"encoding/json"

	"bothy.dev/bothy/app/kernel"
)

// EventsAfter reads up to limit events with seq > after, in seq order, from the committed log.
func (db *DB) EventsAfter(ctx context.Context, after int64, limit int) ([]kernel.LoggedEvent, error) {
	rows, err := db.q(ctx).QueryContext(ctx, `SELECT seq, type, space_id, channel_id, thread_id, principal_id, subject_id, actor_id, payload, created_at
		FROM event_log WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, db.mapErr(err, "event log")
	}
	defer rows.Close()
	out := make([]kernel.LoggedEvent, 0, limit)
	for rows.Next() {
		var e kernel.LoggedEvent
		var space, channel, thread, principal, subject, actor sql.NullString
		var payload, created string
		if err := rows.Scan(&e.Seq, &e.Type, &space, &channel, &thread, &principal, &subject, &actor, &payload, &created); err != nil {
			return nil, db.mapErr(err, "event log")
		}
		e.Scope = kernel.Scope{SpaceID: kernel.ID(space.String), ChannelID: kernel.ID(channel.String),
			ThreadID: kernel.ID(thread.String), PrincipalID: kernel.ID(principal.String)}
		e.SubjectID, e.ActorID = kernel.ID(subject.String), kernel.ID(actor.String)
		e.Payload = []byte(payload)
		e.CreatedAt = parseTime(created)
		out = append(out, e)
	}
	return out, db.mapErr(rows.Err(), "event log")
}

// RedactEvents replaces the payload of the logged events about subject of the given types, inside
// the Unit of Work of ctx: a deleted message's content must not stay readable in the log.
func (db *DB) RedactEvents(ctx context.Context, subject kernel.ID, types []string, payload any) error {
	if !inTx(ctx) {
		panic("storage: RedactEvents outside a unit of work")
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	args := []any{string(b), string(subject)}
	for _, t := range types {
		args = append(args, t)
	}
	_, err = db.q(ctx).ExecContext(ctx, `UPDATE event_log SET payload = ? WHERE subject_id = ? AND type IN (`+placeholders(len(types))+`)`, args...)
	return db.mapErr(err, "event log")
}
