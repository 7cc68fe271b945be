package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client talks to one bothy instance as one principal. Its REST methods may be called from any
// goroutine, also from inside a Run handler; Run itself runs once at a time.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
	log   *slog.Logger

	onEphemeral func(Event) error
	onReady     func(Ready)
	// peek sees every logged event as it arrives, from the reader goroutine, before the
	// handler: Agent learns of run.cancel_requested while a handler still works.
	peek func(Event)

	backoffBase, backoffCap time.Duration
	stableAfter             time.Duration
	readLimit               int64
	helloTimeout            time.Duration
	deviceID                string
	// jitter draws the sleep before a reconnect from [0, ceiling]; tests replace it.
	jitter func(ceiling time.Duration) time.Duration

	running atomic.Bool

	mu sync.Mutex
	// cursor is the seq of the last event handed to the handler (or the head the server said
	// the client is up to); hasCursor is false until the first ready of a client started
	// without WithCursor.
	cursor    int64
	hasCursor bool
	sessionID string
	conn      *gatewayConn // the live connection, for Send; nil between connections
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client of the REST calls and of the WebSocket handshake.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithLogger sets where Run reports its reconnects; by default it says nothing.
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.log = l } }

// WithCursor starts Run after seq: the first identify asks for every event after it (0 replays
// the whole log the token may see). Without it the first connection starts at the head of the
// log, live, and later ones continue from there.
func WithCursor(seq int64) Option {
	return func(c *Client) { c.cursor, c.hasCursor = seq, true }
}

// WithDeviceID names the device in every identify: a UUID in lower case that the program keeps
// (store it with the cursor). A newer connection of the same device, from this program's next
// run for instance, closes this one with 4017 and Run returns ErrReplaced; without it, an older
// process of the same bot that is still connected keeps receiving.
func WithDeviceID(id string) Option { return func(c *Client) { c.deviceID = id } }

// WithEphemeralHandler receives the events that have no seq (typing, presence). They are not
// in the log: they are neither replayed nor deduplicated, and are lost while disconnected. An
// error from it stops Run like one from the main handler. Without it they are dropped.
func WithEphemeralHandler(h func(Event) error) Option { return func(c *Client) { c.onEphemeral = h } }

// WithReadyHandler is called on every ready (or resumed) of Run, before the catch-up, from
// Run's goroutine.
func WithReadyHandler(h func(Ready)) Option { return func(c *Client) { c.onReady = h } }

// WithBackoff sets the reconnect backoff: before the n-th reconnect in a row Run sleeps a random
// time between 0 and min(ceiling, base·2ⁿ⁻¹) (full jitter). Defaults 250 ms and 30 s.
func WithBackoff(base, ceiling time.Duration) Option {
	return func(c *Client) { c.backoffBase, c.backoffCap = base, ceiling }
}

// WithStableAfter sets how long a connection must have been ready for the backoff to start
// over at its base after it ends. Default 10 s.
func WithStableAfter(d time.Duration) Option { return func(c *Client) { c.stableAfter = d } }

// WithReadLimit sets the largest gateway frame Run accepts, in bytes (default 4 MiB).
func WithReadLimit(n int64) Option { return func(c *Client) { c.readLimit = n } }

// New returns a client of the instance at baseURL (such as https://chat.example.com) that
// sends token, a session token or an API token, with every request and identify.
func New(baseURL, token string, opts ...Option) *Client {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// A bad base URL is a programming error of the caller; every call reports it.
		u = &url.URL{Scheme: "invalid", Opaque: baseURL}
	}
	c := &Client{
		base:         u,
		token:        token,
		http:         http.DefaultClient,
		log:          slog.New(slog.DiscardHandler),
		backoffBase:  250 * time.Millisecond,
		backoffCap:   30 * time.Second,
		stableAfter:  10 * time.Second,
		readLimit:    4 << 20,
		helloTimeout: 15 * time.Second,
		jitter: func(ceiling time.Duration) time.Duration {
			if ceiling <= 0 {
				return 0
			}
			return rand.N(ceiling + 1)
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Cursor is the seq of the last event Run handed to the handler (or the head of the log the
// server said the client was up to). Store it after the handler's work is durable and give it
// to WithCursor or SetCursor to continue from there.
func (c *Client) Cursor() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cursor
}

// SetCursor moves the cursor, for example to the head_seq of Events after a resync required
// (ErrResyncRequired), and forgets the session so that the next connection identifies. Call it
// while Run is not running.
func (c *Client) SetCursor(seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cursor, c.hasCursor, c.sessionID = seq, true, ""
}

// ResetCursor forgets the cursor and the session: the next Run starts at the head of the log,
// live, as a client created without WithCursor does. Call it while Run is not running.
func (c *Client) ResetCursor() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cursor, c.hasCursor, c.sessionID = 0, false, ""
}

// User is a principal: a person, an agent or an app.
type User struct {
	ID          string    `json:"id"`
	Handle      string    `json:"handle"`
	DisplayName string    `json:"display_name"`
	Kind        string    `json:"kind"`
	Status      string    `json:"status"`
	IsOwner     bool      `json:"is_owner"`
	CreatedAt   time.Time `json:"created_at"`
}

// Message is a message, as the REST API answers it and as message.created carries it.
type Message struct {
	ID          string   `json:"id"`
	ThreadID    string   `json:"thread_id"`
	ChannelID   string   `json:"channel_id"`
	SpaceID     string   `json:"space_id"`
	AuthorID    string   `json:"author_id"`
	Content     string   `json:"content"`
	ClientMsgID string   `json:"client_msg_id"`
	Mentions    []string `json:"mentions"`
	// RunID is the run the message answers, when an agent posted it with the run's
	// invocation token.
	RunID     string     `json:"run_id,omitempty"`
	Version   int        `json:"version"`
	CreatedAt time.Time  `json:"created_at"`
	EditedAt  *time.Time `json:"edited_at"`
	Deleted   bool       `json:"deleted"`
	// Components are the message's buttons and selects (interactions.go); nil for none.
	Components []ActionRow `json:"components,omitempty"`
	// Attachments are the files the message carries, in order (files.go); nil for none.
	Attachments []Attachment `json:"attachments,omitempty"`
}

// Event is one event. Seq is its place in the log (commit order; a client sees only the events
// it may read, so the seqs it sees have holes); an ephemeral event has Seq 0. Data's shape
// depends on Type (message.created carries a Message).
type Event struct {
	Seq       int64           `json:"seq,omitempty"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"created_at,omitzero"`
	SpaceID   string          `json:"space_id,omitempty"`
	ChannelID string          `json:"channel_id,omitempty"`
	ThreadID  string          `json:"thread_id,omitempty"`
}

// Ephemeral reports whether the event is outside the log (typing, presence).
func (e Event) Ephemeral() bool { return e.Seq == 0 }

// EventPage is one answer of Events.
type EventPage struct {
	Events []Event `json:"events"`
	// HeadSeq is the newest seq of the log.
	HeadSeq int64 `json:"head_seq"`
	// NextAfter is the cursor of the next call.
	NextAfter int64 `json:"next_after"`
}

// APIError is an error answer of the REST API (an RFC 9457 problem document).
type APIError struct {
	Status        int    `json:"status"`
	Code          string `json:"code"` // stable: not_found, forbidden, rate_limited, …
	Title         string `json:"title"`
	Detail        string `json:"detail"`
	Field         string `json:"field,omitempty"`
	CorrelationID string `json:"correlation_id"`
	// RetryAfter is the server's Retry-After, when it sent one (429, 503).
	RetryAfter time.Duration `json:"-"`
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("bothy: %d %s: %s", e.Status, e.Code, e.Detail)
	if e.Field != "" {
		s += " (" + e.Field + ")"
	}
	return s
}

// Me returns the principal of the token.
func (c *Client) Me(ctx context.Context) (User, error) {
	var u User
	err := c.do(ctx, http.MethodGet, "/api/v1/me", nil, &u)
	return u, err
}

// PostMessage posts content into a thread. clientMsgID is the caller's id of the message: the
// same id again answers the message created the first time instead of posting it twice, so a
// bot may retry safely. Empty sends none.
func (c *Client) PostMessage(ctx context.Context, threadID, content, clientMsgID string) (Message, error) {
	body := map[string]any{"content": content}
	if clientMsgID != "" {
		body["client_msg_id"] = clientMsgID
	}
	var m Message
	err := c.do(ctx, http.MethodPost, "/api/v1/threads/"+url.PathEscape(threadID)+"/messages", body, &m)
	return m, err
}

// Events reads up to limit events after the seq after that the token may see (the REST
// catch-up); limit 0 is the server's default.
func (c *Client) Events(ctx context.Context, after int64, limit int) (EventPage, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p EventPage
	err := c.do(ctx, http.MethodGet, "/api/v1/events?"+q.Encode(), nil, &p)
	return p, err
}

// do sends one REST request and decodes a 2xx answer into out, or returns an *APIError.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	return c.doHeader(ctx, method, path, body, out, nil)
}

// doHeader is do with extra request headers (an Invocation-Token).
func (c *Client) doHeader(ctx context.Context, method, path string, body, out any, hdr http.Header) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("client: encode the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := c.newRequest(ctx, method, path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	return c.send(req, path, out)
}

// newRequest is a request to path with the token and Accept: application/json.
func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	if c.base.Scheme == "invalid" {
		return nil, fmt.Errorf("client: base URL %q is not an http or https URL", c.base.Opaque)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// send sends req, to path, and decodes a 2xx answer into out, or returns an *APIError.
func (c *Client) send(req *http.Request, path string, out any) error {
	method := req.Method
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("client: %s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return answerError(resp, raw)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("client: %s %s: decode the answer: %w", method, path, err)
		}
	}
	return nil
}

// answerError is the *APIError of an answer that is not a success, from its body raw.
func answerError(resp *http.Response, raw []byte) *APIError {
	ae := &APIError{}
	if json.Unmarshal(raw, ae) != nil || ae.Code == "" {
		ae = &APIError{Code: "http_" + strconv.Itoa(resp.StatusCode), Detail: strings.TrimSpace(string(raw))}
	}
	ae.Status = resp.StatusCode
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		ae.RetryAfter = time.Duration(s) * time.Second
	}
	return ae
}

// errNotConnected is what Send answers between connections.
var errNotConnected = errors.New("client: not connected to the gateway")
