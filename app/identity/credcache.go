package identity

import (
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// credCache keeps the credentials Authenticate resolved, by token digest, for at most ttl and
// never past a session's expiry, so that a request does not read the database to learn who it
// comes from. What ends a credential drops it: the events of this module (session.revoked,
// token.revoked, user.updated), handed by this process's writer right after COMMIT and by the
// log tail for the commits of other nodes, and a principal's disabling (ForgetPrincipal). ttl
// bounds the rest: a change of another node whose event this node has not yet read.
//
// A lookup that began before an invalidation must not put back what the invalidation dropped
// (its read may predate the revoking commit): put takes the generation read before the lookup
// and is refused when any invalidation happened since.
type credCache struct {
	ttl time.Duration

	mu          sync.Mutex
	gen         uint64
	byDigest    map[string]cachedCred
	byPrincipal map[kernel.ID][]string // the digests cached for each principal
}

type cachedCred struct {
	c     Credential
	until time.Time
}

// maxCachedCreds bounds the cache; beyond it, it starts over.
const maxCachedCreds = 10000

func newCredCache(ttl time.Duration) *credCache {
	return &credCache{ttl: ttl, byDigest: map[string]cachedCred{}, byPrincipal: map[kernel.ID][]string{}}
}

// get returns the credential cached under digest, still valid at now, and the generation to
// hand put when there is none.
func (c *credCache) get(digest string, now time.Time) (Credential, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byDigest[digest]
	if ok && now.Before(e.until) {
		return e.c, true, c.gen
	}
	return Credential{}, false, c.gen
}

// put caches cred under digest until ttl from now or expires, whichever comes first, unless an
// invalidation happened since gen.
func (c *credCache) put(digest string, cred Credential, now time.Time, expires *time.Time, gen uint64) {
	until := now.Add(c.ttl)
	if expires != nil && expires.Before(until) {
		until = *expires
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || !now.Before(until) {
		return
	}
	if len(c.byDigest) >= maxCachedCreds {
		clear(c.byDigest)
		clear(c.byPrincipal)
	}
	if _, had := c.byDigest[digest]; !had {
		c.byPrincipal[cred.Actor.ID] = append(c.byPrincipal[cred.Actor.ID], digest)
	}
	c.byDigest[digest] = cachedCred{c: cred, until: until}
}

// forget drops every credential of principal.
func (c *credCache) forget(principal kernel.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, d := range c.byPrincipal[principal] {
		delete(c.byDigest, d)
	}
	delete(c.byPrincipal, principal)
}

// Observe drops the credentials an event of this module ends or changes: a revoked session or
// token, and every credential of a person whose record changed (disabled, renamed, made owner
// or not: the actor a credential resolves to carries its handle and owner flag). It implements
// the gateway's log-tail observer; the writer's OnCommit calls ObserveCommitted.
func (s *Service) Observe(e kernel.LoggedEvent) {
	if s.creds == nil {
		return
	}
	switch e.Type {
	case EvSessionRevoked.Name, EvTokenRevoked.Name:
		s.creds.forget(e.Scope.PrincipalID)
	case EvUserUpdated.Name:
		s.creds.forget(e.SubjectID)
	}
}

// ObserveCommitted is Observe for a batch this process has just committed (storage.DB.OnCommit),
// so that a revocation holds on this node before the request that made it is answered.
func (s *Service) ObserveCommitted(events []kernel.LoggedEvent) {
	for _, e := range events {
		s.Observe(e)
	}
}

// ForgetPrincipal drops every credential of a principal: the permission cache calls it when an
// event disables one (an agent, whose status its own module changes, included).
func (s *Service) ForgetPrincipal(id kernel.ID) {
	if s.creds != nil {
		s.creds.forget(id)
	}
}
