package storage

import (
	"context"
	"database/sql"
	"fmt"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/engine"
)

// AuthzStore implements authz.Store and authz.StructureSource (the latter reads the channels and
// spaces tables, which belong to chat).
type AuthzStore struct{ db *DB }

var (
	_ authz.Store           = (*AuthzStore)(nil)
	_ authz.StructureSource = (*AuthzStore)(nil)
)

// NewAuthzStore returns the authz repository on db.
func NewAuthzStore(db *DB) *AuthzStore { return &AuthzStore{db: db} }

// The hot-path queries, one string per arity so the statement caches keep them.
const (
	maxLevel1 = `SELECT MAX(level_rank) FROM grants WHERE principal_id = ? AND resource_id = ?`
	maxLevel2 = `SELECT MAX(level_rank) FROM grants WHERE principal_id = ? AND resource_id IN (?, ?)`
)

// MaxLevel implements authz.Store: one query on the grants_principal index.
func (s *AuthzStore) MaxLevel(ctx context.Context, principalID kernel.ID, resourceIDs ...kernel.ID) (authz.Level, error) {
	var q string
	args := make([]any, 0, 1+len(resourceIDs))
	args = append(args, string(principalID))
	for _, id := range resourceIDs {
		args = append(args, string(id))
	}
	switch len(resourceIDs) {
	case 0:
		return authz.LevelNone, nil
	case 1:
		q = maxLevel1
	case 2:
		q = maxLevel2
	default:
		q = `SELECT MAX(level_rank) FROM grants WHERE principal_id = ? AND resource_id IN (` + placeholders(len(resourceIDs)) + `)`
	}
	var rank sql.NullInt64
	if err := s.db.q(ctx).QueryRowContext(ctx, q, args...).Scan(&rank); err != nil {
		return authz.LevelNone, s.db.mapErr(err, "grant")
	}
	return levelOfRank(rank.Int64), nil
}

func levelOfRank(r int64) authz.Level {
	l := authz.Level(r)
	if !l.Valid() {
		return authz.LevelNone
	}
	return l
}

// SpaceAccess implements authz.Store.
func (s *AuthzStore) SpaceAccess(ctx context.Context, principalID, spaceID kernel.ID) (authz.Level, bool, error) {
	var rank sql.NullInt64
	var n int64
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT MAX(CASE WHEN resource_id = ? THEN level_rank ELSE 0 END), COUNT(*)
		FROM grants WHERE principal_id = ?
		AND (resource_id = ? OR resource_id IN (SELECT id FROM channels WHERE space_id = ?))`,
		string(spaceID), string(principalID), string(spaceID), string(spaceID)).Scan(&rank, &n)
	if err != nil {
		return authz.LevelNone, false, s.db.mapErr(err, "grant")
	}
	return levelOfRank(rank.Int64), n > 0, nil
}

// VisibleTo implements authz.Store in one query.
func (s *AuthzStore) VisibleTo(ctx context.Context, principalID kernel.ID) (spaces, channels []kernel.ID, err error) {
	p := string(principalID)
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT resource_kind, resource_id FROM grants WHERE principal_id = ?
		UNION ALL
		SELECT 'space', c.space_id FROM grants g JOIN channels c ON c.id = g.resource_id
			WHERE g.principal_id = ? AND g.resource_kind = 'channel'
		UNION ALL
		SELECT 'channel', c.id FROM grants g JOIN channels c ON c.space_id = g.resource_id
			WHERE g.principal_id = ? AND g.resource_kind = 'space' AND c.kind <> 'dm'`, p, p, p)
	if err != nil {
		return nil, nil, s.db.mapErr(err, "grant")
	}
	defer rows.Close()
	for rows.Next() {
		var kind, id string
		if err := rows.Scan(&kind, &id); err != nil {
			return nil, nil, s.db.mapErr(err, "grant")
		}
		if kind == string(kernel.ResSpace) {
			spaces = append(spaces, kernel.ID(id))
		} else {
			channels = append(channels, kernel.ID(id))
		}
	}
	return spaces, channels, s.db.mapErr(rows.Err(), "grant")
}

// HiddenDMs implements authz.Store.
func (s *AuthzStore) HiddenDMs(ctx context.Context, principalID kernel.ID) ([]kernel.ID, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT c.id FROM channels c WHERE c.kind = 'dm'
		AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.principal_id = ? AND g.resource_id = c.id)`, string(principalID))
	if err != nil {
		return nil, s.db.mapErr(err, "channel")
	}
	defer rows.Close()
	var out []kernel.ID
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.db.mapErr(err, "channel")
		}
		out = append(out, kernel.ID(id))
	}
	return out, s.db.mapErr(rows.Err(), "channel")
}

const grantColumns = `resource_kind, resource_id, principal_id, level, created_by, created_at`

func scanGrant(sc interface{ Scan(...any) error }) (authz.Grant, error) {
	var g authz.Grant
	var kind, resource, principal, level, by, at string
	if err := sc.Scan(&kind, &resource, &principal, &level, &by, &at); err != nil {
		return g, err
	}
	lv, err := authz.ParseLevel(level)
	if err != nil {
		return g, fmt.Errorf("storage: grant with level %q", level)
	}
	g = authz.Grant{ResourceKind: kernel.ResourceKind(kind), ResourceID: kernel.ID(resource), PrincipalID: kernel.ID(principal),
		Level: lv, CreatedBy: kernel.ID(by), CreatedAt: parseTime(at)}
	if g.ResourceKind == kernel.ResSpace {
		g.SpaceID = g.ResourceID
	}
	return g, nil
}

// Grant implements authz.Store.
func (s *AuthzStore) Grant(ctx context.Context, resourceID, principalID kernel.ID) (authz.Grant, error) {
	g, err := scanGrant(s.db.q(ctx).QueryRowContext(ctx, `SELECT `+grantColumns+` FROM grants WHERE resource_id = ? AND principal_id = ?`,
		string(resourceID), string(principalID)))
	return g, s.db.mapErr(err, "grant")
}

// UpsertGrant implements authz.Store. It must run inside a Unit of Work.
func (s *AuthzStore) UpsertGrant(ctx context.Context, g authz.Grant) (authz.Grant, error) {
	if !g.Level.Valid() {
		return g, fmt.Errorf("storage: grant with level %d", g.Level)
	}
	var by, at string
	err := s.db.q(ctx).QueryRowContext(ctx, `INSERT INTO grants (id, resource_kind, resource_id, principal_id, level, level_rank, created_by, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (resource_id, principal_id) DO UPDATE SET level = excluded.level, level_rank = excluded.level_rank
		RETURNING created_by, created_at`,
		string(kernel.NewID()), string(g.ResourceKind), string(g.ResourceID), string(g.PrincipalID), g.Level.String(), int(g.Level),
		string(g.CreatedBy), fmtTime(g.CreatedAt)).Scan(&by, &at)
	if err != nil {
		return g, s.db.mapErr(err, "grant")
	}
	g.CreatedBy, g.CreatedAt = kernel.ID(by), parseTime(at)
	return g, nil
}

// DeleteGrant implements authz.Store.
func (s *AuthzStore) DeleteGrant(ctx context.Context, resourceID, principalID kernel.ID) error {
	res, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM grants WHERE resource_id = ? AND principal_id = ?`, string(resourceID), string(principalID))
	if err != nil {
		return s.db.mapErr(err, "grant")
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.db.mapErr(err, "grant")
	} else if n == 0 {
		return kernel.ErrNotFound
	}
	return nil
}

// ListGrants implements authz.Store.
func (s *AuthzStore) ListGrants(ctx context.Context, resourceID kernel.ID) ([]authz.Grant, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT `+grantColumns+` FROM grants WHERE resource_id = ? ORDER BY principal_id`, string(resourceID))
	if err != nil {
		return nil, s.db.mapErr(err, "grant")
	}
	defer rows.Close()
	out := []authz.Grant{}
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, s.db.mapErr(err, "grant")
		}
		out = append(out, g)
	}
	return out, s.db.mapErr(rows.Err(), "grant")
}

// BumpPermissionVersion implements authz.Store.
func (s *AuthzStore) BumpPermissionVersion(ctx context.Context) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE sequence_counters SET value = value + 1 WHERE name = 'permission_version'`)
	return s.db.mapErr(err, "permission version")
}

// PermissionVersion returns the current permission version (for caches and tests).
func (s *AuthzStore) PermissionVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT value FROM sequence_counters WHERE name = 'permission_version'`).Scan(&v)
	return v, s.db.mapErr(err, "permission version")
}

// PrincipalActive implements authz.Store.
func (s *AuthzStore) PrincipalActive(ctx context.Context, id kernel.ID) (bool, error) {
	var status string
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT status FROM principals WHERE id = ?`, string(id)).Scan(&status)
	if err == sql.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, s.db.mapErr(err, "principal")
	}
	return status == "active", nil
}

// Channel implements authz.StructureSource.
func (s *AuthzStore) Channel(ctx context.Context, id kernel.ID) (authz.ChannelRef, error) {
	var ch, space, kind string
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT id, space_id, kind FROM channels WHERE id = ?`, string(id)).Scan(&ch, &space, &kind)
	if err != nil {
		return authz.ChannelRef{}, s.db.mapErr(err, "channel")
	}
	return authz.ChannelRef{ID: kernel.ID(ch), SpaceID: kernel.ID(space), Kind: kind}, nil
}

// SpaceExists implements authz.StructureSource.
func (s *AuthzStore) SpaceExists(ctx context.Context, id kernel.ID) (bool, error) {
	var one int
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT 1 FROM spaces WHERE id = ?`, string(id)).Scan(&one)
	if err == sql.ErrNoRows {
		return false, nil
	}
	return err == nil, s.db.mapErr(err, "space")
}

// snapshotQuery reads the whole permission cache in one statement, so that both engines answer
// from one snapshot: event_seq and the rows it is the head of. Each row is a tag and four
// columns: ('h', -, -, -, event_seq), ('p', id, status, kind, is_owner), ('c', id, space_id, kind,
// -), ('g', principal_id, resource_id, resource_kind, level_rank).
const snapshotQuery = `SELECT 'h', '', '', '', value FROM sequence_counters WHERE name = 'event_seq'
	UNION ALL SELECT 'p', id, status, kind, is_owner FROM principals
	UNION ALL SELECT 'c', id, space_id, kind, 0 FROM channels
	UNION ALL SELECT 'g', principal_id, resource_id, resource_kind, level_rank FROM grants`

// Snapshot implements authz.Store: one query, whatever the number of rows.
func (s *AuthzStore) Snapshot(ctx context.Context) (authz.Snapshot, error) {
	var snap authz.Snapshot
	rows, err := s.db.q(ctx).QueryContext(ctx, snapshotQuery)
	if err != nil {
		return snap, s.db.mapErr(err, "permission snapshot")
	}
	defer rows.Close()
	head := false
	for rows.Next() {
		var tag, a, b, c string
		var n int64
		if err := rows.Scan(&tag, &a, &b, &c, &n); err != nil {
			return snap, s.db.mapErr(err, "permission snapshot")
		}
		switch tag {
		case "h":
			snap.Seq, head = n, true
		case "p":
			snap.Principals = append(snap.Principals, authz.PrincipalRef{ID: kernel.ID(a), Active: b == "active", IsOwner: n != 0,
				Kind: kernel.PrincipalKind(c)})
		case "c":
			snap.Channels = append(snap.Channels, authz.ChannelRef{ID: kernel.ID(a), SpaceID: kernel.ID(b), Kind: c})
		case "g":
			l := levelOfRank(n)
			if l == authz.LevelNone {
				return snap, fmt.Errorf("storage: grant of %s on %s with level_rank %d", a, b, n)
			}
			snap.Grants = append(snap.Grants, authz.Grant{ResourceKind: kernel.ResourceKind(c), ResourceID: kernel.ID(b),
				PrincipalID: kernel.ID(a), Level: l})
		}
	}
	if err := rows.Err(); err != nil {
		return snap, s.db.mapErr(err, "permission snapshot")
	}
	if !head {
		return snap, fmt.Errorf("storage: no event_seq counter")
	}
	return snap, nil
}

// CommittedHead implements authz.Store. Head is advanced after each COMMIT and before the Units
// of Work of the batch return, so it covers every commit a caller can have heard of. Inside a
// Unit of Work the batch may hold other units' uncommitted changes of rights, which only the
// transaction sees. On PostgreSQL another node's commit reaches Head only when its
// notification arrives; reading event_seq would cost the query a cached decision saves.
func (s *AuthzStore) CommittedHead(ctx context.Context) (int64, bool) {
	if inTx(ctx) {
		return 0, false
	}
	switch s.db.dialect.Name() {
	case engine.SQLite:
		return s.db.Head(), true
	case engine.Postgres:
		return 0, false
	default:
		panic("storage: unknown dialect " + string(s.db.dialect.Name()))
	}
}
