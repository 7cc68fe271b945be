package runs

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// PurposeInvocation is the purpose of the key that signs invocation tokens.
const PurposeInvocation = "invocation"

// AlgorithmEdDSA is the algorithm of every signing key (app/kernel/jose signs EdDSA only).
const AlgorithmEdDSA = "EdDSA"

// SigningKey is one of the instance's signing keys. Seed is the Ed25519 private key's seed.
type SigningKey struct {
	KID       string
	Purpose   string
	Algorithm string
	Seed      []byte
	CreatedAt time.Time
}

// SigningKeys is the port of the instance's signing keys.
type SigningKeys interface {
	// EnsureSigningKey stores candidate if no key of its purpose exists yet, and returns the key
	// of that purpose that is stored, candidate or the one another node stored first: every node
	// signs with the same key. Errors: internal.
	EnsureSigningKey(ctx context.Context, candidate SigningKey) (SigningKey, error)
}

// Keyring holds the instance's invocation signing key, loaded (made on first use) once per
// process. The key never changes while a process runs; a later rotation will reload it.
type Keyring struct {
	store SigningKeys
	clock kernel.Clock

	mu   sync.Mutex
	kid  string
	priv ed25519.PrivateKey
}

// NewKeyring returns a keyring on store; clock stamps a key it makes (nil: the system clock).
func NewKeyring(store SigningKeys, clock kernel.Clock) *Keyring {
	if clock == nil {
		clock = kernel.SystemClock{}
	}
	return &Keyring{store: store, clock: clock}
}

// Signer returns the signing key and its key id, loading or making it on first use.
// Errors: internal.
func (k *Keyring) Signer(ctx context.Context) (ed25519.PrivateKey, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.priv != nil {
		return k.priv, k.kid, nil
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, "", fmt.Errorf("runs: signing key: %w", err)
	}
	got, err := k.store.EnsureSigningKey(ctx, SigningKey{KID: string(kernel.NewID()), Purpose: PurposeInvocation,
		Algorithm: AlgorithmEdDSA, Seed: seed, CreatedAt: k.clock.Now().UTC().Truncate(time.Microsecond)})
	if err != nil {
		return nil, "", err
	}
	if got.Algorithm != AlgorithmEdDSA || len(got.Seed) != ed25519.SeedSize {
		return nil, "", fmt.Errorf("runs: signing key %s is not an Ed25519 seed (%s)", got.KID, got.Algorithm)
	}
	k.priv, k.kid = ed25519.NewKeyFromSeed(got.Seed), got.KID
	return k.priv, k.kid, nil
}

// keyFor returns a lookup of the public key by key id for Check, after loading the key.
func (k *Keyring) keyFor(ctx context.Context) (func(kid string) (ed25519.PublicKey, bool), error) {
	priv, kid, err := k.Signer(ctx)
	if err != nil {
		return nil, err
	}
	pub := priv.Public().(ed25519.PublicKey)
	return func(want string) (ed25519.PublicKey, bool) {
		if want != kid {
			return nil, false
		}
		return pub, true
	}, nil
}
