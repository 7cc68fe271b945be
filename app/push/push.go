// Package push is Web Push for people (RFC 8030, with message encryption per RFC 8291 and VAPID
// per RFC 8292): a person's browsers register push subscriptions; the notifier hands a
// notification to Enqueue inside its Unit of Work, which writes one send per subscription into
// the outbox (push_outbox) and enqueues the push.deliver job; the job (Deliver) encrypts a small
// payload of ids for each subscription and posts it to the browser's push service, many at
// once, deletes a subscription the push service says is gone, and sends again after a backoff
// when the push service is busy or out of reach.
//
// Why an outbox and not one job per send: the job queue hands out its jobs one receive (one
// write transaction) at a time, which on SQLite with synchronous=FULL caps it near 250 jobs a
// second on a small machine; one job draining the outbox in batches sends thousands a second
// (bench/push). The outbox keeps the queue's rules: its rows commit with the notification, hold
// ids only, and a send is tried a bounded number of times with a doubling wait.
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
	"slices"
	"strconv"
	"strings"
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

// The jobs of push, each a drain of the outbox (Deliver). JobDeliver is what Enqueue enqueues,
// keyed, so that one waits however many sends do; a send enqueued while a JobDeliver is
// finishing finds the key taken, so every JobDeliver ends by enqueuing a JobDeliverTail shortly
// after, which drains what came meanwhile (and enqueues another while it finds sends). A retry
// is a JobDeliver at its due time. JobSweep is the periodic safety net (a process that died
// while it held a send's lease, a tail that ran before its JobDeliver was gone).
const (
	JobDeliver     = "push.deliver"
	JobDeliverTail = "push.deliver_tail"
	JobSweep       = "push.deliver_sweep"
)

// tailDelay is how long after a drain its tail runs: time for the queue to remove the drain's
// job, so that a send enqueued after the tail's look has a JobDeliver of its own.
const tailDelay = 100 * time.Millisecond

// SweepInterval is how often JobSweep runs: rarely, since the tails and the retries' own jobs
// do the work, so that an idle instance writes little.
const SweepInterval = time.Minute

// Pending is one send in the outbox: a notification for one subscription. Ids and the reason
// only.
type Pending struct {
	ID             kernel.ID
	SubscriptionID kernel.ID
	MessageID      kernel.ID
	ChannelID      kernel.ID
	ThreadID       kernel.ID
	Reason         string
	// Attempts is how many sends failed so far.
	Attempts int
	// DueAt is when it may be sent (again).
	DueAt     time.Time
	CreatedAt time.Time
}

// Note is a subscription's new last error ("" clears it).
type Note struct {
	SubscriptionID kernel.ID
	Error          string
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
	// AddPending adds sends to the outbox, in the Unit of Work of ctx.
	AddPending(ctx context.Context, p []Pending) error
	// ClaimPending returns up to limit sends due at now, earliest first, and makes them due
	// again only at leaseUntil, so that no other sender takes them meanwhile.
	ClaimPending(ctx context.Context, now, leaseUntil time.Time, limit int) ([]Pending, error)
	// FinishPending, in the Unit of Work of ctx, deletes the sends done, writes the attempts
	// and due time of those to retry, deletes the subscriptions gone (and their sends), and
	// writes the notes.
	FinishPending(ctx context.Context, done []kernel.ID, retry []Pending, gone []kernel.ID, notes []Note) error
	// NextPendingDue returns the earliest due time of the outbox, if it holds a send.
	NextPendingDue(ctx context.Context) (time.Time, bool, error)
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
	// Batch is how many sends Deliver claims at a time, and Senders how many of them it sends
	// at once.
	Batch, Senders int
	// Lease is how long a claimed send stays away from other senders.
	Lease time.Duration
	// MaxAttempts is how often a send is tried before it is dropped; BackoffMin and BackoffMax
	// bound the wait before the next try (doubling from the first), as the job queue's own.
	MaxAttempts            int
	BackoffMin, BackoffMax time.Duration
}

// DefaultConfig is push's configuration without settings.
func DefaultConfig() Config {
	return Config{TTL: 24 * time.Hour, MaxSubscriptions: 20, PreviewRunes: 100, Batch: 256, Senders: 32,
		Lease: 2 * time.Minute, MaxAttempts: 5, BackoffMin: time.Second, BackoffMax: 10 * time.Minute}
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

// New returns the service. c is DefaultConfig() with the settings applied; it panics on a
// configuration that cannot work (a bound that is not positive), as the other modules' do.
func New(d Deps, c Config) *Service {
	if p := c.problems(); len(p) > 0 {
		panic("push: invalid configuration: " + strings.Join(p, "; "))
	}
	return &Service{d: d, c: c, tokens: map[string]cachedToken{}}
}

// problems lists what makes c unusable: every bound must be positive, and the longest backoff
// no shorter than the first.
func (c Config) problems() []string {
	var out []string
	for name, v := range map[string]int64{"TTL": int64(c.TTL), "MaxSubscriptions": int64(c.MaxSubscriptions),
		"PreviewRunes": int64(c.PreviewRunes), "Batch": int64(c.Batch), "Senders": int64(c.Senders), "Lease": int64(c.Lease),
		"MaxAttempts": int64(c.MaxAttempts), "BackoffMin": int64(c.BackoffMin), "BackoffMax": int64(c.BackoffMax)} {
		if v <= 0 {
			out = append(out, name+" must be positive")
		}
	}
	if c.BackoffMax < c.BackoffMin {
		out = append(out, "BackoffMax must not be shorter than BackoffMin")
	}
	slices.Sort(out)
	return out
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

// Enqueue queues the sends of n to every subscription of principal, in the Unit of Work of ctx
// (in one of its own when ctx carries none), so that they commit with the notification: one row
// of the outbox per subscription, and the push.deliver job, which is one job however many
// notifications wait (the queue keeps one per key). A person without subscriptions costs one
// indexed read. Errors: validation_failed for a bad reason; the store's and the queue's.
func (s *Service) Enqueue(ctx context.Context, principalID kernel.ID, n Notification) error {
	if !validReason(n.Reason) {
		return kernel.Invalid("reason", "a notification's reason is lower case letters, digits and '_', at most 40 bytes")
	}
	return s.d.UoW.Do(ctx, func(ctx context.Context) error {
		subs, err := s.d.Store.Subscriptions(ctx, principalID)
		if err != nil || len(subs) == 0 {
			return err
		}
		now := s.d.Clock.Now()
		rows := make([]Pending, 0, len(subs))
		for _, sub := range subs {
			rows = append(rows, Pending{ID: kernel.NewID(), SubscriptionID: sub.ID, MessageID: n.MessageID, ChannelID: n.ChannelID,
				ThreadID: n.ThreadID, Reason: n.Reason, DueAt: now, CreatedAt: now})
		}
		if err := s.d.Store.AddPending(ctx, rows); err != nil {
			return err
		}
		return s.d.Jobs.Enqueue(ctx, kernel.Job{Name: JobDeliver, Key: "now"})
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
	// Retry: no answer, 429 or 5xx; the send is tried again after a backoff, or dropped after
	// its last attempt.
	Retry Outcome = "retry"
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

// Report is what one Deliver did. Removed counts the sends to subscriptions found gone.
type Report struct {
	Delivered, Removed, Refused, Retried, Dropped int
}

// sent reports whether the drain found any send due.
func (r Report) sent() bool { return r.Delivered+r.Removed+r.Refused+r.Retried+r.Dropped > 0 }

// HandleDeliver is the handler of JobDeliver: a drain, and then its tail.
func (s *Service) HandleDeliver(ctx context.Context) (Report, error) {
	r, err := s.Deliver(ctx)
	if err != nil {
		return r, err
	}
	return r, s.enqueueTail(ctx)
}

// HandleTail is the handler of JobDeliverTail: a drain, and another tail when it found sends.
func (s *Service) HandleTail(ctx context.Context) (Report, error) {
	r, err := s.Deliver(ctx)
	if err != nil || !r.sent() {
		return r, err
	}
	return r, s.enqueueTail(ctx)
}

func (s *Service) enqueueTail(ctx context.Context) error {
	return s.d.Jobs.Enqueue(ctx, kernel.Job{Name: JobDeliverTail, At: time.Now().Add(tailDelay)})
}

// Deliver is the drain of the outbox that every job of push runs: it claims the
// due sends of the outbox, batch by batch, sends each batch at once (Config.Senders at a time),
// and records the outcomes in one Unit of Work per batch, until nothing is due. A send without
// an answer, or answered 429 or 5xx, is due again after a backoff (Config.BackoffMin doubling
// to BackoffMax) and dropped after Config.MaxAttempts; 404 and 410 delete the subscription;
// another 4xx drops the send and notes the error on the subscription. When retries remain, it
// enqueues a push.deliver job at the earliest. Claimed sends are leased: a process that dies
// while sending leaves them due again when the lease ends. It returns an error only when the
// store or the queue fails, so that the queue runs it again.
func (s *Service) Deliver(ctx context.Context) (Report, error) {
	var rep Report
	for ctx.Err() == nil {
		now := s.d.Clock.Now()
		batch, err := s.d.Store.ClaimPending(ctx, now.Add(claimSlack), now.Add(s.c.Lease), s.c.Batch)
		if err != nil {
			return rep, err
		}
		if len(batch) == 0 {
			break
		}
		results := s.sendAll(ctx, batch)
		var done []kernel.ID
		var retry []Pending
		var notes []Note
		var gone []kernel.ID
		for i, r := range results {
			p := batch[i]
			switch r.outcome {
			case Delivered, NoSubscription:
				rep.Delivered += boolCount(r.outcome == Delivered)
				done = append(done, p.ID)
			case Removed:
				rep.Removed++
				gone = append(gone, p.SubscriptionID)
			case Refused:
				rep.Refused++
				done = append(done, p.ID)
			case Retry:
				if p.Attempts+1 >= s.c.MaxAttempts {
					rep.Dropped++
					done = append(done, p.ID)
				} else {
					rep.Retried++
					p.Attempts++
					p.DueAt = s.d.Clock.Now().Add(s.backoff(p.Attempts))
					retry = append(retry, p)
				}
			}
			if r.note != nil {
				notes = append(notes, Note{SubscriptionID: p.SubscriptionID, Error: *r.note})
			}
		}
		if err := s.d.UoW.Do(ctx, func(ctx context.Context) error {
			return s.d.Store.FinishPending(ctx, done, retry, gone, notes)
		}); err != nil {
			return rep, err
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	if next, ok, err := s.d.Store.NextPendingDue(ctx); err != nil {
		return rep, err
	} else if ok {
		// The key names the second, so that the retries due in one second share one job.
		if err := s.d.Jobs.Enqueue(ctx, kernel.Job{Name: JobDeliver, At: next, Key: "at:" + strconv.FormatInt(next.Unix(), 10)}); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// claimSlack is how early Deliver takes a send: the job queue keeps due times to the
// millisecond, so the job scheduled for a retry may start a little before the retry's due time,
// and would then find nothing due and, its own key still taken, leave the retry to the sweep.
const claimSlack = 100 * time.Millisecond

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// backoff is the wait after the attempt-th failed send.
func (s *Service) backoff(attempt int) time.Duration {
	d := s.c.BackoffMin
	for i := 1; i < attempt && d < s.c.BackoffMax; i++ {
		d *= 2
	}
	return min(d, s.c.BackoffMax)
}

// result is the outcome of one send and, when it changes, the subscription's last error ("" to
// clear it).
type result struct {
	outcome Outcome
	note    *string
}

// sendAll sends the batch, Config.Senders at a time, and returns the results in its order.
func (s *Service) sendAll(ctx context.Context, batch []Pending) []result {
	out := make([]result, len(batch))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(s.c.Senders, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i] = s.send(ctx, batch[i])
			}
		}()
	}
	for i := range batch {
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

// send sends one notification to its subscription.
func (s *Service) send(ctx context.Context, p Pending) result {
	note := func(o Outcome, msg string) result { return result{outcome: o, note: &msg} }
	sub, err := s.d.Store.Subscription(ctx, p.SubscriptionID)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return result{outcome: NoSubscription}
	}
	if err != nil {
		return result{outcome: Retry}
	}
	body, authorization, err := s.request(ctx, sub, p)
	if err != nil {
		return note(Retry, "the notification could not be prepared")
	}
	status, err := s.d.Sender.Post(ctx, sub.Endpoint, map[string]string{
		"Authorization":    authorization,
		"TTL":              strconv.FormatInt(int64(s.c.TTL/time.Second), 10),
		"Content-Encoding": "aes128gcm",
		"Content-Type":     "application/octet-stream",
		"Urgency":          "normal",
	}, body)
	switch {
	case err != nil:
		return note(Retry, "the push service could not be reached")
	case status >= 200 && status < 300:
		if sub.LastError != "" {
			return note(Delivered, "")
		}
		return result{outcome: Delivered}
	case status == 404 || status == 410:
		return result{outcome: Removed}
	case status == 429 || status >= 500:
		return note(Retry, fmt.Sprintf("the push service answered %d", status))
	default:
		return note(Refused, fmt.Sprintf("the push service refused the notification with %d", status))
	}
}

// request builds the encrypted body of p for sub and its Authorization header.
func (s *Service) request(ctx context.Context, sub Subscription, p Pending) (body []byte, authorization string, err error) {
	pl := payload{MessageID: p.MessageID, ChannelID: p.ChannelID, ThreadID: p.ThreadID, Reason: p.Reason}
	if sub.Previews && !p.MessageID.IsZero() {
		text, err := s.d.Store.Preview(ctx, p.MessageID)
		if err != nil {
			return nil, "", err
		}
		pl.Preview = cut(text, s.c.PreviewRunes)
	}
	plain, err := json.Marshal(pl)
	if err != nil {
		return nil, "", fmt.Errorf("push: encode the payload: %w", err)
	}
	pub, err1 := b64url.DecodeString(sub.P256DH)
	secret, err2 := b64url.DecodeString(sub.Auth)
	if err1 != nil || err2 != nil {
		return nil, "", fmt.Errorf("push: the stored keys of subscription %s do not decode", sub.ID)
	}
	if body, err = Encrypt(plain, pub, secret); err != nil {
		return nil, "", err
	}
	authorization, err = s.authorization(ctx, sub.Endpoint)
	return body, authorization, err
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
