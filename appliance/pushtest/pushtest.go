// Package pushtest is a fake Web Push service for tests and benchmarks: it issues
// subscriptions as a browser would (a P-256 key pair and an auth secret of its own, and an
// endpoint on itself), and for every push request it verifies the VAPID header (an ES256 JWT
// signed by the k= key, aud its own origin, exp in the future and at most 24 hours ahead),
// decrypts the payload with the subscription's keys (RFC 8291) and records what arrived. It
// can be told to answer an endpoint with another status (410 to say the subscription is gone,
// 500 to have the sender try again).
//
// It must not be used outside tests and benchmarks: it keeps every private key in memory.
package pushtest

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"bothy.dev/bothy/app/push"
)

// Subscription is what a browser hands its server: the endpoint and the keys, base64url.
type Subscription struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256DH string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// Received is one push request the service accepted and decrypted.
type Received struct {
	// Endpoint is the subscription's endpoint.
	Endpoint string
	// Payload is the decrypted body.
	Payload []byte
	// VAPID is what the Authorization header carried, verified.
	VAPID push.VAPIDToken
	// TTL and Urgency are the header fields of the request.
	TTL, Urgency string
	// Status is what the service answered.
	Status int
}

// Fields decodes the payload as a JSON object.
func (r Received) Fields() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Payload, &m)
	return m
}

type sub struct {
	key    *ecdh.PrivateKey
	auth   []byte
	status []int // answers to give, first one first; the last one stays
}

// Service is the fake push service.
type Service struct {
	srv *httptest.Server

	mu       sync.Mutex
	subs     map[string]*sub // by path
	got      []Received
	attempts map[string]int // by endpoint: every request, accepted or not
	refused  []string       // why requests were refused (bad VAPID, body that does not decrypt)
	key      string         // the VAPID key the requests must carry; "" takes any
	changed  chan struct{}
}

// New starts the service on a loopback port; Close stops it.
func New() *Service {
	s := &Service{subs: map[string]*sub{}, attempts: map[string]int{}, changed: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close stops the service.
func (s *Service) Close() { s.srv.Close() }

// URL is the service's origin.
func (s *Service) URL() string { return s.srv.URL }

// ExpectKey makes the service refuse (403) a request signed with any key but publicKey
// (base64url), the applicationServerKey its browsers subscribed with.
func (s *Service) ExpectKey(publicKey string) {
	s.mu.Lock()
	s.key = publicKey
	s.mu.Unlock()
}

// Subscribe issues a subscription, as a browser's pushManager.subscribe does.
func (s *Service) Subscribe() Subscription {
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	auth := make([]byte, push.AuthSecretBytes)
	rand.Read(auth)
	id := make([]byte, 12)
	rand.Read(id)
	path := "/push/" + base64.RawURLEncoding.EncodeToString(id)
	s.mu.Lock()
	s.subs[path] = &sub{key: key, auth: auth}
	s.mu.Unlock()
	var out Subscription
	out.Endpoint = s.srv.URL + path
	out.Keys.P256DH = base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes())
	out.Keys.Auth = base64.RawURLEncoding.EncodeToString(auth)
	return out
}

// Answer makes the service answer the next requests to endpoint with statuses, one each, and
// every later one with the last (201 when none is given).
func (s *Service) Answer(endpoint string, statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.subs[strings.TrimPrefix(endpoint, s.srv.URL)]; sb != nil {
		sb.status = statuses
	}
}

// Received returns what the service accepted, in order.
func (s *Service) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.got...)
}

// Attempts returns how many requests reached endpoint, whatever the service answered.
func (s *Service) Attempts(endpoint string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[endpoint]
}

// Refused returns why the service refused requests it could not verify or decrypt.
func (s *Service) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

// Wait waits until cond holds on the service or timeout passes, and reports whether it held.
// cond runs with the service's state as it is at each change.
func (s *Service) Wait(timeout time.Duration, cond func(s *Service) bool) bool {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond(s) {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return cond(s)
		}
	}
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<10))
	endpoint := s.srv.URL + r.URL.Path
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.signal()
	s.attempts[endpoint]++
	sb := s.subs[r.URL.Path]
	if r.Method != http.MethodPost || sb == nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	refuse := func(status int, format string, args ...any) {
		s.refused = append(s.refused, fmt.Sprintf(format, args...))
		w.WriteHeader(status)
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		refuse(http.StatusBadRequest, "Content-Encoding %q", ce)
		return
	}
	if r.Header.Get("TTL") == "" {
		refuse(http.StatusBadRequest, "no TTL")
		return
	}
	tok, err := push.VerifyVAPID(r.Header.Get("Authorization"), s.srv.URL, time.Now())
	if err != nil {
		refuse(http.StatusUnauthorized, "VAPID: %v", err)
		return
	}
	if s.key != "" && tok.PublicKey != s.key {
		refuse(http.StatusForbidden, "VAPID: signed with another key than the subscription's")
		return
	}
	plain, err := push.Decrypt(body, sb.key, sb.auth)
	if err != nil {
		refuse(http.StatusBadRequest, "payload: %v", err)
		return
	}
	status := http.StatusCreated
	if len(sb.status) > 0 {
		status = sb.status[0]
		if len(sb.status) > 1 {
			sb.status = sb.status[1:]
		}
	}
	s.got = append(s.got, Received{Endpoint: endpoint, Payload: plain, VAPID: tok,
		TTL: r.Header.Get("TTL"), Urgency: r.Header.Get("Urgency"), Status: status})
	if status == http.StatusGone || status == http.StatusNotFound {
		delete(s.subs, r.URL.Path)
	}
	w.WriteHeader(status)
}

// signal wakes the waiters; it runs with s.mu held.
func (s *Service) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}
