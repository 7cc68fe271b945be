package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"bothy.dev/bothy/app/kernel"
)

// Idempotency serves POSTs that carry an Idempotency-Key: the key and the effect are
// stored in one Unit of Work, so a crash leaves neither a key without its effect nor an effect
// without its key. The key is scoped to the principal: another principal's key never returns
// the first principal's answer. Error answers store nothing, so the client may retry them.
type Idempotency struct {
	uow   kernel.UnitOfWork
	store kernel.IdempotencyStore
}

// NewIdempotency returns the Idempotency-Key stage.
func NewIdempotency(uow kernel.UnitOfWork, store kernel.IdempotencyStore) *Idempotency {
	return &Idempotency{uow: uow, store: store}
}

// maxIdempotencyKeyBytes bounds an Idempotency-Key, visible ASCII.
const maxIdempotencyKeyBytes = 255

func validKey(k string) bool {
	if len(k) == 0 || len(k) > maxIdempotencyKeyBytes {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

func (i *Idempotency) serve(req *Request, key string, route *Route, checks *kernel.CheckLog) (int, []byte, error) {
	if !validKey(key) {
		return 0, nil, kernel.Invalid("Idempotency-Key", "the Idempotency-Key header must be 1 to 255 visible ASCII characters")
	}
	h := sha256.New()
	h.Write([]byte(req.Method + " " + req.URL.Path + "\n"))
	h.Write(req.body)
	fp := hex.EncodeToString(h.Sum(nil))

	var (
		status   int
		out      []byte
		replayed bool
	)
	err := i.uow.Do(req.Context(), func(ctx context.Context) error {
		rec, found, err := i.store.LookupIdempotency(ctx, req.Actor.ID, key)
		if err != nil {
			return err
		}
		if found {
			if rec.Fingerprint != fp {
				return kernel.Errorf(CodeIdempotencyKeyReuse, "this Idempotency-Key was used with another request")
			}
			status, out, replayed = rec.Status, rec.Body, true
			return nil
		}
		inner := *req
		inner.Request = req.Request.WithContext(ctx)
		st, body, err := route.Handler(&inner)
		if err != nil {
			return err
		}
		if st < 400 && !checks.Checked(route.Action) {
			return errNotChecked
		}
		if body != nil {
			if out, err = json.Marshal(body); err != nil {
				return err
			}
		}
		status = st
		kept := out
		if route.Secret {
			if kept, err = withoutSecret(out); err != nil {
				return err
			}
		}
		return i.store.SaveIdempotency(ctx, req.Actor.ID, key, kernel.IdempotencyRecord{Fingerprint: fp, Status: st, Body: kept})
	})
	if err != nil {
		return 0, nil, err
	}
	if replayed {
		req.header.Set("Idempotent-Replayed", "true")
	}
	return status, out, nil
}

// withoutSecret is the answer body as an Idempotency-Key replay gets it: without its "token"
// member, the others as they were, in their order. A secret is shown once and is never kept in
// the database in the clear; a client that lost the first answer resets the agent's token or
// revokes the token and makes another.
func withoutSecret(body []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("idempotency: a secret answer that is not an object")
	}
	out := []byte{'{'}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("idempotency: a secret answer: %w", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("idempotency: a secret answer: %w", err)
		}
		name, _ := t.(string)
		if name == "token" {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(name)
		out = append(append(append(out, k...), ':'), v...)
	}
	return append(out, '}'), nil
}
