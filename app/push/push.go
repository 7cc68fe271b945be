// Package push is Web Push for people (RFC 8030, with message encryption per RFC 8291 and VAPID
// per RFC 8292): a person's browsers register push subscriptions; the notifier hands a
// notification to Enqueue inside its Unit of Work, which enqueues one job per subscription; the
// job (Send) encrypts a small payload of ids for the subscription and posts it to the browser's
// push service, deletes a subscription the push service says is gone, and fails (to be tried
// again with the queue's backoff) when the push service is busy or out of reach.
//
// It must not do HTTP itself nor resolve names: the request goes through the Sender port, which
// the appliance implements with its egress client (the address check in the dialer). A job's
// arguments are ids, never a message's text: the preview, for a subscription that allows
// previews, is read from the message as it is when the job runs, so a deleted message shows
// nothing.
package push

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"bothy.dev/bothy/app/kernel"
)

// The actions of push. A person manages the subscriptions of their own browsers; agents and
// apps have none.
const (
	ActSubscriptionCreate kernel.Action = "push.subscription.create"
	ActSubscriptionList   kernel.Action = "push.subscription.list"
	ActSubscriptionDelete kernel.Action = "push.subscription.delete"
	ActVAPIDKeyRead       kernel.Action = "push.vapid_key.read"
)

// The error codes of push.
var (
	// CodeEndpointRefused refuses an endpoint the server will not send to (ValidateEndpoint).
	CodeEndpointRefused = kernel.NewCode("push_endpoint_refused", kernel.ClassInvalid)
	// CodeKeysInvalid refuses subscription keys that are not what a browser makes.
	CodeKeysInvalid = kernel.NewCode("push_keys_invalid", kernel.ClassInvalid)
	// CodeSubscriptionLimit refuses a subscription beyond Config.MaxSubscriptions of a person.
	CodeSubscriptionLimit = kernel.NewCode("push_subscription_limit", kernel.ClassConflict)
	// CodeEndpointTaken refuses an endpoint another person has registered (a browser shared
	// by two accounts: the one signed in first must remove it).
	CodeEndpointTaken = kernel.NewCode("push_endpoint_taken", kernel.ClassConflict)
)

// JobSend is the job that sends one notification to one subscription; its args are SendArgs.
const JobSend = "push.send"

// SendArgs are the arguments of a JobSend job: ids and the reason, never content.
type SendArgs struct {
	SubscriptionID kernel.ID `json:"subscription_id"`
	MessageID      kernel.ID `json:"message_id"`
	ChannelID      kernel.ID `json:"channel_id"`
	ThreadID       kernel.ID `json:"thread_id"`
	Reason         string    `json:"reason"`
}

// Subscription is one browser's push subscription of one person.
type Subscription struct {
	ID          kernel.ID `json:"id"`
	PrincipalID kernel.ID `json:"-"`
	Endpoint    string    `json:"endpoint"`
	// P256DH and Auth are the browser's keys, base64url without padding as stored.
	P256DH string `json:"-"`
	Auth   string `json:"-"`
	// Previews allows the payload to carry the start of the message's text.
	Previews  bool      `json:"previews"`
	CreatedAt time.Time `json:"created_at"`
	// LastError is why the last send did not deliver, if it did not ("" after a delivery).
	LastError string `json:"last_error,omitempty"`
}

// SubscribeInput is a browser's PushSubscription as it registers it.
type SubscribeInput struct {
	Endpoint string
	P256DH   string
	Auth     string
	// Previews, when set, says whether the payload may carry a preview of the text; a new
	// subscription without it has none, a renewed one keeps what it had.
	Previews *bool
}

// Notification is what the notifier tells a person about: a message and why.
type Notification struct {
	MessageID kernel.ID
	ChannelID kernel.ID
	ThreadID  kernel.ID
	// Reason is the notifier's word for why (mention, thread, dm, ...): lower case letters,
	// digits and '_', at most 40 bytes.
	Reason string
	// Preview is the text the notifier would show. Enqueue does not put it into the queue,
	// whose jobs carry ids only: Send reads the message's current text for a subscription that
	// allows previews.
	Preview string
}

// Store is the repository of push (storage.PushStore).
type Store interface {
	// SubscriptionByEndpoint returns the subscription of endpoint. Errors: not_found.
	SubscriptionByEndpoint(ctx context.Context, endpoint string) (Subscription, error)
	// Subscription returns the subscription id. Errors: not_found.
	Subscription(ctx context.Context, id kernel.ID) (Subscription, error)
	// Subscriptions returns principal's subscriptions, oldest first.
	Subscriptions(ctx context.Context, principalID kernel.ID) ([]Subscription, error)
	// InsertSubscription stores a new subscription. Errors: conflict when its endpoint is taken.
	InsertSubscription(ctx context.Context, s Subscription) error
	// UpdateSubscription writes s's keys and previews and clears its last error.
	UpdateSubscription(ctx context.Context, s Subscription) error
	// DeleteSubscription deletes subscription id when it is principal's, or whoever's when
	// principal is zero; it reports whether it deleted one.
	DeleteSubscription(ctx context.Context, id, principalID kernel.ID) (bool, error)
	// SetLastError records why the last send to subscription id did not deliver ("": it did).
	SetLastError(ctx context.Context, id kernel.ID, msg string) error
	// EnsureVAPIDKey stores candidate as the instance's key unless there is one, and returns
	// the one there is.
	EnsureVAPIDKey(ctx context.Context, candidate VAPIDKey) (VAPIDKey, error)
	// Preview returns the current text of message id, or "" when it is deleted or gone.
	Preview(ctx context.Context, messageID kernel.ID) (string, error)
}

// Sender posts one push request; the appliance's egress client implements it.
type Sender interface {
	// Post sends body to url with the header fields and returns the answer's status code. An
	// error means no answer: the push service could not be reached (network, timeout, an
	// address refused by the dialer).
	Post(ctx context.Context, url string, header map[string]string, body []byte) (int, error)
}

// Deps are the ports of push.
type Deps struct {
	Store  Store
	Jobs   kernel.Jobs
	UoW    kernel.UnitOfWork
	Authz  kernel.Authorizer
	Clock  kernel.Clock
	Sender Sender
}

// Config tunes push.
type Config struct {
	// AllowPrivateEndpoints takes endpoints on private, loopback and local hosts and over http
	// (push.allow_private_endpoints): for a push service of one's own, or a test's fake.
	AllowPrivateEndpoints bool
	// Subject is the VAPID sub claim: a mailto: or https: URL at which the push services can
	// reach the instance's operator (push.subject; the public URL when empty).
	Subject string
	// TTL is how long a push service keeps a notification for a browser that is offline.
	TTL time.Duration
	// MaxSubscriptions is how many subscriptions one person may hold.
	MaxSubscriptions int
	// PreviewRunes is the length of a preview, in runes.
	PreviewRunes int
}

// DefaultConfig is push's configuration without settings.
func DefaultConfig() Config {
	return Config{TTL: 24 * time.Hour, MaxSubscriptions: 20, PreviewRunes: 100}
}

// Service holds push's use cases.
type Service struct {
	d Deps
	c Config

	mu     sync.Mutex
	key    *ecdsa.PrivateKey
	public string                 // base64url of the public point
	tokens map[string]cachedToken // by audience
}

// cachedToken is a VAPID token reused for the sends to one push service until shortly before
// it expires: a signature per send would cost more than the rest of the send.
type cachedToken struct {
	header string
	renew  time.Time
}

// tokenLife is the lifetime of a VAPID token, and tokenRenew how long before its end Send signs
// the next one; the RFC allows up to 24 hours.
const (
	tokenLife  = 12 * time.Hour
	tokenRenew = time.Hour
)

// New returns the service.
func New(d Deps, c Config) *Service {
	def := DefaultConfig()
	if c.TTL <= 0 {
		c.TTL = def.TTL
	}
	if c.MaxSubscriptions <= 0 {
		c.MaxSubscriptions = def.MaxSubscriptions
	}
	if c.PreviewRunes <= 0 {
		c.PreviewRunes = def.PreviewRunes
	}
	return &Service{d: d, c: c, tokens: map[string]cachedToken{}}
}

func (s *Service) authorize(ctx context.Context, actor kernel.Actor, a kernel.Action) error {
	return s.d.Authz.Authorize(ctx, actor, a, kernel.Resource{Kind: kernel.ResInstance})
}

// Subscribe registers the browser subscription in for actor. It answers the subscription and
// whether it is new: an endpoint actor has registered already gets the new keys (a browser
// renews its subscription's keys now and then). Errors: push_endpoint_refused,
// push_keys_invalid, push_endpoint_taken (another person's endpoint), push_subscription_limit,
// and the authorizer's.
func (s *Service) Subscribe(ctx context.Context, actor kernel.Actor, in SubscribeInput) (Subscription, bool, error) {
	if err := s.authorize(ctx, actor, ActSubscriptionCreate); err != nil {
		return Subscription{}, false, err
	}
	if err := ValidateEndpoint(in.Endpoint, s.c.AllowPrivateEndpoints); err != nil {
		return Subscription{}, false, err
	}
	pub, secret, err := ParseKeys(in.P256DH, in.Auth)
	if err != nil {
		return Subscription{}, false, err
	}
	sub := Subscription{ID: kernel.NewID(), PrincipalID: actor.ID, Endpoint: in.Endpoint,
		P256DH: b64url.EncodeToString(pub), Auth: b64url.EncodeToString(secret), CreatedAt: s.d.Clock.Now()}
	isNew := false
	err = s.d.UoW.Do(ctx, func(ctx context.Context) error {
		old, err := s.d.Store.SubscriptionByEndpoint(ctx, in.Endpoint)
		switch {
		case err == nil:
			if old.PrincipalID != actor.ID {
				return kernel.Errorf(CodeEndpointTaken, "another person has registered this endpoint")
			}
			old.P256DH, old.Auth, old.LastError = sub.P256DH, sub.Auth, ""
			if in.Previews != nil {
				old.Previews = *in.Previews
			}
			sub, isNew = old, false
			return s.d.Store.UpdateSubscription(ctx, old)
		case !kernel.IsCode(err, kernel.CodeNotFound):
			return err
		}
		mine, err := s.d.Store.Subscriptions(ctx, actor.ID)
		if err != nil {
			return err
		}
		if len(mine) >= s.c.MaxSubscriptions {
			return kernel.Errorf(CodeSubscriptionLimit, "a person holds at most %d push subscriptions: remove one first", s.c.MaxSubscriptions)
		}
		sub.Previews = in.Previews != nil && *in.Previews
		isNew = true
		return s.d.Store.InsertSubscription(ctx, sub)
	})
	if err != nil {
		return Subscription{}, false, err
	}
	return sub, isNew, nil
}

// List returns actor's subscriptions, oldest first. Errors: the authorizer's.
func (s *Service) List(ctx context.Context, actor kernel.Actor) ([]Subscription, error) {
	if err := s.authorize(ctx, actor, ActSubscriptionList); err != nil {
		return nil, err
	}
	return s.d.Store.Subscriptions(ctx, actor.ID)
}

// Unsubscribe deletes actor's subscription id. Errors: not_found (none, or another person's),
// and the authorizer's.
func (s *Service) Unsubscribe(ctx context.Context, actor kernel.Actor, id kernel.ID) error {
	if err := s.authorize(ctx, actor, ActSubscriptionDelete); err != nil {
		return err
	}
	return s.d.UoW.Do(ctx, func(ctx context.Context) error {
		ok, err := s.d.Store.DeleteSubscription(ctx, id, actor.ID)
		if err == nil && !ok {
			err = kernel.ErrNotFound
		}
		return err
	})
}

// PublicKey returns the instance's VAPID public key, base64url of the uncompressed point: the
// applicationServerKey a browser subscribes with. The first call on an instance makes the key.
// Errors: the authorizer's; unavailable when the store cannot write.
func (s *Service) PublicKey(ctx context.Context, actor kernel.Actor) (string, error) {
	if err := s.authorize(ctx, actor, ActVAPIDKeyRead); err != nil {
		return "", err
	}
	_, pub, err := s.vapid(ctx)
	return pub, err
}

// vapid returns the instance's key, read or made once per process.
func (s *Service) vapid(ctx context.Context) (*ecdsa.PrivateKey, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return s.key, s.public, nil
	}
	candidate, err := NewVAPIDKey(s.d.Clock.Now())
	if err != nil {
		return nil, "", err
	}
	k, err := s.d.Store.EnsureVAPIDKey(ctx, candidate)
	if err != nil {
		return nil, "", err
	}
	key, err := k.signer()
	if err != nil {
		return nil, "", err
	}
	pub, err := key.PublicKey.Bytes()
	if err != nil {
		return nil, "", fmt.Errorf("push: encode the VAPID public key: %w", err)
	}
	s.key, s.public = key, b64url.EncodeToString(pub)
	return s.key, s.public, nil
}

// Enqueue enqueues the sends of n to every subscription of principal, in the Unit of Work of
// ctx (in one of its own when ctx carries none), so that they commit with the notification. A
// person without subscriptions costs one indexed read. A notification of a message is sent to a
// subscription once for each reason, however often it is enqueued while the first is in the
// queue. Errors: validation_failed for a bad reason; the store's and the queue's.
func (s *Service) Enqueue(ctx context.Context, principalID kernel.ID, n Notification) error {
	if !validReason(n.Reason) {
		return kernel.Invalid("reason", "a notification's reason is lower case letters, digits and '_', at most 40 bytes")
	}
	return s.d.UoW.Do(ctx, func(ctx context.Context) error {
		subs, err := s.d.Store.Subscriptions(ctx, principalID)
		if err != nil {
			return err
		}
		for _, sub := range subs {
			j := kernel.Job{Name: JobSend, Args: SendArgs{SubscriptionID: sub.ID, MessageID: n.MessageID,
				ChannelID: n.ChannelID, ThreadID: n.ThreadID, Reason: n.Reason}}
			if !n.MessageID.IsZero() {
				j.Key = string(sub.ID) + ":" + string(n.MessageID) + ":" + n.Reason
			}
			if err := s.d.Jobs.Enqueue(ctx, j); err != nil {
				return err
			}
		}
		return nil
	})
}

func validReason(r string) bool {
	if r == "" || len(r) > 40 {
		return false
	}
	for i := 0; i < len(r); i++ {
		if c := r[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Outcome is what became of one send.
type Outcome string

const (
	// Delivered: the push service took the notification.
	Delivered Outcome = "delivered"
	// Removed: the push service said the subscription is gone (404, 410); it was deleted.
	Removed Outcome = "removed"
	// Refused: the push service refused the request for good (another 4xx); it is dropped and
	// the subscription's last error says why.
	Refused Outcome = "refused"
	// NoSubscription: the subscription was deleted before the send.
	NoSubscription Outcome = "no_subscription"
)

// payload is what the browser's service worker receives, decrypted.
type payload struct {
	MessageID kernel.ID `json:"message_id"`
	ChannelID kernel.ID `json:"channel_id"`
	ThreadID  kernel.ID `json:"thread_id"`
	Reason    string    `json:"reason"`
	Preview   string    `json:"preview,omitempty"`
}

// Send is the handler of JobSend: it sends one notification to one subscription. It returns an
// error, so that the queue tries again after its backoff, when the push service could not be
// reached or answered 429 or 5xx; the Outcome otherwise, with status the push service's
// answer (0 when none was sent).
func (s *Service) Send(ctx context.Context, a SendArgs) (Outcome, int, error) {
	sub, err := s.d.Store.Subscription(ctx, a.SubscriptionID)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return NoSubscription, 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	p := payload{MessageID: a.MessageID, ChannelID: a.ChannelID, ThreadID: a.ThreadID, Reason: a.Reason}
	if sub.Previews && !a.MessageID.IsZero() {
		text, err := s.d.Store.Preview(ctx, a.MessageID)
		if err != nil {
			return "", 0, err
		}
		p.Preview = cut(text, s.c.PreviewRunes)
	}
	plain, err := json.Marshal(p)
	if err != nil {
		return "", 0, fmt.Errorf("push: encode the payload: %w", err)
	}
	pub, err1 := b64url.DecodeString(sub.P256DH)
	secret, err2 := b64url.DecodeString(sub.Auth)
	if err1 != nil || err2 != nil {
		return "", 0, fmt.Errorf("push: the stored keys of subscription %s do not decode", sub.ID)
	}
	body, err := Encrypt(plain, pub, secret)
	if err != nil {
		return "", 0, err
	}
	authorization, err := s.authorization(ctx, sub.Endpoint)
	if err != nil {
		return "", 0, err
	}
	status, err := s.d.Sender.Post(ctx, sub.Endpoint, map[string]string{
		"Authorization":    authorization,
		"TTL":              strconv.FormatInt(int64(s.c.TTL/time.Second), 10),
		"Content-Encoding": "aes128gcm",
		"Content-Type":     "application/octet-stream",
		"Urgency":          "normal",
	}, body)
	if err != nil {
		s.noteError(ctx, sub, "the push service could not be reached")
		return "", 0, fmt.Errorf("push: send to subscription %s: %w", sub.ID, err)
	}
	switch {
	case status >= 200 && status < 300:
		if sub.LastError != "" {
			if err := s.d.Store.SetLastError(ctx, sub.ID, ""); err != nil {
				return "", status, err
			}
		}
		return Delivered, status, nil
	case status == 404 || status == 410:
		_, err := s.d.Store.DeleteSubscription(ctx, sub.ID, kernel.ID(""))
		return Removed, status, err
	case status == 429 || status >= 500:
		s.noteError(ctx, sub, fmt.Sprintf("the push service answered %d", status))
		return "", status, fmt.Errorf("push: subscription %s: the push service answered %d", sub.ID, status)
	default:
		return Refused, status, s.d.Store.SetLastError(ctx, sub.ID, fmt.Sprintf("the push service refused the notification with %d", status))
	}
}

// noteError records why a send failed, for the person's list; a failure to record it does not
// change the send's outcome.
func (s *Service) noteError(ctx context.Context, sub Subscription, msg string) {
	if sub.LastError != msg {
		_ = s.d.Store.SetLastError(ctx, sub.ID, msg)
	}
}

// authorization is the Authorization header for a send to endpoint.
func (s *Service) authorization(ctx context.Context, endpoint string) (string, error) {
	aud, err := Audience(endpoint)
	if err != nil {
		return "", err
	}
	key, pub, err := s.vapid(ctx)
	if err != nil {
		return "", err
	}
	now := s.d.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[aud]; ok && now.Before(t.renew) {
		return t.header, nil
	}
	tok, err := vapidToken(key, aud, s.c.Subject, now.Add(tokenLife))
	if err != nil {
		return "", err
	}
	if len(s.tokens) > 1000 { // a few push services in practice; bound it all the same
		clear(s.tokens)
	}
	h := "vapid t=" + tok + ", k=" + pub
	s.tokens[aud] = cachedToken{header: h, renew: now.Add(tokenLife - tokenRenew)}
	return h, nil
}

// cut returns the first n runes of s, with an ellipsis when it cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k] + "…"
		}
		i++
	}
	return s
}
