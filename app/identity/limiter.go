package identity

import (
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// FailureLimiter counts failures per key in a sliding window, in memory: limits live in the
// process, and with several nodes each counts its own. An attempt takes a slot before
// the slow check runs and gives it back on success, so concurrent guesses cannot overshoot.
type FailureLimiter struct {
	mu        sync.Mutex
	clock     kernel.Clock
	window    time.Duration
	maxKeys   int
	hits      map[string][]time.Time // oldest first, at most the key's limit
	lastSweep time.Time
}

// LimitKey is one key to count and its limit within the window.
type LimitKey struct {
	Key   string
	Limit int
}

// NewFailureLimiter returns a limiter with window that tracks at most maxKeys keys (positive).
func NewFailureLimiter(clock kernel.Clock, window time.Duration, maxKeys int) *FailureLimiter {
	if maxKeys <= 0 {
		panic("identity: a failure limiter needs a positive number of keys")
	}
	return &FailureLimiter{clock: clock, window: window, maxKeys: maxKeys, hits: map[string][]time.Time{}}
}

// Take counts one attempt against every key whose limit is positive, or none if any key is at
// its limit; then it returns how long until that key has room again.
func (l *FailureLimiter) Take(keys ...LimitKey) (retryAfter time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	cutoff := now.Add(-l.window)
	for _, k := range keys {
		if k.Limit <= 0 {
			continue
		}
		hs := l.prune(k.Key, cutoff)
		if len(hs) >= k.Limit {
			if wait := hs[len(hs)-k.Limit].Add(l.window).Sub(now); wait > retryAfter {
				retryAfter = wait
			}
		}
	}
	if retryAfter > 0 {
		return retryAfter, false
	}
	for _, k := range keys {
		l.count(k, now, cutoff)
	}
	return 0, true
}

// LoginKeys are the counters of one login attempt.
type LoginKeys struct {
	// Address counts the failures of the client's address over all handles, and Pair those of
	// the handle from that address: either full refuses the attempt.
	Address, Pair LimitKey
	// Handle counts the failures of the handle from every address. It never refuses by
	// itself, so that nobody can lock a person out: once it is full, an address that has
	// failed against the handle (Pair holds failures) must wait LoginBackoff after its last
	// failure before it tries again, while an address without failures goes straight on.
	Handle LimitKey
}

// LoginBackoff is how long an address with failures against a handle under attack waits after
// the last of them: 1 s after the first, four times as long after each next, at most window.
func LoginBackoff(failures int, window time.Duration) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := time.Second
	for i := 1; i < failures && d < window; i++ {
		d *= 4
	}
	return min(d, window)
}

// TakeLogin counts one attempt against the keys of a login (those with a positive limit), or
// none if it is refused; then it returns how long until it may try again.
func (l *FailureLimiter) TakeLogin(k LoginKeys) (retryAfter time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	cutoff := now.Add(-l.window)
	wait := func(k LimitKey) time.Duration {
		if k.Limit <= 0 {
			return 0
		}
		if hs := l.prune(k.Key, cutoff); len(hs) >= k.Limit {
			return hs[len(hs)-k.Limit].Add(l.window).Sub(now)
		}
		return 0
	}
	retryAfter = max(wait(k.Address), wait(k.Pair))
	if k.Handle.Limit > 0 && k.Pair.Limit > 0 && len(l.prune(k.Handle.Key, cutoff)) >= k.Handle.Limit {
		if hs := l.prune(k.Pair.Key, cutoff); len(hs) > 0 {
			retryAfter = max(retryAfter, hs[len(hs)-1].Add(LoginBackoff(len(hs), l.window)).Sub(now))
		}
	}
	if retryAfter > 0 {
		return retryAfter, false
	}
	for _, key := range []LimitKey{k.Address, k.Pair, k.Handle} {
		l.count(key, now, cutoff)
	}
	return 0, true
}

func (l *FailureLimiter) count(k LimitKey, now, cutoff time.Time) {
	if k.Limit <= 0 {
		return
	}
	if _, known := l.hits[k.Key]; !known {
		l.makeRoom(now, cutoff)
	}
	hs := l.hits[k.Key]
	if len(hs) >= k.Limit { // the handle's counter: keep its newest Limit failures
		hs = append(hs[:0], hs[1:]...)
	}
	l.hits[k.Key] = append(hs, now)
}

// Release gives back the slot the last Take counted for key (the attempt succeeded).
func (l *FailureLimiter) Release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hs := l.hits[key]
	switch len(hs) {
	case 0:
	case 1:
		delete(l.hits, key)
	default:
		l.hits[key] = hs[:len(hs)-1]
	}
}

// Reset forgets key.
func (l *FailureLimiter) Reset(key string) {
	l.mu.Lock()
	delete(l.hits, key)
	l.mu.Unlock()
}

func (l *FailureLimiter) prune(key string, cutoff time.Time) []time.Time {
	hs := l.hits[key]
	i := 0
	for i < len(hs) && !hs[i].After(cutoff) {
		i++
	}
	if i == 0 {
		return hs
	}
	if i == len(hs) {
		delete(l.hits, key)
		return nil
	}
	hs = append(hs[:0], hs[i:]...)
	l.hits[key] = hs
	return hs
}

// makeRoom keeps the number of tracked keys bounded: it drops expired keys (at most once a
// second), then, if still full, arbitrary ones.
func (l *FailureLimiter) makeRoom(now, cutoff time.Time) {
	if len(l.hits) < l.maxKeys {
		return
	}
	if now.Sub(l.lastSweep) >= time.Second {
		l.lastSweep = now
		for k, hs := range l.hits {
			if len(hs) == 0 || !hs[len(hs)-1].After(cutoff) {
				delete(l.hits, k)
			}
		}
	}
	for k := range l.hits {
		if len(l.hits) < l.maxKeys {
			break
		}
		delete(l.hits, k)
	}
}

// tracked returns the number of tracked keys (tests).
func (l *FailureLimiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.hits)
}
