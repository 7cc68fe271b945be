package push

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
)

// memStore is push.Store in memory.
type memStore struct {
	mu     sync.Mutex
	subs   map[kernel.ID]Subscription
	key    *VAPIDKey
	texts  map[kernel.ID]string
	outbox map[kernel.ID]Pending
}

var _ Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{subs: map[kernel.ID]Subscription{}, texts: map[kernel.ID]string{}, outbox: map[kernel.ID]Pending{}}
}

func (m *memStore) SubscriptionByEndpoint(_ context.Context, endpoint string) (Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.subs {
		if s.Endpoint == endpoint {
			return s, nil
		}
	}
	return Subscription{}, kernel.ErrNotFound
}

func (m *memStore) Subscription(_ context.Context, id kernel.ID) (Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.subs[id]
	if !ok {
		return Subscription{}, kernel.ErrNotFound
	}
	return s, nil
}

func (m *memStore) Subscriptions(_ context.Context, p kernel.ID) ([]Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Subscription
	for _, s := range m.subs {
		if s.PrincipalID == p {
			out = append(out, s)
		}
	}
	return out, nil
}

func (m *memStore) InsertSubscription(_ context.Context, s Subscription) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.subs[s.ID] = s
	return nil
}

func (m *memStore) UpdateSubscription(_ context.Context, s Subscription) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.subs[s.ID] = s
	return nil
}

func (m *memStore) DeleteSubscription(_ context.Context, id, p kernel.ID) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.subs[id]
	if !ok || (!p.IsZero() && s.PrincipalID != p) {
		return false, nil
	}
	delete(m.subs, id)
	return true, nil
}

func (m *memStore) AddPending(_ context.Context, rows []Pending) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range rows {
		m.outbox[p.ID] = p
	}
	return nil
}

func (m *memStore) ClaimPending(_ context.Context, now, lease time.Time, limit int) ([]Pending, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Pending
	for id, p := range m.outbox {
		if len(out) < limit && !p.DueAt.After(now) {
			p.DueAt = lease
			m.outbox[id] = p
			out = append(out, p)
		}
	}
	return out, nil
}

func (m *memStore) FinishPending(_ context.Context, done []kernel.ID, retry []Pending, gone []kernel.ID, notes []Note) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range done {
		delete(m.outbox, id)
	}
	for _, p := range retry {
		m.outbox[p.ID] = p
	}
	for _, id := range gone {
		delete(m.subs, id)
		for pid, p := range m.outbox {
			if p.SubscriptionID == id {
				delete(m.outbox, pid)
			}
		}
	}
	for _, n := range notes {
		if s, ok := m.subs[n.SubscriptionID]; ok {
			s.LastError = n.Error
			m.subs[n.SubscriptionID] = s
		}
	}
	return nil
}

func (m *memStore) NextPendingDue(context.Context) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next time.Time
	for _, p := range m.outbox {
		if next.IsZero() || p.DueAt.Before(next) {
			next = p.DueAt
		}
	}
	return next, !next.IsZero(), nil
}

func (m *memStore) EnsureVAPIDKey(_ context.Context, c VAPIDKey) (VAPIDKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.key == nil {
		m.key = &c
	}
	return *m.key, nil
}

func (m *memStore) Preview(_ context.Context, id kernel.ID) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.texts[id], nil
}

// request is one post the fake sender received.
type request struct {
	url    string
	header map[string]string
	body   []byte
}

// fakeSender answers Status (201 when zero) or Err, and records every request.
type fakeSender struct {
	mu     sync.Mutex
	Status int
	Err    error
	got    []request
}

func (f *fakeSender) Post(_ context.Context, url string, h map[string]string, body []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, request{url, h, body})
	if f.Err != nil {
		return 0, f.Err
	}
	if f.Status == 0 {
		return 201, nil
	}
	return f.Status, nil
}

// browser is a browser's subscription keys.
type browser struct {
	key  *ecdh.PrivateKey
	auth []byte
}

func newBrowser(t *testing.T) browser {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return browser{k, auth}
}

func (b browser) input(endpoint string) SubscribeInput {
	return SubscribeInput{Endpoint: endpoint, P256DH: b64url.EncodeToString(b.key.PublicKey().Bytes()), Auth: b64url.EncodeToString(b.auth)}
}

type fixture struct {
	svc    *Service
	store  *memStore
	tx     *kerneltest.Tx
	sender *fakeSender
	clock  *kernel.ManualClock
}

func newFixture(t *testing.T, c Config) fixture {
	f := fixture{store: newMemStore(), tx: &kerneltest.Tx{}, sender: &fakeSender{}, clock: kernel.NewManualClock(time.Now())}
	f.svc = New(Deps{Store: f.store, Jobs: f.tx, UoW: f.tx, Authz: &kerneltest.Authz{}, Clock: f.clock, Sender: f.sender}, c)
	return f
}

func TestSubscribe(t *testing.T) {
	ctx := context.Background()
	ada := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
	bob := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}

	t.Run("a new endpoint is new, the same again renews its keys and keeps its id", func(t *testing.T) {
		f := newFixture(t, DefaultConfig())
		b := newBrowser(t)
		yes := true
		in := b.input("https://push.example.com/a")
		in.Previews = &yes
		s1, isNew, err := f.svc.Subscribe(ctx, ada, in)
		if err != nil || !isNew || !s1.Previews {
			t.Fatalf("%+v %v %v", s1, isNew, err)
		}
		b2 := newBrowser(t)
		s2, isNew, err := f.svc.Subscribe(ctx, ada, b2.input("https://push.example.com/a"))
		if err != nil || isNew || s2.ID != s1.ID || s2.P256DH == s1.P256DH || !s2.Previews {
			t.Fatalf("%+v %v %v", s2, isNew, err)
		}
	})
	t.Run("another person's endpoint is refused", func(t *testing.T) {
		f := newFixture(t, DefaultConfig())
		b := newBrowser(t)
		if _, _, err := f.svc.Subscribe(ctx, ada, b.input("https://push.example.com/a")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.svc.Subscribe(ctx, bob, b.input("https://push.example.com/a")); !kernel.IsCode(err, CodeEndpointTaken) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a person holds at most MaxSubscriptions", func(t *testing.T) {
		f := newFixture(t, kerneltest.With(DefaultConfig(), func(c *Config) { c.MaxSubscriptions = 2 }))
		b := newBrowser(t)
		for i, ep := range []string{"https://p.example.com/1", "https://p.example.com/2", "https://p.example.com/3"} {
			_, _, err := f.svc.Subscribe(ctx, ada, b.input(ep))
			if i < 2 && err != nil || i == 2 && !kernel.IsCode(err, CodeSubscriptionLimit) {
				t.Fatalf("%d: %v", i, err)
			}
		}
		if _, _, err := f.svc.Subscribe(ctx, ada, b.input("https://p.example.com/1")); err != nil {
			t.Fatalf("renewing one at the limit: %v", err)
		}
	})
	t.Run("bad endpoints and keys are refused and store nothing", func(t *testing.T) {
		f := newFixture(t, DefaultConfig())
		b := newBrowser(t)
		for _, c := range []struct {
			in   SubscribeInput
			code kernel.Code
		}{
			{b.input("http://push.example.com/a"), CodeEndpointRefused},
			{b.input("https://10.0.0.1/a"), CodeEndpointRefused},
			{SubscribeInput{Endpoint: "https://push.example.com/a", P256DH: "AAAA", Auth: b64url.EncodeToString(b.auth)}, CodeKeysInvalid},
			{SubscribeInput{Endpoint: "https://push.example.com/a", P256DH: b64url.EncodeToString(b.key.PublicKey().Bytes()), Auth: "AAAA"}, CodeKeysInvalid},
		} {
			if _, _, err := f.svc.Subscribe(ctx, ada, c.in); !kernel.IsCode(err, c.code) {
				t.Errorf("%+v: %v", c.in, err)
			}
		}
		if len(f.store.subs) != 0 {
			t.Fatalf("stored %v", f.store.subs)
		}
	})
	t.Run("one person cannot delete another's subscription", func(t *testing.T) {
		f := newFixture(t, DefaultConfig())
		s, _, _ := f.svc.Subscribe(ctx, ada, newBrowser(t).input("https://push.example.com/a"))
		if err := f.svc.Unsubscribe(ctx, bob, s.ID); !kernel.IsCode(err, kernel.CodeNotFound) {
			t.Fatalf("err %v", err)
		}
		if err := f.svc.Unsubscribe(ctx, ada, s.ID); err != nil {
			t.Fatal(err)
		}
	})
}

func TestEnqueueAndDeliver(t *testing.T) {
	ctx := context.Background()
	ada := kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}
	msg, ch, th := kernel.NewID(), kernel.NewID(), kernel.NewID()
	n := Notification{MessageID: msg, ChannelID: ch, ThreadID: th, Reason: "mention", Preview: "not queued"}

	setup := func(t *testing.T, previews bool) (fixture, browser, Subscription) {
		f := newFixture(t, kerneltest.With(DefaultConfig(), func(c *Config) { c.Subject = "mailto:ops@example.com" }))
		b := newBrowser(t)
		in := b.input("https://push.example.com:8443/send/a")
		in.Previews = &previews
		s, _, err := f.svc.Subscribe(ctx, ada, in)
		if err != nil {
			t.Fatal(err)
		}
		return f, b, s
	}
	deliver := func(t *testing.T, f fixture) Report {
		t.Helper()
		r, err := f.svc.Deliver(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	t.Run("Enqueue adds one send per subscription, with ids and no text, and one keyed deliver job", func(t *testing.T) {
		f, b, _ := setup(t, true)
		if _, _, err := f.svc.Subscribe(ctx, ada, b.input("https://push.example.com/send/b")); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := f.svc.Enqueue(ctx, ada.ID, n); err != nil {
				t.Fatal(err)
			}
		}
		if len(f.store.outbox) != 4 {
			t.Fatalf("outbox %+v", f.store.outbox)
		}
		for _, p := range f.store.outbox {
			if p.MessageID != msg || p.ChannelID != ch || p.ThreadID != th || p.Reason != "mention" {
				t.Fatalf("%+v", p)
			}
		}
		for _, j := range f.tx.Jobs() {
			if j.Name != JobDeliver || j.Key != "now" || j.Args != nil {
				t.Fatalf("job %+v", j)
			}
		}
	})
	t.Run("a person without subscriptions gets no send and no job, a bad reason is refused", func(t *testing.T) {
		f := newFixture(t, DefaultConfig())
		if err := f.svc.Enqueue(ctx, ada.ID, n); err != nil || len(f.tx.Jobs()) != 0 || len(f.store.outbox) != 0 {
			t.Fatalf("%v %v", err, f.tx.Jobs())
		}
		bad := n
		bad.Reason = "Mention!"
		if err := f.svc.Enqueue(ctx, ada.ID, bad); !kernel.IsCode(err, kernel.CodeValidation) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a send is encrypted for the browser and signed with VAPID for the push service's origin", func(t *testing.T) {
		f, b, _ := setup(t, true)
		f.store.texts[msg] = strings.Repeat("ü", 150)
		f.svc.Enqueue(ctx, ada.ID, n)
		if r := deliver(t, f); r.Delivered != 1 || len(f.store.outbox) != 0 {
			t.Fatalf("%+v, outbox %v", r, f.store.outbox)
		}
		r := f.sender.got[0]
		if r.url != "https://push.example.com:8443/send/a" || r.header["Content-Encoding"] != "aes128gcm" || r.header["TTL"] != "86400" {
			t.Fatalf("request %s %v", r.url, r.header)
		}
		tok, err := VerifyVAPID(r.header["Authorization"], "https://push.example.com:8443", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := f.svc.PublicKey(ctx, ada)
		if tok.PublicKey != pub || tok.Subject != "mailto:ops@example.com" {
			t.Fatalf("token %+v, public key %s", tok, pub)
		}
		plain, err := Decrypt(r.body, b.key, b.auth)
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]string
		if err := json.Unmarshal(plain, &p); err != nil {
			t.Fatal(err)
		}
		if p["message_id"] != string(msg) || p["channel_id"] != string(ch) || p["thread_id"] != string(th) || p["reason"] != "mention" ||
			p["preview"] != strings.Repeat("ü", 100)+"…" {
			t.Fatalf("payload %v", p)
		}
	})
	t.Run("a subscription without previews gets no text", func(t *testing.T) {
		f, b, _ := setup(t, false)
		f.store.texts[msg] = "secret"
		f.svc.Enqueue(ctx, ada.ID, n)
		deliver(t, f)
		plain, _ := Decrypt(f.sender.got[0].body, b.key, b.auth)
		if strings.Contains(string(plain), "preview") || strings.Contains(string(plain), "secret") {
			t.Fatalf("payload %s", plain)
		}
	})
	t.Run("404 and 410 delete the subscription and its sends", func(t *testing.T) {
		for _, status := range []int{404, 410} {
			f, _, s := setup(t, false)
			f.sender.Status = status
			f.svc.Enqueue(ctx, ada.ID, n)
			f.svc.Enqueue(ctx, ada.ID, n)
			f.svc.d.Store.(*memStore).outbox[kernel.NewID()] = Pending{ID: kernel.NewID(), SubscriptionID: s.ID, DueAt: f.clock.Now().Add(time.Hour)}
			if r := deliver(t, f); r.Removed != 2 {
				t.Fatalf("%d: %+v", status, r)
			}
			if _, ok := f.store.subs[s.ID]; ok || len(f.store.outbox) != 0 {
				t.Fatalf("%d: the subscription or its sends are still there: %v", status, f.store.outbox)
			}
		}
	})
	t.Run("429, 5xx and no answer send again after a doubling backoff, and the last attempt drops", func(t *testing.T) {
		for _, c := range []struct {
			status int
			err    error
		}{{429, nil}, {500, nil}, {503, nil}, {0, errors.New("connection refused")}} {
			f, _, s := setup(t, false)
			f.sender.Status, f.sender.Err = c.status, c.err
			f.svc.Enqueue(ctx, ada.ID, n)
			if r := deliver(t, f); r.Retried != 1 || f.store.subs[s.ID].LastError == "" {
				t.Fatalf("%d %v: %+v, %+v", c.status, c.err, r, f.store.subs[s.ID])
			}
			jobs := f.tx.Jobs()
			if last := jobs[len(jobs)-1]; last.Name != JobDeliver || !last.At.Equal(f.clock.Now().Add(time.Second)) {
				t.Fatalf("the retry's job %+v", last)
			}
			if r := deliver(t, f); r.Retried != 0 || len(f.sender.got) != 1 {
				t.Fatalf("sent again before the backoff: %+v", r)
			}
			f.clock.Advance(time.Second)
			deliver(t, f)
			for _, p := range f.store.outbox {
				if p.Attempts != 2 || !p.DueAt.Equal(f.clock.Now().Add(2*time.Second)) {
					t.Fatalf("the second retry %+v", p)
				}
			}
			f.sender.Status, f.sender.Err = 201, nil
			f.clock.Advance(2 * time.Second)
			if r := deliver(t, f); r.Delivered != 1 || f.store.subs[s.ID].LastError != "" || len(f.store.outbox) != 0 {
				t.Fatalf("the retry: %+v %q", r, f.store.subs[s.ID].LastError)
			}
		}
		f, _, _ := setup(t, false)
		f.sender.Status = 500
		f.svc.Enqueue(ctx, ada.ID, n)
		var dropped int
		for range 10 {
			dropped += deliver(t, f).Dropped
			f.clock.Advance(time.Hour)
		}
		if dropped != 1 || len(f.sender.got) != 5 || len(f.store.outbox) != 0 {
			t.Fatalf("dropped %d after %d sends, outbox %v", dropped, len(f.sender.got), f.store.outbox)
		}
	})
	t.Run("another 4xx drops the send and keeps the subscription with its error", func(t *testing.T) {
		f, _, s := setup(t, false)
		f.sender.Status = 400
		f.svc.Enqueue(ctx, ada.ID, n)
		if r := deliver(t, f); r.Refused != 1 || len(f.store.outbox) != 0 {
			t.Fatalf("%+v", r)
		}
		if got := f.store.subs[s.ID]; got.LastError == "" {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("a send whose subscription was deleted is dropped", func(t *testing.T) {
		f, _, s := setup(t, false)
		f.svc.Enqueue(ctx, ada.ID, n)
		delete(f.store.subs, s.ID)
		if r := deliver(t, f); len(f.sender.got) != 0 || len(f.store.outbox) != 0 || r.Delivered != 0 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("many sends go out in batches, several at once", func(t *testing.T) {
		f := newFixture(t, kerneltest.With(DefaultConfig(), func(c *Config) { c.Batch, c.Senders = 7, 3 }))
		for i := range 5 {
			if _, _, err := f.svc.Subscribe(ctx, ada, newBrowser(t).input(fmt.Sprintf("https://push.example.com/%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		for range 10 {
			f.svc.Enqueue(ctx, ada.ID, n)
		}
		if r := deliver(t, f); r.Delivered != 50 || len(f.sender.got) != 50 || len(f.store.outbox) != 0 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("a drain of JobDeliver ends with a tail, and a tail only while it finds sends", func(t *testing.T) {
		f, _, _ := setup(t, false)
		tails := func() (n int) {
			for _, j := range f.tx.Jobs() {
				if j.Name == JobDeliverTail {
					n++
					if j.Key != "" || j.At.Before(time.Now()) {
						t.Fatalf("tail %+v", j)
					}
				}
			}
			return n
		}
		if _, err := f.svc.HandleDeliver(ctx); err != nil || tails() != 1 {
			t.Fatalf("an empty JobDeliver: %v, %d tails", err, tails())
		}
		// A send that came while the drain finished: the tail takes it and looks once more.
		f.svc.Enqueue(ctx, ada.ID, n)
		if r, err := f.svc.HandleTail(ctx); err != nil || r.Delivered != 1 || tails() != 2 {
			t.Fatalf("%+v %v, %d tails", r, err, tails())
		}
		if _, err := f.svc.HandleTail(ctx); err != nil || tails() != 2 {
			t.Fatalf("an empty tail enqueued another: %v, %d tails", err, tails())
		}
	})
	t.Run("the VAPID token is reused for one push service and renewed before it expires", func(t *testing.T) {
		f, _, _ := setup(t, false)
		for range 2 {
			f.svc.Enqueue(ctx, ada.ID, n)
			deliver(t, f)
		}
		f.clock.Advance(tokenLife - tokenRenew + time.Second)
		f.svc.Enqueue(ctx, ada.ID, n)
		deliver(t, f)
		h := func(i int) string { return f.sender.got[i].header["Authorization"] }
		if h(0) != h(1) || h(1) == h(2) {
			t.Fatal("the token was not reused, or not renewed")
		}
	})
}

func TestVAPID(t *testing.T) {
	key, _ := NewVAPIDKey(time.Now())
	signer, err := key.signer()
	if err != nil {
		t.Fatal(err)
	}
	pubBytes, _ := signer.PublicKey.Bytes()
	pub := b64url.EncodeToString(pubBytes)
	now := time.Now()
	header := func(aud string, exp time.Time) string {
		tok, err := vapidToken(signer, aud, "mailto:a@example.com", exp)
		if err != nil {
			t.Fatal(err)
		}
		return "vapid t=" + tok + ", k=" + pub
	}
	t.Run("a token for the audience verifies with its key", func(t *testing.T) {
		got, err := VerifyVAPID(header("https://push.example.com", now.Add(time.Hour)), "https://push.example.com", now)
		if err != nil || got.PublicKey != pub || got.Subject != "mailto:a@example.com" {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("another audience, an expired token, one over 24 hours, another key and a changed signature are refused", func(t *testing.T) {
		other, _ := NewVAPIDKey(now)
		os, _ := other.signer()
		ob, _ := os.PublicKey.Bytes()
		good := header("https://push.example.com", now.Add(time.Hour))
		for name, h := range map[string]string{
			"audience":  header("https://other.example.com", now.Add(time.Hour)),
			"expired":   header("https://push.example.com", now.Add(-time.Minute)),
			"too long":  header("https://push.example.com", now.Add(25*time.Hour)),
			"other key": strings.Replace(good, pub, b64url.EncodeToString(ob), 1),
			"signature": good[:len(good)-len(pub)-10] + "AAAAAAA" + good[len(good)-len(pub)-3:],
			"scheme":    strings.Replace(good, "vapid ", "Bearer ", 1),
		} {
			if _, err := VerifyVAPID(h, "https://push.example.com", now); err == nil {
				t.Errorf("%s: verified", name)
			}
		}
	})
	t.Run("the audience is the endpoint's origin", func(t *testing.T) {
		for ep, want := range map[string]string{
			"https://fcm.googleapis.com/fcm/send/abc": "https://fcm.googleapis.com",
			"https://push.example.com:8443/x?y=1":     "https://push.example.com:8443",
		} {
			if got, err := Audience(ep); err != nil || got != want {
				t.Errorf("%s: %q %v", ep, got, err)
			}
		}
	})
}

func TestValidateEndpoint(t *testing.T) {
	for _, c := range []struct {
		endpoint     string
		allowPrivate bool
		ok           bool
	}{
		{"https://fcm.googleapis.com/fcm/send/abc", false, true},
		{"https://updates.push.services.mozilla.com/wpush/v2/gAAA", false, true},
		{"https://web.push.apple.com/QGuQ", false, true},
		{"http://push.example.com/a", false, false},
		{"https://10.0.0.1/", false, false},
		{"https://[::1]/", false, false},
		{"https://localhost/", false, false},
		{"https://169.254.1.1/", false, false},
		{"https://100.64.1.1/", false, false},
		{"https://[fd00::1]/", false, false},
		{"https://192.168.1.20:8080/push", false, false},
		{"https://pushbox/", false, false},
		{"https://user:pw@push.example.com/", false, false},
		{"https://push.example.com/#frag", false, false},
		{"ftp://push.example.com/", false, false},
		{"/relative", false, false},
		{"", false, false},
		{"https://push.example.com/" + strings.Repeat("a", MaxEndpointBytes), false, false},
		{"http://127.0.0.1:4000/push/1", true, true},
		{"https://localhost/", true, true},
		{"ftp://127.0.0.1/", true, false},
	} {
		err := ValidateEndpoint(c.endpoint, c.allowPrivate)
		if (err == nil) != c.ok {
			t.Errorf("%.60q (private allowed %v): %v", c.endpoint, c.allowPrivate, err)
		}
		if err != nil && !kernel.IsCode(err, CodeEndpointRefused) {
			t.Errorf("%q: code %v", c.endpoint, kernel.CodeOf(err))
		}
	}
}

func TestParseKeys(t *testing.T) {
	b := newBrowser(t)
	pub := b64url.EncodeToString(b.key.PublicKey().Bytes())
	auth := b64url.EncodeToString(b.auth)
	offCurve := append([]byte{4}, make([]byte, 64)...)
	offCurve[64] = 1
	compressed := append([]byte{2}, b.key.PublicKey().Bytes()[1:33]...)
	for name, c := range map[string]struct {
		p256dh, auth string
		ok           bool
	}{
		"the browser's keys":          {pub, auth, true},
		"padded base64url":            {pub + "=", auth + "==", true},
		"a point off the curve":       {b64url.EncodeToString(offCurve), auth, false},
		"a compressed point":          {b64url.EncodeToString(compressed), auth, false},
		"not base64url":               {"!!!", auth, false},
		"an auth secret of 15 bytes":  {pub, b64url.EncodeToString(make([]byte, 15)), false},
		"no auth secret":              {pub, "", false},
		"a p256dh far over the limit": {strings.Repeat("A", 400), auth, false},
	} {
		_, _, err := ParseKeys(c.p256dh, c.auth)
		if (err == nil) != c.ok || err != nil && !kernel.IsCode(err, CodeKeysInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestNewRefusesAnUnusableConfiguration(t *testing.T) {
	for _, c := range []struct {
		name string
		tune func(*Config)
	}{
		{"a batch of none", func(c *Config) { c.Batch = 0 }},
		{"no attempt", func(c *Config) { c.MaxAttempts = 0 }},
		{"a longest backoff shorter than the first", func(c *Config) { c.BackoffMax = c.BackoffMin / 2 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("New took it")
				}
			}()
			New(Deps{}, kerneltest.With(DefaultConfig(), c.tune))
		})
	}
}
