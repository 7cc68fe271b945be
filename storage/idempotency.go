package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

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

// DeleteIdempotencyBefore deletes the stored answers made before t, at most limit of them, the
// oldest first, in a Unit of Work of its own (or the one of ctx), and returns how many it
// deleted: the job that expires the keys calls it until it deletes fewer than limit, so that no
// transaction holds the writer for long. Index idempotency_keys_created serves it.
func (db *DB) DeleteIdempotencyBefore(ctx context.Context, t time.Time, limit int) (int64, error) {
	var n int64
	err := db.Do(ctx, func(ctx context.Context) error {
		res, err := db.q(ctx).ExecContext(ctx, `DELETE FROM idempotency_keys WHERE (principal_id, idem_key) IN (
			SELECT principal_id, idem_key FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
			fmtTime(t), limit)
		if err != nil {
			return db.mapErr(err, "idempotency keys")
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
