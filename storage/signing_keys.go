package storage

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"time"

	"bothy.dev/bothy/app/runs"
)

// SigningKeyStore implements runs.SigningKeys on signing_keys. A purpose's current key is its
// row with retired_at NULL; the partial unique index signing_keys_current (migration 0010)
// holds that there is at most one, whatever the nodes do at once.
type SigningKeyStore struct{ db *DB }

var _ runs.SigningKeys = (*SigningKeyStore)(nil)

// NewSigningKeyStore returns the signing key repository on db.
func NewSigningKeyStore(db *DB) *SigningKeyStore { return &SigningKeyStore{db: db} }

const signingKeyColumns = `kid, purpose, algorithm, private_key, created_at, retired_at`

// EnsureSigningKey implements runs.SigningKeys: insert-if-absent on the current key of the
// purpose, then read the current key, in one Unit of Work. Two nodes racing on PostgreSQL both
// end up reading the row of the first commit (the second insert waits on the unique index and
// does nothing).
func (s *SigningKeyStore) EnsureSigningKey(ctx context.Context, c runs.SigningKey) (runs.SigningKey, error) {
	var out runs.SigningKey
	err := s.db.Do(ctx, func(ctx context.Context) error {
		if _, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO signing_keys (kid, purpose, algorithm, private_key, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, c.KID, c.Purpose, c.Algorithm,
			base64.StdEncoding.EncodeToString(c.Seed), fmtTime(c.CreatedAt)); err != nil {
			return s.db.mapErr(err, "signing key")
		}
		var err error
		out, err = s.current(ctx, c.Purpose)
		return err
	})
	return out, err
}

// RotateSigningKey implements runs.SigningKeys. The retirement is an update conditional on the
// named key still being current: of two nodes rotating at once, the second's update waits on the
// first's row lock (PostgreSQL) or its write transaction (SQLite), then finds the key retired and
// changes nothing, so only the first inserts its candidate. Should a second insert ever slip by,
// the partial unique index refuses it and the Unit of Work rolls back.
func (s *SigningKeyStore) RotateSigningKey(ctx context.Context, current string, c runs.SigningKey) (runs.SigningKey, bool, error) {
	var out runs.SigningKey
	rotated := false
	err := s.db.Do(ctx, func(ctx context.Context) error {
		rotated = false
		res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE signing_keys SET retired_at = ?
			WHERE kid = ? AND purpose = ? AND retired_at IS NULL`, fmtTime(c.CreatedAt), current, c.Purpose)
		if err != nil {
			return s.db.mapErr(err, "signing key")
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("storage: signing key: %w", err)
		}
		if n == 1 {
			if _, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO signing_keys (kid, purpose, algorithm, private_key, created_at)
				VALUES (?, ?, ?, ?, ?)`, c.KID, c.Purpose, c.Algorithm, base64.StdEncoding.EncodeToString(c.Seed),
				fmtTime(c.CreatedAt)); err != nil {
				return s.db.mapErr(err, "signing key")
			}
			rotated = true
		}
		out, err = s.current(ctx, c.Purpose)
		return err
	})
	return out, rotated, err
}

// SigningKeys implements runs.SigningKeys, the current key first.
func (s *SigningKeyStore) SigningKeys(ctx context.Context, purpose string, retiredSince time.Time) ([]runs.SigningKey, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT `+signingKeyColumns+` FROM signing_keys
		WHERE purpose = ? AND (retired_at IS NULL OR retired_at >= ?)
		ORDER BY retired_at IS NOT NULL, created_at DESC`, purpose, fmtTime(retiredSince))
	if err != nil {
		return nil, s.db.mapErr(err, "signing keys")
	}
	defer rows.Close()
	var out []runs.SigningKey
	for rows.Next() {
		k, err := scanSigningKey(rows)
		if err != nil {
			return nil, s.db.mapErr(err, "signing keys")
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.db.mapErr(err, "signing keys")
	}
	return out, nil
}

// DeleteRetiredSigningKeys implements runs.SigningKeys.
func (s *SigningKeyStore) DeleteRetiredSigningKeys(ctx context.Context, purpose string, cutoff time.Time) (int64, error) {
	var n int64
	err := s.db.Do(ctx, func(ctx context.Context) error {
		res, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM signing_keys
			WHERE purpose = ? AND retired_at IS NOT NULL AND retired_at < ?`, purpose, fmtTime(cutoff))
		if err != nil {
			return s.db.mapErr(err, "signing keys")
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("storage: signing keys: %w", err)
		}
		return nil
	})
	return n, err
}

// current reads the current key of purpose. Errors: not_found, internal.
func (s *SigningKeyStore) current(ctx context.Context, purpose string) (runs.SigningKey, error) {
	k, err := scanSigningKey(s.db.q(ctx).QueryRowContext(ctx, `SELECT `+signingKeyColumns+` FROM signing_keys
		WHERE purpose = ? AND retired_at IS NULL`, purpose))
	if err != nil {
		return runs.SigningKey{}, s.db.mapErr(err, "signing key")
	}
	return k, nil
}

// scanSigningKey reads one row of signingKeyColumns.
func scanSigningKey(row interface{ Scan(...any) error }) (runs.SigningKey, error) {
	var k runs.SigningKey
	var seed, created string
	var retired sql.NullString
	if err := row.Scan(&k.KID, &k.Purpose, &k.Algorithm, &seed, &created, &retired); err != nil {
		return runs.SigningKey{}, err
	}
	var err error
	if k.Seed, err = base64.StdEncoding.DecodeString(seed); err != nil {
		return runs.SigningKey{}, fmt.Errorf("storage: signing key %s: %w", k.KID, err)
	}
	k.CreatedAt, k.RetiredAt = parseTime(created), parseNullTime(retired)
	return k, nil
}
