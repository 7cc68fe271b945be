package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/netip"
	"strings"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/names"
)

// Config tunes the identity module. DefaultConfig holds the defaults, which the configuration
// schema shows (auth.*). A zero login limit turns that limit off; every other value must be
// positive, and New refuses the service otherwise.
type Config struct {
	// SessionTTL is how long a login session lasts (auth.session_ttl).
	SessionTTL time.Duration
	// LoginFailuresPerIP bounds the failed logins of one client address (an IPv6 /64) over all
	// handles (auth.login_max_failures_per_address), and LoginFailuresPerHandle those of one
	// handle from one address (auth.login_max_failures), within LoginFailureWindow
	// (auth.login_failure_window); past either, logins from there are refused.
	// LoginFailuresPerHandle failures of a handle from all addresses make the addresses that
	// failed against it back off (LoginBackoff), never the others.
	LoginFailuresPerIP     int
	LoginFailuresPerHandle int
	LoginFailureWindow     time.Duration
	// RateLimitMaxKeys bounds the keys the login limiter tracks.
	RateLimitMaxKeys int
	// TokenTouchInterval is how stale an API token's last_used_at may get before a request
	// writes it again: one write per token per interval, not per request.
	TokenTouchInterval time.Duration
	// CredentialCacheTTL is how long a resolved session or API token is kept in memory at most;
	// 0 (the default) turns the cache off, so that every request reads its credential. Only a
	// wiring that hands the service every revocation may turn it on: the committed events of
	// this module (ObserveCommitted, and Observe from the log tail for other nodes) and the
	// principals disabled elsewhere (ForgetPrincipal).
	CredentialCacheTTL time.Duration
}

// DefaultConfig returns the identity module's defaults.
func DefaultConfig() Config {
	return Config{SessionTTL: 720 * time.Hour, LoginFailuresPerIP: 30, LoginFailuresPerHandle: 10,
		LoginFailureWindow: 10 * time.Minute, RateLimitMaxKeys: 100000, TokenTouchInterval: time.Minute}
}

// problems lists the values of c that New refuses.
func (c Config) problems() []string {
	var out []string
	if c.SessionTTL <= 0 {
		out = append(out, "SessionTTL must be positive")
	}
	if c.LoginFailuresPerIP < 0 || c.LoginFailuresPerHandle < 0 {
		out = append(out, "a login limit must not be negative (0 turns it off)")
	}
	if c.CredentialCacheTTL < 0 {
		out = append(out, "CredentialCacheTTL must not be negative (0 turns the cache off)")
	}
	if c.LoginFailureWindow <= 0 {
		out = append(out, "LoginFailureWindow must be positive")
	}
	if c.RateLimitMaxKeys <= 0 {
		out = append(out, "RateLimitMaxKeys must be positive")
	}
	if c.TokenTouchInterval <= 0 {
		out = append(out, "TokenTouchInterval must be positive")
	}
	return out
}

// Deps are the ports the service uses. Bus and Clock may be nil.
type Deps struct {
	Store  Store
	UoW    kernel.UnitOfWork
	Events kernel.EventLog
	Authz  kernel.Authorizer
	Hasher PasswordHasher
	Bus    *kernel.TxBus
	Clock  kernel.Clock
}

// Service holds the identity use cases.
type Service struct {
	store   Store
	uow     kernel.UnitOfWork
	events  kernel.EventLog
	authz   kernel.Authorizer
	hasher  PasswordHasher
	bus     *kernel.TxBus
	clock   kernel.Clock
	cfg     Config
	limiter *FailureLimiter

	// dummyHash is verified against for unknown handles, so that an unknown handle costs the
	// same time as a wrong password. It is made at the first such login, not at start: one
	// argon2id hash costs tens of milliseconds and 19 MiB, which start-up must not pay.
	dummyOnce sync.Once
	dummyHash string

	touched sync.Map // token id → time.Time of this process's last touch

	creds *credCache // nil when CredentialCacheTTL is 0
}

// New returns the identity service.
func New(d Deps, cfg Config) *Service {
	if d.Store == nil || d.UoW == nil || d.Events == nil || d.Authz == nil || d.Hasher == nil {
		panic("identity: New needs Store, UoW, Events, Authz and Hasher")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	if p := cfg.problems(); len(p) > 0 {
		panic("identity: Config: " + strings.Join(p, "; "))
	}
	s := &Service{store: d.Store, uow: d.UoW, events: d.Events, authz: d.Authz, hasher: d.Hasher, bus: d.Bus,
		clock: d.Clock, cfg: cfg, limiter: NewFailureLimiter(d.Clock, cfg.LoginFailureWindow, cfg.RateLimitMaxKeys)}
	if cfg.CredentialCacheTTL > 0 {
		s.creds = newCredCache(cfg.CredentialCacheTTL)
	}
	return s
}

// Limiter returns the login failure limiter (for tests and metrics).
func (s *Service) Limiter() *FailureLimiter { return s.limiter }

// Error codes of identity.
var (
	// CodeSetupComplete refuses a second setup: the instance has its first owner.
	CodeSetupComplete = kernel.NewCode("setup_complete", kernel.ClassConflict)
	// CodeLastOwner refuses to disable or demote the last active owner.
	CodeLastOwner = kernel.NewCode("last_owner", kernel.ClassConflict)
)

var (
	errInvalidLogin   = &kernel.Error{Code: kernel.CodeUnauthenticated, Message: "invalid handle or password"}
	errBadCredentials = &kernel.Error{Code: kernel.CodeUnauthenticated, Message: "invalid or expired credentials"}
	errSetupComplete  = &kernel.Error{Code: CodeSetupComplete, Message: "the setup is already complete"}
	errBadSetupCode   = &kernel.Error{Code: kernel.CodeForbidden, Message: "invalid setup code"}
	errLastOwner      = &kernel.Error{Code: CodeLastOwner, Message: "the last active owner cannot be disabled"}
	errHandleTaken    = &kernel.Error{Code: kernel.CodeConflict, Field: "handle", Message: "this handle is taken"}

	instanceResource = kernel.Resource{Kind: kernel.ResInstance}
)

const (
	// APITokenPrefix starts every API token; a bearer without it is a session token.
	APITokenPrefix   = "bothy_"
	maxBearerLen     = 256
	tokenBytes       = 32
	setupCodeBytes   = 32
	defaultListLimit = 100
	maxListLimit     = 500
)

// randomToken returns n random bytes in base64url without padding.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// digest is the at-rest form of a secret token: SHA-256, hex. Tokens carry 256 random bits,
// so a fast hash is enough (no salt or stretching needed, unlike passwords).
func digest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func digestEqual(a, b string) bool {
	return len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// ---- setup ----

// IssueSetupCode returns a fresh one-time setup code when no owner exists yet, storing only its
// digest (an older code stops working); ok is false once the setup is complete.
func (s *Service) IssueSetupCode(ctx context.Context) (code string, ok bool, err error) {
	if err := s.authz.Authorize(ctx, kernel.Anonymous, ActInstanceBootstrap, instanceResource); err != nil {
		return "", false, err
	}
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		code, ok = "", false
		st, err := s.store.SetupState(ctx)
		if err != nil {
			return err
		}
		if st.Completed {
			return nil
		}
		if n, err := s.store.ActiveOwners(ctx); err != nil || n > 0 {
			return err
		}
		c := randomToken(setupCodeBytes)
		if err := s.store.SetSetupCode(ctx, digest(c)); err != nil {
			return err
		}
		code, ok = c, true
		return nil
	})
	if err != nil {
		return "", false, err
	}
	return code, ok, nil
}

// SetupComplete reports whether the instance has its first owner, for the console's first
// pages: before it they point at the setup link instead of a sign-in nobody can pass. It is
// no secret (a setup attempt learns it as setup_complete), so it needs no permission.
func (s *Service) SetupComplete(ctx context.Context) (bool, error) {
	st, err := s.store.SetupState(ctx)
	if err != nil {
		return false, err
	}
	return st.Completed, nil
}

// Setup creates the first owner with the one-time setup code (POST /setup; instance.bootstrap).
// Errors: setup_complete, forbidden (wrong or no code), validation_failed, conflict.
func (s *Service) Setup(ctx context.Context, code, handle, displayName, password string) (User, error) {
	if err := s.authz.Authorize(ctx, kernel.Anonymous, ActInstanceBootstrap, instanceResource); err != nil {
		return User{}, err
	}
	check := func(ctx context.Context) error {
		st, err := s.setupOpen(ctx)
		if err != nil {
			return err
		}
		if st.CodeHash == "" || !digestEqual(st.CodeHash, digest(code)) {
			return errBadSetupCode
		}
		return nil
	}
	// The cheap checks run before the slow hash, so a wrong code costs the server nothing.
	if err := check(ctx); err != nil {
		return User{}, err
	}
	return s.createOwner(ctx, handle, displayName, password, check)
}

// setupOpen returns the setup state while the instance has no owner yet, and setup_complete
// once it has one.
func (s *Service) setupOpen(ctx context.Context) (SetupState, error) {
	st, err := s.store.SetupState(ctx)
	if err != nil {
		return SetupState{}, err
	}
	if st.Completed {
		return SetupState{}, errSetupComplete
	}
	return st, nil
}

// BootstrapOwner creates the first owner from the command line (setup bootstrap-owner;
// instance.bootstrap). Errors: setup_complete, validation_failed, conflict.
func (s *Service) BootstrapOwner(ctx context.Context, handle, displayName, password string) (User, error) {
	if err := s.authz.Authorize(ctx, kernel.Anonymous, ActInstanceBootstrap, instanceResource); err != nil {
		return User{}, err
	}
	check := func(ctx context.Context) error {
		_, err := s.setupOpen(ctx)
		return err
	}
	if err := check(ctx); err != nil {
		return User{}, err
	}
	return s.createOwner(ctx, handle, displayName, password, check)
}

func (s *Service) createOwner(ctx context.Context, handle, displayName, password string, check func(context.Context) error) (User, error) {
	u, err := s.newPerson(handle, displayName, password)
	if err != nil {
		return User{}, err
	}
	u.IsOwner = true
	hash, err := s.hasher.Hash(password)
	if err != nil {
		return User{}, err
	}
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		if err := check(ctx); err != nil { // again, in the transaction: two setups may race
			return err
		}
		if err := s.insertPerson(ctx, u, hash, u.ID); err != nil {
			return err
		}
		return s.store.CompleteSetup(ctx, u.CreatedAt)
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// newPerson validates the input of a new person and builds it (without writing).
func (s *Service) newPerson(handle, displayName, password string) (User, error) {
	if err := ValidateHandle(handle); err != nil {
		return User{}, err
	}
	name, err := ValidateDisplayName(displayName)
	if err != nil {
		return User{}, err
	}
	if err := ValidatePassword(password); err != nil {
		return User{}, err
	}
	now := s.clock.Now()
	return User{ID: kernel.NewID(), Kind: kernel.KindPerson, Handle: handle, DisplayName: name, Status: StatusActive,
		CreatedAt: now, UpdatedAt: now}, nil
}

func (s *Service) insertPerson(ctx context.Context, u User, hash string, actorID kernel.ID) error {
	if err := s.store.CreatePrincipal(ctx, u, HandleKey(u.Handle)); err != nil {
		if kernel.IsCode(err, kernel.CodeConflict) {
			return errHandleTaken
		}
		return err
	}
	if err := s.store.SetPassword(ctx, u.ID, hash, u.CreatedAt); err != nil {
		return err
	}
	s.events.Append(ctx, EvUserCreated.Event(kernel.Event{SubjectID: u.ID, ActorID: actorID}, u))
	return nil
}

// ---- login, logout, authentication ----

// LoginResult is what a successful login returns; Token is shown once and never stored.
type LoginResult struct {
	Token     string
	ExpiresAt time.Time
	User      User
}

// Login checks a handle and password and opens a session (auth.login.complete). An unknown
// handle, a wrong password and a disabled person answer the same unauthenticated error in about
// the same time. Failures are limited per client address and per handle from that address:
// rate_limited, with the wait (kernel.RetryAfter), before the password is checked. Failures against a
// handle from every address never refuse an address that has not failed against it, so guesses
// from elsewhere cannot lock a person out; once there are LoginFailuresPerHandle of them, an
// address that has failed against the handle waits longer after each failure (LoginBackoff).
// A hash made with weaker parameters is replaced on success.
func (s *Service) Login(ctx context.Context, handle, password, clientIP string) (LoginResult, error) {
	if err := s.authz.Authorize(ctx, kernel.Anonymous, ActLogin, instanceResource); err != nil {
		return LoginResult{}, err
	}
	key := HandleKey(handle)
	limitKey := key
	if len(limitKey) > MaxHandleLen { // no such handle exists; keep the limiter's memory bounded
		limitKey = limitKey[:MaxHandleLen+1]
	}
	addr := addressKey(clientIP)
	lk := LoginKeys{
		Pair:   LimitKey{Key: "pair:" + limitKey + "|" + addr, Limit: s.cfg.LoginFailuresPerHandle},
		Handle: LimitKey{Key: "handle:" + limitKey, Limit: s.cfg.LoginFailuresPerHandle},
	}
	if addr != "" {
		lk.Address = LimitKey{Key: "ip:" + addr, Limit: s.cfg.LoginFailuresPerIP}
	}
	if wait, ok := s.limiter.TakeLogin(lk); !ok {
		return LoginResult{}, kernel.RetryAfter(kernel.Errorf(kernel.CodeRateLimited, "too many failed logins; try again later"), wait)
	}
	keys := []LimitKey{lk.Address, lk.Pair, lk.Handle}

	u, hash, err := s.loginCredential(ctx, key, password)
	if err != nil {
		return LoginResult{}, err // the slots stay taken: a store failure is no success
	}
	good := false
	if hash != "" {
		good, _ = s.hasher.Verify(hash, password)
	} else {
		s.dummyOnce.Do(func() { s.dummyHash, _ = s.hasher.Hash(randomToken(16)) })
		_, _ = s.hasher.Verify(s.dummyHash, password)
	}
	if !good || u.Status != StatusActive {
		return LoginResult{}, errInvalidLogin
	}
	for _, k := range keys {
		if k.Limit > 0 {
			s.limiter.Release(k.Key)
		}
	}

	var rehash string
	if s.hasher.NeedsRehash(hash) {
		if h, err := s.hasher.Hash(password); err == nil {
			rehash = h
		}
	}
	token := randomToken(tokenBytes)
	for strings.HasPrefix(token, APITokenPrefix) { // keep the two kinds of bearer apart
		token = randomToken(tokenBytes)
	}
	now := s.clock.Now()
	sess := Session{ID: kernel.NewID(), PrincipalID: u.ID, TokenHash: digest(token), CreatedAt: now, ExpiresAt: now.Add(s.cfg.SessionTTL)}
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		if rehash != "" {
			if err := s.store.SetPassword(ctx, u.ID, rehash, now); err != nil {
				return err
			}
		}
		return s.store.CreateSession(ctx, sess)
	})
	if err != nil {
		return LoginResult{}, err
	}
	return LoginResult{Token: token, ExpiresAt: sess.ExpiresAt, User: u}, nil
}

// addressKey is the limiter's key of a client address: the address itself, or for IPv6 its
// /64, which one client usually holds whole.
func addressKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if a = a.Unmap(); a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// loginCredential returns the person and hash for a login, or an empty hash when there is none
// to check (unknown handle, no password, input out of bounds).
func (s *Service) loginCredential(ctx context.Context, key, password string) (User, string, error) {
	if ValidateHandle(key) != nil || len(password) == 0 || len(password) > MaxPasswordBytes {
		return User{}, "", nil
	}
	u, hash, err := s.store.LoginCredential(ctx, key)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return User{}, "", nil
	}
	return u, hash, err
}

// Logout ends the session the actor came with (auth.logout) and appends the personal event
// session.revoked. An actor that came with an API token has no session: nothing happens.
func (s *Service) Logout(ctx context.Context, actor kernel.Actor) error {
	if err := s.authz.Authorize(ctx, actor, ActLogout, kernel.Resource{Kind: kernel.ResPrincipal, ID: actor.ID, OwnerID: actor.ID}); err != nil {
		return err
	}
	if actor.SessionID.IsZero() {
		return nil
	}
	return s.uow.Do(ctx, func(ctx context.Context) error {
		if err := s.store.RevokeSession(ctx, actor.SessionID, s.clock.Now()); err != nil {
			return err
		}
		s.events.Append(ctx, EvSessionRevoked.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: actor.ID},
			SubjectID: actor.SessionID, ActorID: actor.ID}, SessionRevoked{SessionID: actor.SessionID}))
		return nil
	})
}

// Authenticate resolves a bearer (a session token, or an API token with the prefix bothy_) to
// its actor with one indexed read that also checks expiry, revocation and the principal's status,
// so a disabled principal or a revoked credential stops at the next request. Errors:
// unauthenticated.
func (s *Service) Authenticate(ctx context.Context, bearer string) (kernel.Actor, error) {
	if bearer == "" || len(bearer) > maxBearerLen {
		return kernel.Anonymous, errBadCredentials
	}
	if strings.HasPrefix(bearer, APITokenPrefix) {
		c, err := s.credential(ctx, bearer, func(d string, _ time.Time) (Credential, error) { return s.store.TokenCredential(ctx, d) })
		if err != nil {
			return kernel.Anonymous, err
		}
		s.touch(ctx, c)
		return c.Actor, nil
	}
	c, err := s.credential(ctx, bearer, func(d string, now time.Time) (Credential, error) { return s.store.SessionCredential(ctx, d, now) })
	if err != nil {
		return kernel.Anonymous, err
	}
	return c.Actor, nil
}

// credential resolves bearer with read, from the cache when it holds it.
func (s *Service) credential(ctx context.Context, bearer string, read func(digest string, now time.Time) (Credential, error)) (Credential, error) {
	d, now := digest(bearer), s.clock.Now()
	var gen uint64
	if s.creds != nil {
		var c Credential
		var ok bool
		if c, ok, gen = s.creds.get(d, now); ok {
			return c, nil
		}
	}
	c, err := read(d, now)
	if err != nil {
		if kernel.IsCode(err, kernel.CodeNotFound) {
			return Credential{}, errBadCredentials
		}
		return Credential{}, err
	}
	if s.creds != nil {
		s.creds.put(d, c, now, c.ExpiresAt, gen)
	}
	return c, nil
}

// touch records the use of an API token at most once per TokenTouchInterval per token, so that
// authentication stays a read on the hot path.
func (s *Service) touch(ctx context.Context, c Credential) {
	now := s.clock.Now()
	every := s.cfg.TokenTouchInterval
	if c.LastUsedAt != nil && now.Sub(*c.LastUsedAt) < every {
		return
	}
	id := c.Actor.TokenID
	if last, ok := s.touched.Load(id); ok && now.Sub(last.(time.Time)) < every {
		return
	}
	s.touched.Store(id, now)
	// Best effort: a failed touch must not fail the request it rides on.
	_ = s.uow.Do(ctx, func(ctx context.Context) error { return s.store.TouchToken(ctx, id, now) })
}

// ---- people ----

// Me returns the actor's own principal (self.read).
func (s *Service) Me(ctx context.Context, actor kernel.Actor) (User, error) {
	if err := s.authz.Authorize(ctx, actor, ActSelfRead, kernel.Resource{Kind: kernel.ResPrincipal, ID: actor.ID, OwnerID: actor.ID}); err != nil {
		return User{}, err
	}
	return s.store.Principal(ctx, actor.ID)
}

// CreateUser creates a person (user.create, owners only) and appends user.created.
// Errors: unauthenticated, forbidden, validation_failed, conflict (handle).
func (s *Service) CreateUser(ctx context.Context, actor kernel.Actor, handle, displayName, password string) (User, error) {
	if err := s.authz.Authorize(ctx, actor, ActUserCreate, instanceResource); err != nil {
		return User{}, err
	}
	u, err := s.newPerson(handle, displayName, password)
	if err != nil {
		return User{}, err
	}
	hash, err := s.hasher.Hash(password)
	if err != nil {
		return User{}, err
	}
	if err := s.uow.Do(ctx, func(ctx context.Context) error { return s.insertPerson(ctx, u, hash, actor.ID) }); err != nil {
		return User{}, err
	}
	return u, nil
}

// ListUsers lists people in id order after the id after (user.read, any principal). limit ≤ 0
// means 100; at most 500.
func (s *Service) ListUsers(ctx context.Context, actor kernel.Actor, after kernel.ID, limit int) ([]User, error) {
	if err := s.authz.Authorize(ctx, actor, ActUserRead, instanceResource); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = defaultListLimit
	}
	if limit > maxListLimit {
		limit = maxListLimit
	}
	return s.store.People(ctx, after, limit)
}

// DisableUser disables a person (user.disable, owners only): its sessions and tokens are revoked
// in the same transaction, UserDisabled is published in it and user.updated appended. Disabling
// a disabled person changes nothing. Errors: not_found, forbidden, last_owner.
func (s *Service) DisableUser(ctx context.Context, actor kernel.Actor, id kernel.ID) (User, error) {
	if !actor.Authenticated() {
		return User{}, s.authz.Authorize(ctx, actor, ActUserDisable, kernel.Resource{Kind: kernel.ResPrincipal, ID: id})
	}
	var out User
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		u, err := s.store.Principal(ctx, id)
		if err != nil {
			return err
		}
		if u.Kind != kernel.KindPerson {
			return kernel.ErrNotFound
		}
		if err := s.authz.Authorize(ctx, actor, ActUserDisable, kernel.Resource{Kind: kernel.ResPrincipal, ID: id}); err != nil {
			return err
		}
		if u.Status == StatusDisabled {
			out = u
			return nil
		}
		if u.IsOwner {
			n, err := s.store.ActiveOwners(ctx)
			if err != nil {
				return err
			}
			if n <= 1 {
				return errLastOwner
			}
		}
		now := s.clock.Now()
		if err := s.store.DisablePrincipal(ctx, id, now); err != nil {
			return err
		}
		if err := s.store.RevokeSessions(ctx, id, now); err != nil {
			return err
		}
		if err := s.store.RevokeTokens(ctx, id, now); err != nil {
			return err
		}
		if err := kernel.Publish(ctx, s.bus, UserDisabled{UserID: id}); err != nil {
			return err
		}
		u.Status, u.UpdatedAt, u.DisabledAt = StatusDisabled, now, &now
		s.events.Append(ctx, EvUserUpdated.Event(kernel.Event{SubjectID: id, ActorID: actor.ID}, u))
		out = u
		return nil
	})
	return out, err
}

// EnableUser enables a disabled person again (user.enable, owners only) and appends
// user.updated. The sessions and tokens that disabling revoked stay revoked: the person signs in
// again with their password. Enabling an active person changes nothing.
// Errors: unauthenticated, not_found, forbidden.
func (s *Service) EnableUser(ctx context.Context, actor kernel.Actor, id kernel.ID) (User, error) {
	if !actor.Authenticated() {
		return User{}, s.authz.Authorize(ctx, actor, ActUserEnable, kernel.Resource{Kind: kernel.ResPrincipal, ID: id})
	}
	var out User
	err := s.uow.Do(ctx, func(ctx context.Context) error {
		u, err := s.person(ctx, actor, ActUserEnable, id)
		if err != nil {
			return err
		}
		if u.Status == StatusActive {
			out = u
			return nil
		}
		now := s.clock.Now().UTC().Truncate(time.Microsecond)
		if err := s.store.EnablePrincipal(ctx, id, now); err != nil {
			return err
		}
		u.Status, u.UpdatedAt, u.DisabledAt = StatusActive, now, nil
		s.events.Append(ctx, EvUserUpdated.Event(kernel.Event{SubjectID: id, ActorID: actor.ID}, u))
		out = u
		return nil
	})
	return out, err
}

// ResetPassword sets a new password for a person (user.password.reset, owners only), for one
// who forgot theirs. Every session of the person ends in the same transaction (session.revoked
// for each, which closes the gateway connections that came with it), so whoever knew the old
// password is signed out; the person's API tokens stay. The slow hash runs before the
// transaction, after the decision, so a refused caller costs nothing.
// Errors: unauthenticated, not_found, forbidden, validation_failed (password).
func (s *Service) ResetPassword(ctx context.Context, actor kernel.Actor, id kernel.ID, password string) (User, error) {
	if !actor.Authenticated() {
		return User{}, s.authz.Authorize(ctx, actor, ActUserPasswordReset, kernel.Resource{Kind: kernel.ResPrincipal, ID: id})
	}
	if _, err := s.person(ctx, actor, ActUserPasswordReset, id); err != nil {
		return User{}, err
	}
	if err := ValidatePassword(password); err != nil {
		return User{}, err
	}
	hash, err := s.hasher.Hash(password)
	if err != nil {
		return User{}, err
	}
	var out User
	err = s.uow.Do(ctx, func(ctx context.Context) error {
		u, err := s.person(ctx, actor, ActUserPasswordReset, id)
		if err != nil {
			return err
		}
		now := s.clock.Now().UTC().Truncate(time.Microsecond)
		if err := s.store.SetPassword(ctx, id, hash, now); err != nil {
			return err
		}
		live, err := s.store.LiveSessions(ctx, id, now)
		if err != nil {
			return err
		}
		if err := s.store.RevokeSessions(ctx, id, now); err != nil {
			return err
		}
		for _, sid := range live {
			s.events.Append(ctx, EvSessionRevoked.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: id},
				SubjectID: sid, ActorID: actor.ID}, SessionRevoked{SessionID: sid}))
		}
		out = u
		return nil
	})
	return out, err
}

// ChangePassword sets a person's own password after checking the current one (self.password.change),
// and ends their other sessions: the one it is called with stays, so the person stays signed in
// where they changed it. Wrong current passwords are limited per person, like the failed
// logins of one handle from one address (LoginFailuresPerHandle). Errors: unauthenticated (no
// person's session, or a wrong current password), rate_limited, validation_failed (the new
// password).
func (s *Service) ChangePassword(ctx context.Context, actor kernel.Actor, current, password string) error {
	if err := s.authz.Authorize(ctx, actor, ActSelfPassword, kernel.Resource{Kind: kernel.ResPrincipal, ID: actor.ID}); err != nil {
		return err
	}
	if actor.Kind != kernel.KindPerson {
		return kernel.Errorf(kernel.CodeUnauthenticated, "only a person has a password")
	}
	if err := ValidatePassword(password); err != nil {
		return err
	}
	// Counted per person, apart from logins: only the person's own sessions reach it, so the
	// failed logins of someone else cannot stop them changing their password.
	key := "password:" + string(actor.ID)
	if wait, ok := s.limiter.Take(LimitKey{Key: key, Limit: s.cfg.LoginFailuresPerHandle}); !ok {
		return kernel.RetryAfter(kernel.Errorf(kernel.CodeRateLimited, "too many wrong passwords; try again later"), wait)
	}
	_, hash, err := s.loginCredential(ctx, HandleKey(actor.Handle), current)
	if err != nil {
		return err
	}
	if good, _ := s.hasher.Verify(hash, current); hash == "" || !good {
		return kernel.Invalid("current_password", "the current password is wrong")
	}
	s.limiter.Release(key)
	newHash, err := s.hasher.Hash(password)
	if err != nil {
		return err
	}
	return s.uow.Do(ctx, func(ctx context.Context) error {
		now := s.clock.Now().UTC().Truncate(time.Microsecond)
		if err := s.store.SetPassword(ctx, actor.ID, newHash, now); err != nil {
			return err
		}
		live, err := s.store.LiveSessions(ctx, actor.ID, now)
		if err != nil {
			return err
		}
		for _, sid := range live {
			if sid == actor.SessionID {
				continue
			}
			if err := s.store.RevokeSession(ctx, sid, now); err != nil {
				return err
			}
			s.events.Append(ctx, EvSessionRevoked.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: actor.ID},
				SubjectID: sid, ActorID: actor.ID}, SessionRevoked{SessionID: sid}))
		}
		return nil
	})
}

// person loads the person with id and decides action on it: an agent or a missing principal
// is not_found, like one the actor may not see.
func (s *Service) person(ctx context.Context, actor kernel.Actor, action kernel.Action, id kernel.ID) (User, error) {
	u, err := s.store.Principal(ctx, id)
	if err != nil {
		return User{}, err
	}
	if u.Kind != kernel.KindPerson {
		return User{}, kernel.ErrNotFound
	}
	if err := s.authz.Authorize(ctx, actor, action, kernel.Resource{Kind: kernel.ResPrincipal, ID: id}); err != nil {
		return User{}, err
	}
	return u, nil
}

// ---- API tokens ----

// CreateToken creates an API token for the actor itself (token.create). The value, bothy_ and
// 32 random bytes in base64url, is returned once; only its digest is stored.
// Errors: unauthenticated, validation_failed (name).
func (s *Service) CreateToken(ctx context.Context, actor kernel.Actor, name string) (Token, string, error) {
	if err := s.authz.Authorize(ctx, actor, ActTokenCreate, kernel.Resource{Kind: kernel.ResToken, OwnerID: actor.ID}); err != nil {
		return Token{}, "", err
	}
	name, err := names.Name("name", name, names.MaxTokenName)
	if err != nil {
		return Token{}, "", err
	}
	value := APITokenPrefix + randomToken(tokenBytes)
	t := Token{ID: kernel.NewID(), PrincipalID: actor.ID, Name: name, TokenHash: digest(value), CreatedAt: s.clock.Now()}
	if err := s.uow.Do(ctx, func(ctx context.Context) error { return s.store.CreateToken(ctx, t) }); err != nil {
		return Token{}, "", err
	}
	t.TokenHash = ""
	return t, value, nil
}

// ListTokens lists the actor's live tokens, without their values (token.list).
func (s *Service) ListTokens(ctx context.Context, actor kernel.Actor) ([]Token, error) {
	if err := s.authz.Authorize(ctx, actor, ActTokenList, kernel.Resource{Kind: kernel.ResToken, OwnerID: actor.ID}); err != nil {
		return nil, err
	}
	return s.store.Tokens(ctx, actor.ID)
}

// RevokeToken revokes one of the actor's own tokens (token.revoke) and appends the personal event
// token.revoked, which ends the gateway connections that came with the token; another principal's
// token answers not_found, like a missing or revoked one.
func (s *Service) RevokeToken(ctx context.Context, actor kernel.Actor, id kernel.ID) error {
	if !actor.Authenticated() {
		return s.authz.Authorize(ctx, actor, ActTokenRevoke, kernel.Resource{Kind: kernel.ResToken, ID: id})
	}
	return s.uow.Do(ctx, func(ctx context.Context) error {
		t, err := s.store.Token(ctx, id)
		if err != nil {
			return err
		}
		if err := s.authz.Authorize(ctx, actor, ActTokenRevoke, kernel.Resource{Kind: kernel.ResToken, ID: id, OwnerID: t.PrincipalID}); err != nil {
			return err
		}
		if err := s.store.RevokeToken(ctx, id, s.clock.Now()); err != nil {
			return err
		}
		s.events.Append(ctx, EvTokenRevoked.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: t.PrincipalID},
			SubjectID: id, ActorID: actor.ID}, TokenRevoked{TokenID: id}))
		return nil
	})
}
