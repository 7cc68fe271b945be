package storage

import (
	"context"
	"database/sql"
	"time"

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
)

// IdentityStore implements identity.Store.
type IdentityStore struct{ db *DB }

var _ identity.Store = (*IdentityStore)(nil)

// NewIdentityStore returns the identity repository on db.
func NewIdentityStore(db *DB) *IdentityStore { return &IdentityStore{db: db} }

// SetupState implements identity.Store.
func (s *IdentityStore) SetupState(ctx context.Context) (identity.SetupState, error) {
	var code, done sql.NullString
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT setup_code_hash, setup_completed_at FROM instance WHERE id = 1`).Scan(&code, &done)
	if err != nil {
		return identity.SetupState{}, s.db.mapErr(err, "instance")
	}
	return identity.SetupState{CodeHash: code.String, Completed: done.Valid}, nil
}

// SetSetupCode implements identity.Store.
func (s *IdentityStore) SetSetupCode(ctx context.Context, hash string) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE instance SET setup_code_hash = ? WHERE id = 1`, hash)
	return s.db.mapErr(err, "instance")
}

// CompleteSetup implements identity.Store.
func (s *IdentityStore) CompleteSetup(ctx context.Context, at time.Time) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE instance SET setup_completed_at = ?, setup_code_hash = NULL WHERE id = 1`, fmtTime(at))
	return s.db.mapErr(err, "instance")
}

// ActiveOwners implements identity.Store.
func (s *IdentityStore) ActiveOwners(ctx context.Context) (int, error) {
	var n int
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT COUNT(*) FROM principals WHERE is_owner = 1 AND status = 'active'`).Scan(&n)
	return n, s.db.mapErr(err, "principal")
}

// CreatePrincipal implements identity.Store.
func (s *IdentityStore) CreatePrincipal(ctx context.Context, u identity.User, handleKey string) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO principals (id, kind, handle, handle_key, display_name, status, is_owner, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		string(u.ID), string(u.Kind), u.Handle, handleKey, u.DisplayName, u.Status, boolInt(u.IsOwner), fmtTime(u.CreatedAt), fmtTime(u.UpdatedAt))
	return s.db.mapErr(err, "principal")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SetPassword implements identity.Store.
func (s *IdentityStore) SetPassword(ctx context.Context, principalID kernel.ID, hash string, at time.Time) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO local_credentials (principal_id, password_hash, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (principal_id) DO UPDATE SET password_hash = excluded.password_hash, updated_at = excluded.updated_at`,
		string(principalID), hash, fmtTime(at))
	return s.db.mapErr(err, "password")
}

const principalColumns = `p.id, p.kind, p.handle, p.display_name, p.status, p.is_owner, p.created_at, p.updated_at, p.disabled_at`

func scanPrincipal(sc interface{ Scan(...any) error }, extra ...any) (identity.User, error) {
	var u identity.User
	var id, kind, created, updated string
	var owner int
	var disabled sql.NullString
	dest := append([]any{&id, &kind, &u.Handle, &u.DisplayName, &u.Status, &owner, &created, &updated, &disabled}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return u, err
	}
	u.ID, u.Kind, u.IsOwner = kernel.ID(id), kernel.PrincipalKind(kind), owner != 0
	u.CreatedAt, u.UpdatedAt, u.DisabledAt = parseTime(created), parseTime(updated), parseNullTime(disabled)
	return u, nil
}

// Principal implements identity.Store.
func (s *IdentityStore) Principal(ctx context.Context, id kernel.ID) (identity.User, error) {
	u, err := scanPrincipal(s.db.q(ctx).QueryRowContext(ctx, `SELECT `+principalColumns+` FROM principals p WHERE p.id = ?`, string(id)))
	return u, s.db.mapErr(err, "principal")
}

// People implements identity.Store.
func (s *IdentityStore) People(ctx context.Context, after kernel.ID, limit int) ([]identity.User, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT `+principalColumns+` FROM principals p
		WHERE p.kind = 'person' AND p.id > ? ORDER BY p.id LIMIT ?`, string(after), limit)
	if err != nil {
		return nil, s.db.mapErr(err, "principal")
	}
	defer rows.Close()
	out := []identity.User{}
	for rows.Next() {
		u, err := scanPrincipal(rows)
		if err != nil {
			return nil, s.db.mapErr(err, "principal")
		}
		out = append(out, u)
	}
	return out, s.db.mapErr(rows.Err(), "principal")
}

// DisablePrincipal implements identity.Store.
func (s *IdentityStore) DisablePrincipal(ctx context.Context, id kernel.ID, at time.Time) error {
	t := fmtTime(at)
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE principals SET status = 'disabled', disabled_at = ?, updated_at = ? WHERE id = ?`, t, t, string(id))
	return s.affectedOne(res, err, "principal")
}

// EnablePrincipal implements identity.Store.
func (s *IdentityStore) EnablePrincipal(ctx context.Context, id kernel.ID, at time.Time) error {
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE principals SET status = 'active', disabled_at = NULL, updated_at = ? WHERE id = ?`,
		fmtTime(at), string(id))
	return s.affectedOne(res, err, "principal")
}

func (s *IdentityStore) affectedOne(res sql.Result, err error, what string) error {
	if err != nil {
		return s.db.mapErr(err, what)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.db.mapErr(err, what)
	}
	if n == 0 {
		return kernel.ErrNotFound
	}
	return nil
}

// LoginCredential implements identity.Store.
func (s *IdentityStore) LoginCredential(ctx context.Context, handleKey string) (identity.User, string, error) {
	var hash string
	u, err := scanPrincipal(s.db.q(ctx).QueryRowContext(ctx, `SELECT `+principalColumns+`, c.password_hash
		FROM principals p JOIN local_credentials c ON c.principal_id = p.id WHERE p.handle_key = ?`, handleKey), &hash)
	if err != nil {
		return identity.User{}, "", s.db.mapErr(err, "principal")
	}
	return u, hash, nil
}

// CreateSession implements identity.Store.
func (s *IdentityStore) CreateSession(ctx context.Context, ss identity.Session) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO auth_sessions (id, principal_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
		string(ss.ID), string(ss.PrincipalID), ss.TokenHash, fmtTime(ss.CreatedAt), fmtTime(ss.ExpiresAt))
	return s.db.mapErr(err, "session")
}

// RevokeSession implements identity.Store.
func (s *IdentityStore) RevokeSession(ctx context.Context, id kernel.ID, at time.Time) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE auth_sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, fmtTime(at), string(id))
	return s.db.mapErr(err, "session")
}

// RevokeSessions implements identity.Store.
func (s *IdentityStore) RevokeSessions(ctx context.Context, principalID kernel.ID, at time.Time) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE auth_sessions SET revoked_at = ? WHERE principal_id = ? AND revoked_at IS NULL`, fmtTime(at), string(principalID))
	return s.db.mapErr(err, "session")
}

// LiveSessions implements identity.Store.
func (s *IdentityStore) LiveSessions(ctx context.Context, principalID kernel.ID, now time.Time) ([]kernel.ID, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT id FROM auth_sessions
		WHERE principal_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY id`, string(principalID), fmtTime(now))
	if err != nil {
		return nil, s.db.mapErr(err, "session")
	}
	defer rows.Close()
	var out []kernel.ID
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.db.mapErr(err, "session")
		}
		out = append(out, kernel.ID(id))
	}
	return out, s.db.mapErr(rows.Err(), "session")
}

// The two authentication reads: one row by the unique digest index, joined with the principal.
const (
	sessionCredentialQuery = `SELECT s.id, s.expires_at, p.id, p.kind, p.handle, p.is_owner
		FROM auth_sessions s JOIN principals p ON p.id = s.principal_id
		WHERE s.token_hash = ? AND s.revoked_at IS NULL AND s.expires_at > ? AND p.status = 'active'`
	tokenCredentialQuery = `SELECT t.id, t.last_used_at, p.id, p.kind, p.handle, p.is_owner
		FROM api_tokens t JOIN principals p ON p.id = t.principal_id
		WHERE t.token_hash = ? AND t.revoked_at IS NULL AND p.status = 'active'`
)

// SessionCredential implements identity.Store.
func (s *IdentityStore) SessionCredential(ctx context.Context, hash string, now time.Time) (identity.Credential, error) {
	var sid, expires, pid, kind, handle string
	var owner int
	if err := s.db.q(ctx).QueryRowContext(ctx, sessionCredentialQuery, hash, fmtTime(now)).Scan(&sid, &expires, &pid, &kind, &handle, &owner); err != nil {
		return identity.Credential{}, s.db.mapErr(err, "session")
	}
	until := parseTime(expires)
	return identity.Credential{Actor: kernel.Actor{ID: kernel.ID(pid), Kind: kernel.PrincipalKind(kind), Handle: handle,
		IsOwner: owner != 0, SessionID: kernel.ID(sid)}, ExpiresAt: &until}, nil
}

// TokenCredential implements identity.Store.
func (s *IdentityStore) TokenCredential(ctx context.Context, hash string) (identity.Credential, error) {
	var tid, pid, kind, handle string
	var used sql.NullString
	var owner int
	if err := s.db.q(ctx).QueryRowContext(ctx, tokenCredentialQuery, hash).Scan(&tid, &used, &pid, &kind, &handle, &owner); err != nil {
		return identity.Credential{}, s.db.mapErr(err, "token")
	}
	return identity.Credential{Actor: kernel.Actor{ID: kernel.ID(pid), Kind: kernel.PrincipalKind(kind), Handle: handle,
		IsOwner: owner != 0, TokenID: kernel.ID(tid)}, LastUsedAt: parseNullTime(used)}, nil
}

// CreateToken implements identity.Store.
func (s *IdentityStore) CreateToken(ctx context.Context, t identity.Token) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO api_tokens (id, principal_id, name, token_hash, created_at) VALUES (?, ?, ?, ?, ?)`,
		string(t.ID), string(t.PrincipalID), t.Name, t.TokenHash, fmtTime(t.CreatedAt))
	return s.db.mapErr(err, "token")
}

func scanToken(sc interface{ Scan(...any) error }) (identity.Token, error) {
	var t identity.Token
	var id, pid, created string
	var used sql.NullString
	if err := sc.Scan(&id, &pid, &t.Name, &created, &used); err != nil {
		return t, err
	}
	t.ID, t.PrincipalID, t.CreatedAt, t.LastUsedAt = kernel.ID(id), kernel.ID(pid), parseTime(created), parseNullTime(used)
	return t, nil
}

// Tokens implements identity.Store.
func (s *IdentityStore) Tokens(ctx context.Context, principalID kernel.ID) ([]identity.Token, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT id, principal_id, name, created_at, last_used_at FROM api_tokens
		WHERE principal_id = ? AND revoked_at IS NULL ORDER BY id`, string(principalID))
	if err != nil {
		return nil, s.db.mapErr(err, "token")
	}
	defer rows.Close()
	out := []identity.Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, s.db.mapErr(err, "token")
		}
		out = append(out, t)
	}
	return out, s.db.mapErr(rows.Err(), "token")
}

// Token implements identity.Store.
func (s *IdentityStore) Token(ctx context.Context, id kernel.ID) (identity.Token, error) {
	t, err := scanToken(s.db.q(ctx).QueryRowContext(ctx, `SELECT id, principal_id, name, created_at, last_used_at FROM api_tokens
		WHERE id = ? AND revoked_at IS NULL`, string(id)))
	return t, s.db.mapErr(err, "token")
}

// RevokeToken implements identity.Store.
func (s *IdentityStore) RevokeToken(ctx context.Context, id kernel.ID, at time.Time) error {
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, fmtTime(at), string(id))
	return s.affectedOne(res, err, "token")
}

// RevokeTokens implements identity.Store.
func (s *IdentityStore) RevokeTokens(ctx context.Context, principalID kernel.ID, at time.Time) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE principal_id = ? AND revoked_at IS NULL`, fmtTime(at), string(principalID))
	return s.db.mapErr(err, "token")
}

// TouchToken implements identity.Store.
func (s *IdentityStore) TouchToken(ctx context.Context, id kernel.ID, at time.Time) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ?`, fmtTime(at), string(id))
	return s.db.mapErr(err, "token")
}
