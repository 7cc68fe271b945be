package storage

import (
	"context"
	"encoding/base64"
	"fmt"

	"bothy.dev/bothy/app/runs"
)

// SigningKeyStore implements runs.SigningKeys on signing_keys.
type SigningKeyStore struct{ db *DB }

var _ runs.SigningKeys = (*SigningKeyStore)(nil)

// NewSigningKeyStore returns the signing key repository on db.
func NewSigningKeyStore(db *DB) *SigningKeyStore { return &SigningKeyStore{db: db} }

// EnsureSigningKey implements runs.SigningKeys: insert-if-absent on the unique purpose, then
// read the row that is there, in one Unit of Work. Two nodes racing on PostgreSQL both end up
// reading the row of the first commit (the second insert waits on the unique index and does
// nothing).
func (s *SigningKeyStore) EnsureSigningKey(ctx context.Context, c runs.SigningKey) (runs.SigningKey, error) {
	var out runs.SigningKey
	err := s.db.Do(ctx, func(ctx context.Context) error {
		if _, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO signing_keys (kid, purpose, algorithm, private_key, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, c.KID, c.Purpose, c.Algorithm,
			base64.StdEncoding.EncodeToString(c.Seed), fmtTime(c.CreatedAt)); err != nil {
			return s.db.mapErr(err, "signing key")
		}
		var seed, created string
		err := s.db.q(ctx).QueryRowContext(ctx, `SELECT kid, purpose, algorithm, private_key, created_at FROM signing_keys
			WHERE purpose = ?`, c.Purpose).Scan(&out.KID, &out.Purpose, &out.Algorithm, &seed, &created)
		if err != nil {
			return s.db.mapErr(err, "signing key")
		}
		if out.Seed, err = base64.StdEncoding.DecodeString(seed); err != nil {
			return fmt.Errorf("storage: signing key %s: %w", out.KID, err)
		}
		out.CreatedAt = parseTime(created)
		return nil
	})
	return out, err
}
