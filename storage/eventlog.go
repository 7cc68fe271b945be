package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// The log keeps the events of a message's content by reference: message.created and
// message.updated are logged with their subject and actor but an empty payload and no scope, and
// EventsAfter reads the message as it is now in their place, its payload and its scope (the
// message's thread, channel and space). The content is then stored once, in messages, instead of once more per
// event (most of a message's bytes on disk were its events' copies); a deleted message's events
// read as its tombstone with no rewrite of the log; and an old created event reads as the
// message's latest version, which its message.updated events that follow confirm (a client
// keeps the highest version). The events handed to the gateway at commit still carry their own
// payload.
var referenced = map[string]bool{
	messaging.EvMessageCreated.Name: true,
	messaging.EvMessageUpdated.Name: true,
}

func byReference(eventType string) bool { return referenced[eventType] }

// EventsAfter reads up to limit events with seq > after, in seq order, from the committed log.
func (db *DB) EventsAfter(ctx context.Context, after int64, limit int) ([]kernel.LoggedEvent, error) {
	q := db.q(ctx)
	rows, err := q.QueryContext(ctx, `SELECT seq, type, space_id, channel_id, thread_id, principal_id, subject_id, actor_id, payload, created_at
		FROM event_log WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, db.mapErr(err, "event log")
	}
	out := make([]kernel.LoggedEvent, 0, limit)
	var messages []kernel.ID
	for rows.Next() {
		var e kernel.LoggedEvent
		var space, channel, thread, principal, subject, actor sql.NullString
		var payload, created string
		if err := rows.Scan(&e.Seq, &e.Type, &space, &channel, &thread, &principal, &subject, &actor, &payload, &created); err != nil {
			rows.Close()
			return nil, db.mapErr(err, "event log")
		}
		e.Scope = kernel.Scope{SpaceID: kernel.ID(space.String), ChannelID: kernel.ID(channel.String),
			ThreadID: kernel.ID(thread.String), PrincipalID: kernel.ID(principal.String)}
		e.SubjectID, e.ActorID = kernel.ID(subject.String), kernel.ID(actor.String)
		e.Payload = []byte(payload)
		e.CreatedAt = parseTime(created)
		if payload == "" && referenced[e.Type] {
			messages = append(messages, e.SubjectID)
		}
		out = append(out, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(err, "event log")
	}
	if len(messages) == 0 {
		return out, nil
	}
	current, err := (&MessageStore{db: db}).byIDs(ctx, q, messages)
	if err != nil {
		return nil, err
	}
	for i := range out {
		e := &out[i]
		if len(e.Payload) != 0 || !referenced[e.Type] {
			continue
		}
		m, ok := current[e.SubjectID]
		if !ok {
			// The message is gone from the table (no path removes a row today): its tombstone,
			// for its author alone, as its channel is not known any more.
			m = messaging.Message{ID: e.SubjectID, AuthorID: e.ActorID, Mentions: []kernel.ID{}, Deleted: true}
			if e.Scope == (kernel.Scope{}) {
				e.Scope = kernel.Scope{PrincipalID: e.ActorID}
			}
		}
		if e.Scope == (kernel.Scope{}) {
			e.Scope = m.Scope()
		}
		if e.Payload, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RedactEvents replaces the payload of the logged events about subject of the given types, inside
// the Unit of Work of ctx: a deleted message's content must not stay readable in the log. The
// types the log keeps by reference hold no payload to replace.
func (db *DB) RedactEvents(ctx context.Context, subject kernel.ID, types []string, payload any) error {
	if !inTx(ctx) {
		panic("storage: RedactEvents outside a unit of work")
	}
	types = slices.DeleteFunc(slices.Clone(types), byReference)
	if len(types) == 0 {
		return nil
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	args := []any{string(b), string(subject)}
	for _, t := range types {
		args = append(args, t)
	}
	_, err = db.q(ctx).ExecContext(ctx, `UPDATE event_log SET payload = ? WHERE subject_id = ? AND payload <> '' AND type IN (`+placeholders(len(types))+`)`, args...)
	return db.mapErr(err, "event log")
}
