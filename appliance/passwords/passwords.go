// Package passwords hashes passwords with argon2id (golang.org/x/crypto/argon2) in the PHC string
// format, $argon2id$v=19$m=19456,t=2,p=1$salt$hash, and implements identity.PasswordHasher.
//
// It is the one home of golang.org/x/crypto in the binary. It must never log or return a
// password, and it bounds how many hashes run at once: each one holds m KiB of memory.
package passwords

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are the argon2id cost parameters.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32 // passes
	Threads uint8
	SaltLen uint32 // bytes
	KeyLen  uint32 // bytes
}

// OWASP is the OWASP Password Storage Cheat Sheet's minimum for argon2id: m=19 MiB, t=2, p=1.
var OWASP = Params{Memory: 19 * 1024, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}

// Hasher hashes with fixed parameters.
type Hasher struct {
	p   Params
	sem chan struct{}
}

// New returns a hasher with p that runs at most maxConcurrent hashes at once (0: GOMAXPROCS),
// so that a burst of logins cannot take m KiB each without bound.
func New(p Params, maxConcurrent int) *Hasher {
	if p.Memory == 0 || p.Time == 0 || p.Threads == 0 || p.SaltLen == 0 || p.KeyLen == 0 {
		panic("passwords: every parameter must be positive")
	}
	if maxConcurrent <= 0 {
		maxConcurrent = runtime.GOMAXPROCS(0)
	}
	return &Hasher{p: p, sem: make(chan struct{}, maxConcurrent)}
}

// Default returns a hasher with the OWASP parameters.
func Default() *Hasher { return New(OWASP, 0) }

func (h *Hasher) key(password string, salt []byte, p Params) []byte {
	h.sem <- struct{}{}
	defer func() { <-h.sem }()
	return argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
}

// Hash returns the PHC string of password with a fresh random salt.
func (h *Hasher) Hash(password string) (string, error) {
	salt := make([]byte, h.p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	k := h.key(password, salt, h.p)
	return encode(h.p, salt, k), nil
}

func encode(p Params, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// ErrMalformed reports a hash that is not an argon2id PHC string this package can read.
var ErrMalformed = errors.New("passwords: malformed argon2id hash")

// decode parses a PHC string.
func decode(s string) (Params, []byte, []byte, error) {
	parts := strings.Split(s, "$")
	// "", "argon2id", "v=19", "m=…,t=…,p=…", salt, key
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return Params{}, nil, nil, ErrMalformed
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return Params{}, nil, nil, ErrMalformed
	}
	var p Params
	seen := 0
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Params{}, nil, nil, ErrMalformed
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return Params{}, nil, nil, ErrMalformed
		}
		switch k {
		case "m":
			p.Memory = uint32(n)
		case "t":
			p.Time = uint32(n)
		case "p":
			if n > 255 {
				return Params{}, nil, nil, ErrMalformed
			}
			p.Threads = uint8(n)
		default:
			return Params{}, nil, nil, ErrMalformed
		}
		seen++
	}
	if seen != 3 || p.Memory == 0 || p.Time == 0 || p.Threads == 0 {
		return Params{}, nil, nil, ErrMalformed
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return Params{}, nil, nil, ErrMalformed
	}
	key, err := b64.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 1024 {
		return Params{}, nil, nil, ErrMalformed
	}
	// Refuse parameters that would let a stored hash exhaust the server (a tampered row).
	if p.Memory > 4*1024*1024 || p.Time > 64 {
		return Params{}, nil, nil, ErrMalformed
	}
	p.SaltLen, p.KeyLen = uint32(len(salt)), uint32(len(key))
	return p, salt, key, nil
}

// Verify reports whether password matches the PHC string hash, with the parameters stored in
// it (a hash made with older parameters still verifies). Errors: ErrMalformed.
func (h *Hasher) Verify(hash, password string) (bool, error) {
	p, salt, want, err := decode(hash)
	if err != nil {
		return false, err
	}
	got := h.key(password, salt, p)
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// NeedsRehash reports that hash was made with weaker parameters than the hasher's (less memory,
// fewer passes, a shorter salt or key) or cannot be read at all.
func (h *Hasher) NeedsRehash(hash string) bool {
	p, _, _, err := decode(hash)
	if err != nil {
		return true
	}
	return p.Memory < h.p.Memory || p.Time < h.p.Time || p.SaltLen < h.p.SaltLen || p.KeyLen < h.p.KeyLen
}
