package runs

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// PurposeInvocation is the purpose of the key that signs invocation tokens.
const PurposeInvocation = "invocation"

// AlgorithmEdDSA is the algorithm of every signing key (app/kernel/jose signs EdDSA only).
const AlgorithmEdDSA = "EdDSA"

// KeyRefresh is how long a keyring trusts the keys it read before it reads them again, so that
// a node learns of a rotation made by another within it. It is also how long after a rotation a
// node may still sign with the key it retired, which the verification window allows for.
const KeyRefresh = time.Minute

// SigningKey is one of the instance's signing keys. Seed is the Ed25519 private key's seed.
type SigningKey struct {
	KID       string
	Purpose   string
	Algorithm string
	Seed      []byte
	CreatedAt time.Time
	// RetiredAt is when the key stopped signing; nil for the current key of its purpose, the one
	// that signs. A retired key still verifies for the keyring's VerifyWindow after it.
	RetiredAt *time.Time
}

// SigningKeys is the port of the instance's signing keys. A purpose has at most one current
// key (RetiredAt nil) at any time, whatever the nodes do at once, and any number of retired ones.
type SigningKeys interface {
	// EnsureSigningKey stores candidate as the current key of its purpose if the purpose has no
	// current key yet, and returns the current key: candidate or the one another node stored
	// first, so that every node signs with the same key. Errors: internal.
	EnsureSigningKey(ctx context.Context, candidate SigningKey) (SigningKey, error)
	// RotateSigningKey retires the current key of candidate's purpose at candidate.CreatedAt and
	// stores candidate as the current key, in one Unit of Work, but only while the current key
	// is still the one named current: when another node rotated first it changes nothing. It
	// returns the current key after it and whether candidate became it. Errors: not_found (the
	// purpose has no current key), internal.
	RotateSigningKey(ctx context.Context, current string, candidate SigningKey) (SigningKey, bool, error)
	// SigningKeys returns the keys of purpose that may still verify: the current one and those
	// retired at or after retiredSince. Errors: internal.
	SigningKeys(ctx context.Context, purpose string, retiredSince time.Time) ([]SigningKey, error)
	// DeleteRetiredSigningKeys deletes the keys of purpose retired before cutoff and returns how
	// many it deleted; the current key is never deleted. Errors: internal.
	DeleteRetiredSigningKeys(ctx context.Context, purpose string, cutoff time.Time) (int64, error)
}

// KeyringOptions time a keyring's rotation; both must be positive. DefaultKeyringOptions holds
// the defaults, which the configuration schema shows.
type KeyringOptions struct {
	// Rotation is how long a key signs before the job runs.signing_key_rotation replaces it
	// (agent.signing_key_rotation).
	Rotation time.Duration
	// TokenTTL is how long the tokens the keys sign are valid (agent.invocation_token_ttl); it
	// sets the verification window of a retired key.
	TokenTTL time.Duration
}

// DefaultKeyringOptions returns the default timings of a keyring.
func DefaultKeyringOptions() KeyringOptions {
	return KeyringOptions{Rotation: 30 * 24 * time.Hour, TokenTTL: DefaultConfig().TokenTTL}
}

// Keyring holds the instance's invocation signing keys: the current one, which signs, and the
// retired ones that still verify the tokens they signed. Every node reads them from the store
// and keeps them for KeyRefresh; the key that signs is made by the first node that needs one and
// replaced by the job runs.signing_key_rotation (Rotate) every Rotation.
//
// A node learns of another's rotation when a token names a key it does not know (it reads the
// keys again), when it has held the keys for KeyRefresh, and when its signing key is due for
// rotation. So a node may sign with a retired key for at most KeyRefresh after the rotation
// (plus the skew of the nodes' clocks); a retired key therefore verifies for VerifyWindow =
// TokenTTL + KeyRefresh + MaxClockSkew after it stopped signing, which outlives every token it
// signed, and is deleted after that.
type Keyring struct {
	store    SigningKeys
	clock    kernel.Clock
	rotation time.Duration
	window   time.Duration

	mu       sync.Mutex
	loadedAt time.Time
	current  *loadedKey
	keys     map[string]*loadedKey // by key id: the current key and the retired ones in their window

	// missBudget and missAt are the bucket of reads that unknown key ids may cause.
	missBudget float64
	missAt     time.Time
}

// loadedKey is a key as a keyring holds it.
type loadedKey struct {
	kid       string
	priv      ed25519.PrivateKey
	pub       ed25519.PublicKey
	createdAt time.Time
	retiredAt *time.Time
}

// NewKeyring returns a keyring on store with the default timings; clock stamps the keys it makes
// and times their rotation (nil: the system clock).
func NewKeyring(store SigningKeys, clock kernel.Clock) *Keyring {
	return NewKeyringWith(store, clock, DefaultKeyringOptions())
}

// NewKeyringWith is NewKeyring with the timings of o.
func NewKeyringWith(store SigningKeys, clock kernel.Clock, o KeyringOptions) *Keyring {
	if clock == nil {
		clock = kernel.SystemClock{}
	}
	if o.Rotation <= 0 || o.TokenTTL <= 0 {
		panic("runs: a keyring needs a positive rotation and token lifetime")
	}
	return &Keyring{store: store, clock: clock, rotation: o.Rotation, window: o.TokenTTL + KeyRefresh + MaxClockSkew}
}

// VerifyWindow is how long a retired key still verifies after it stopped signing.
func (k *Keyring) VerifyWindow() time.Duration { return k.window }

// Signer returns the current signing key and its key id, reading the keys (and making the first
// key) when the keyring holds none, has held them for KeyRefresh or its key is due for rotation.
// Errors: internal.
func (k *Keyring) Signer(ctx context.Context) (ed25519.PrivateKey, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.clock.Now()
	if k.stale(now) {
		if err := k.load(ctx, now); err != nil {
			return nil, "", err
		}
	}
	return k.current.priv, k.current.kid, nil
}

// publicKey returns the public key of kid if it may verify a token now: the current key, or a
// retired one within its window. A kid the keyring does not know makes it read the keys again,
// for a key another node made since, as long as such reads stay within unknownKidReads a
// second (a small bucket): an agent that sends made-up key ids (the kid is read before the
// signature is checked) costs the store a few reads a second, not one a request, while the
// token of a key made a moment ago still finds it. Errors: internal (the read failed).
func (k *Keyring) publicKey(ctx context.Context, kid string) (ed25519.PublicKey, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.clock.Now()
	reloaded := false
	if k.stale(now) {
		if err := k.load(ctx, now); err != nil {
			return nil, false, err
		}
		reloaded = true
	}
	key, ok := k.keys[kid]
	if _, err := kernel.ParseID(kid); !ok && !reloaded && err == nil && k.takeMissRead(now) {
		if err := k.load(ctx, now); err != nil {
			return nil, false, err
		}
		key, ok = k.keys[kid]
	}
	if !ok || (key.retiredAt != nil && !now.Before(key.retiredAt.Add(k.window))) {
		return nil, false, nil
	}
	return key.pub, true, nil
}

// unknownKidReads is how many reads of the keys tokens with unknown key ids may cause a second,
// and at once.
const unknownKidReads = 3

// takeMissRead reports whether an unknown key id may read the keys now, taking one from the
// bucket of unknownKidReads a second. The caller holds k.mu.
func (k *Keyring) takeMissRead(now time.Time) bool {
	k.missBudget = min(unknownKidReads, k.missBudget+now.Sub(k.missAt).Seconds()*unknownKidReads)
	k.missAt = now
	if k.missBudget < 1 {
		return false
	}
	k.missBudget--
	return true
}

// KeyRotation is what one run of the job runs.signing_key_rotation did.
type KeyRotation struct {
	// Rotated is set when this run made a new current key, KID.
	Rotated bool
	KID     string
	// Deleted counts the retired keys deleted, past their verification window.
	Deleted int64
}

// Rotate is the job runs.signing_key_rotation: when the current key has signed for Rotation, it
// makes a new one current and retires the old, which keeps verifying for VerifyWindow; and it
// deletes the keys retired longer ago than that. Two nodes rotating at once leave one current
// key: the store's rotation is conditional on the key it replaces, and the node that lost reads
// the winner's key. Errors: internal, unavailable (the job is tried again).
func (k *Keyring) Rotate(ctx context.Context) (KeyRotation, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.clock.Now()
	var out KeyRotation
	if err := k.load(ctx, now); err != nil {
		return out, err
	}
	if !now.Before(k.current.createdAt.Add(k.rotation)) {
		candidate, err := newKey(now)
		if err != nil {
			return out, err
		}
		got, rotated, err := k.store.RotateSigningKey(ctx, k.current.kid, candidate)
		if err != nil {
			return out, err
		}
		if rotated {
			out.Rotated, out.KID = true, got.KID
		}
		if err := k.load(ctx, now); err != nil {
			return out, err
		}
	}
	n, err := k.store.DeleteRetiredSigningKeys(ctx, PurposeInvocation, now.Add(-k.window))
	out.Deleted = n
	return out, err
}

// stale reports whether the keyring must read the keys again before it signs at now: it holds
// none, has held them for KeyRefresh, or its signing key fell due for rotation since it read it.
func (k *Keyring) stale(now time.Time) bool {
	if k.current == nil || now.Sub(k.loadedAt) >= KeyRefresh {
		return true
	}
	due := k.current.createdAt.Add(k.rotation)
	return k.loadedAt.Before(due) && !now.Before(due)
}

// load reads the keys that may verify at now, making the first key when there is none.
func (k *Keyring) load(ctx context.Context, now time.Time) error {
	stored, err := k.store.SigningKeys(ctx, PurposeInvocation, now.Add(-k.window))
	if err != nil {
		return err
	}
	keys := map[string]*loadedKey{}
	var current *loadedKey
	for _, s := range stored {
		l, err := loadKey(s)
		if err != nil {
			return err
		}
		keys[l.kid] = l
		if l.retiredAt == nil {
			current = l
		}
	}
	if current == nil {
		candidate, err := newKey(now)
		if err != nil {
			return err
		}
		got, err := k.store.EnsureSigningKey(ctx, candidate)
		if err != nil {
			return err
		}
		if current, err = loadKey(got); err != nil {
			return err
		}
		keys[current.kid] = current
	}
	k.keys, k.current, k.loadedAt = keys, current, now
	return nil
}

// newKey returns a fresh Ed25519 key of purpose invocation, made at now.
func newKey(now time.Time) (SigningKey, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return SigningKey{}, fmt.Errorf("runs: signing key: %w", err)
	}
	return SigningKey{KID: string(kernel.NewID()), Purpose: PurposeInvocation, Algorithm: AlgorithmEdDSA, Seed: seed,
		CreatedAt: now.UTC().Truncate(time.Microsecond)}, nil
}

// loadKey derives the key pair of a stored key.
func loadKey(s SigningKey) (*loadedKey, error) {
	if s.Algorithm != AlgorithmEdDSA || len(s.Seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("runs: signing key %s is not an Ed25519 seed (%s)", s.KID, s.Algorithm)
	}
	priv := ed25519.NewKeyFromSeed(s.Seed)
	return &loadedKey{kid: s.KID, priv: priv, pub: priv.Public().(ed25519.PublicKey), createdAt: s.CreatedAt,
		retiredAt: s.RetiredAt}, nil
}

// PublicKey is a public key of the instance that verifies invocation tokens, as published in the
// instance's JSON Web Key Set: the current key and the retired ones still within their window.
type PublicKey struct {
	KID       string
	Key       ed25519.PublicKey
	CreatedAt time.Time
	// RetiredAt is nil for the key that signs now; a retired key is listed until it stops
	// verifying, at RetiredAt plus the keyring's VerifyWindow.
	RetiredAt *time.Time
}

// PublicKeys returns the keys that verify a token now, the current one first and then the
// retired ones newest first, reading them again when the keyring's copy is stale (as Signer
// does, so that the first call makes the first key). An adapter that verifies tokens itself
// needs exactly these: a key is listed from the moment it may sign until the last token it
// signed has expired. Errors: internal.
func (k *Keyring) PublicKeys(ctx context.Context) ([]PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.clock.Now()
	if k.stale(now) {
		if err := k.load(ctx, now); err != nil {
			return nil, err
		}
	}
	out := make([]PublicKey, 0, len(k.keys))
	for _, key := range k.keys {
		if key.retiredAt != nil && !now.Before(key.retiredAt.Add(k.window)) {
			continue
		}
		out = append(out, PublicKey{KID: key.kid, Key: key.pub, CreatedAt: key.createdAt, RetiredAt: key.retiredAt})
	}
	slices.SortFunc(out, func(a, b PublicKey) int {
		if (a.RetiredAt == nil) != (b.RetiredAt == nil) {
			if a.RetiredAt == nil {
				return -1
			}
			return 1
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	return out, nil
}
