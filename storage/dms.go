package storage

import (
	"context"
	"database/sql"
	"time"

	"bothy.dev/bothy/app/dms"
	"bothy.dev/bothy/app/kernel"
)

// DMStore is the repository of direct messages (implements dms.Store): the dms table, read with
// the DM's channel, its main thread and the grants that are its participants.
type DMStore struct{ db *DB }

var _ dms.Store = (*DMStore)(nil)

// NewDMStore returns the DM repository on db.
func NewDMStore(db *DB) *DMStore { return &DMStore{db: db} }

func (s *DMStore) EnsureSpace(ctx context.Context, createdBy kernel.ID, at time.Time) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES (?, 'Direct messages', ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`, string(dms.SpaceID), string(createdBy), fmtTime(at), fmtTime(at))
	return s.db.mapErr(err, "dm space")
}

const dmSelect = `SELECT c.id, c.main_thread_id, c.created_by, c.created_at, t.last_message_at
	FROM dms d JOIN channels c ON c.id = d.channel_id JOIN threads t ON t.id = c.main_thread_id`

func scanDM(sc interface{ Scan(...any) error }) (dms.DM, error) {
	var d dms.DM
	var created string
	var last sql.NullString
	err := sc.Scan(&d.ID, &d.MainThreadID, &d.CreatedBy, &created, &last)
	d.Kind, d.SpaceID, d.CreatedAt, d.LastMessageAt = "dm", dms.SpaceID, parseTime(created), parseNullTime(last)
	return d, err
}

func (s *DMStore) one(ctx context.Context, where string, arg string) (dms.DM, error) {
	d, err := scanDM(s.db.q(ctx).QueryRowContext(ctx, dmSelect+` WHERE `+where+` AND c.archived_at IS NULL`, arg))
	if err != nil {
		return d, s.db.mapErr(err, "dm")
	}
	d.Participants, err = s.participants(ctx, d.ID)
	return d, err
}

func (s *DMStore) participants(ctx context.Context, channelID kernel.ID) ([]kernel.ID, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT principal_id FROM grants WHERE resource_id = ? ORDER BY principal_id`, string(channelID))
	if err != nil {
		return nil, s.db.mapErr(err, "dm participants")
	}
	defer rows.Close()
	out := []kernel.ID{}
	for rows.Next() {
		var id kernel.ID
		if err := rows.Scan(&id); err != nil {
			return nil, s.db.mapErr(err, "dm participants")
		}
		out = append(out, id)
	}
	return out, s.db.mapErr(rows.Err(), "dm participants")
}

func (s *DMStore) ByKey(ctx context.Context, key string) (dms.DM, error) {
	return s.one(ctx, `d.participant_key = ?`, key)
}

func (s *DMStore) DM(ctx context.Context, channelID kernel.ID) (dms.DM, error) {
	return s.one(ctx, `d.channel_id = ?`, string(channelID))
}

func (s *DMStore) Create(ctx context.Context, channelID kernel.ID, key string, at time.Time) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO dms (channel_id, participant_key, created_at) VALUES (?, ?, ?)`,
		string(channelID), key, fmtTime(at))
	return s.db.mapErr(err, "dm")
}

func (s *DMStore) SetKey(ctx context.Context, channelID kernel.ID, key string) error {
	var k any
	if key != "" {
		k = key
	}
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE dms SET participant_key = ? WHERE channel_id = ?`, k, string(channelID))
	return s.db.oneRowOrNotFound(res, err, "dm")
}

func (s *DMStore) For(ctx context.Context, principalID kernel.ID) ([]dms.DM, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, dmSelect+` JOIN grants g ON g.resource_id = c.id AND g.principal_id = ?
		WHERE c.archived_at IS NULL ORDER BY COALESCE(t.last_message_at, c.created_at) DESC, c.id DESC`, string(principalID))
	if err != nil {
		return nil, s.db.mapErr(err, "dms")
	}
	var out []dms.DM
	for rows.Next() {
		d, err := scanDM(rows)
		if err != nil {
			rows.Close()
			return nil, s.db.mapErr(err, "dms")
		}
		out = append(out, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.db.mapErr(err, "dms")
	}
	for i := range out {
		if out[i].Participants, err = s.participants(ctx, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}
