package storage

import (
	"context"
	"database/sql"
	"errors"

	"bothy.dev/bothy/app/kernel"
)

// LookupIdempotency implements kernel.IdempotencyStore.
func (db *DB) LookupIdempotency(ctx context.Context, principal kernel.ID, key string) (kernel.IdempotencyRecord, bool, error) {
	var rec kernel.IdempotencyRecord
	var body string
	err := db.q(ctx).QueryRowContext(ctx, `SELECT fingerprint, status_code, response_body FROM idempotency_keys WHERE principal_id = ? AND idem_key = ?`,
		string(principal), key).Scan(&rec.Fingerprint, &rec.Status, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, db.mapErr(err, "idempotency key")
	}
	if body != "" {
		rec.Body = []byte(body)
	}
	return rec, true, nil
}

// SaveIdempotency implements kernel.IdempotencyStore.
func (db *DB) SaveIdempotency(ctx context.Context, principal kernel.ID, key string, rec kernel.IdempotencyRecord) error {
	_, err := db.q(ctx).ExecContext(ctx, `INSERT INTO idempotency_keys (principal_id, idem_key, fingerprint, status_code, response_body, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		string(principal), key, rec.Fingerprint, rec.Status, string(rec.Body), fmtTime(db.clock.Now()))
	return db.mapErr(err, "idempotency key")
}
