package kernel

import "context"

// IdempotencyRecord is the stored answer to a request made with an Idempotency-Key, written in the
// same transaction as the request's effect.
type IdempotencyRecord struct {
	Fingerprint string
	Status      int
	Body        []byte
}

// IdempotencyStore keeps answers by (principal, key). Both methods run in the Unit of Work of ctx.
type IdempotencyStore interface {
	// LookupIdempotency returns the stored record and true, or false when the key is new.
	LookupIdempotency(ctx context.Context, principal ID, key string) (IdempotencyRecord, bool, error)
	// SaveIdempotency stores rec. Errors: conflict when the key exists.
	SaveIdempotency(ctx context.Context, principal ID, key string, rec IdempotencyRecord) error
}
