// Package httpapi is the REST adapter: the middleware chain (panic guard,
// correlation id, access log, routing with problem+json 404/405, body limit, deadline,
// authentication, JSON guard, Idempotency-Key, proof of the authorization check) and the
// handlers of each module, which only translate between HTTP and the use cases.
//
// It must not hold domain rules or SQL.
package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/appliance/clientaddr"
)

// Handler serves one route. It returns the status and the body to encode as JSON (nil for no
// body), or an error: a *kernel.Error becomes problem+json with its code, anything else 500.
type Handler func(r *Request) (status int, body any, err error)

// Route binds a method and a path pattern (net/http wildcards) to a handler and the action the
// handler must authorize.
type Route struct {
	Method  string
	Pattern string
	Action  kernel.Action
	// Public routes need no credentials (setup, login); all others answer 401 without them.
	Public bool
	// Secret marks an answer whose "token" member is a secret shown once (a new API token):
	// the answer kept for an Idempotency-Key replay leaves it out (idempotency.go).
	Secret bool
	// Password marks a request whose body holds a password: it takes no Idempotency-Key, since
	// the key's record would keep a fast hash of the body, and with it of the password.
	Password bool
	Handler  Handler
	// Stream routes read their body themselves, as a stream (an upload): the router neither
	// reads nor caps it (the handler applies its own limit), and instead of a deadline for the
	// whole body it bounds the wait for each next piece (BodyReadTimeout), so that a large file
	// on a slow link goes through and a client that stops sending does not hold the request.
	// Neither does the request's deadline (RequestTimeout) apply.
	Stream bool
	// Serve, when set, answers the request instead of Handler, writing headers and bytes itself
	// (a download, which may be large: RequestTimeout does not apply). An error it returns
	// before it has written anything is answered as problem+json.
	Serve func(w http.ResponseWriter, r *Request) error
	// Cookie routes take the console's session cookie too, when the request has no
	// Authorization header, so that the console's pages and script use the same routes as
	// every client: a GET or HEAD as it is, any other method only with the Bothy-CSRF header
	// of that session (a page of another site can make a browser send the cookie, not read
	// the token). Options.SessionCookieName and SessionCSRF configure it.
	Cookie bool
}

// Authenticator resolves a bearer token to the actor.
type Authenticator interface {
	// Authenticate returns the actor of token, or unauthenticated.
	Authenticate(ctx context.Context, token string) (kernel.Actor, error)
}

// Request is what a handler sees: the HTTP request, its authenticated actor and helpers that
// apply the guards.
type Request struct {
	*http.Request
	Actor    kernel.Actor
	ClientIP string

	body    []byte
	bodyErr error
	header  http.Header
	depth   int
}

// Decode decodes the JSON body into v after the guards (media type, size, UTF-8, depth,
// duplicate keys); unknown fields and wrong types are validation_failed naming the field.
func (r *Request) Decode(v any) error {
	if r.bodyErr != nil {
		return r.bodyErr
	}
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	if err := checkJSON(r.body, r.depth); err != nil {
		return err
	}
	return decodeInto(r.body, v)
}

// PathID returns the path wildcard name as an id; a malformed id is simply not found.
func (r *Request) PathID(name string) (kernel.ID, error) {
	id, err := kernel.ParseID(r.PathValue(name))
	if err != nil {
		return kernel.NilID, kernel.ErrNotFound
	}
	return id, nil
}

// ResponseHeader is the header of the answer, for handlers that set one (Location, …).
func (r *Request) ResponseHeader() http.Header { return r.header }

// Options of the router.
type Options struct {
	MaxBodyBytes   int64
	MaxJSONDepth   int
	RequestTimeout time.Duration
	// BodyReadTimeout bounds the time a request body may take to arrive, counted from the end
	// of its header, for every handler behind the router: the console's forms too (default 10 s).
	BodyReadTimeout time.Duration
	// MaxPublicBodyBytes caps the body of a route that needs no credentials (login, setup) and
	// of the PublicForms, which anyone may send (default 16 KiB; at most MaxBodyBytes).
	MaxPublicBodyBytes int64
	// PublicForms are the paths of raw handlers that take a POST before any sign-in (the
	// console's sign-in and setup forms).
	PublicForms []string
	Logger      *slog.Logger
	// SessionCookieName is the console's session cookie that Cookie routes read, and
	// SessionCSRF the CSRF token of a session token (the console's own derivation); without
	// them Cookie routes take bearer tokens only.
	SessionCookieName string
	SessionCSRF       func(sessionToken string) string
	// TrustedProxies are the reverse proxies whose forwarding headers name the client
	// (server.trusted_proxies); the zero value trusts none.
	TrustedProxies clientaddr.Proxies
	// Observer is told of every request, for traces and metrics (appliance/telemetry); nil for
	// none.
	Observer RequestObserver
}

// RequestObserver watches the requests of the router.
type RequestObserver interface {
	// Request is called as a request arrives, with its correlation id; the context it returns
	// is the request's (it may carry a span), and end is called once the request has been
	// answered, with its route pattern ("" when no route matched) and status.
	Request(ctx context.Context, r *http.Request, correlationID string) (context.Context, func(route string, status int))
}

// CSRFHeader carries the console's CSRF token on a request of its script to a Cookie route.
const CSRFHeader = "Bothy-CSRF"

// DefaultMaxPublicBodyBytes is the cap of a body sent without credentials: a login or setup
// body is a handle, a name and a password of at most 1024 bytes, which JSON escapes at most
// sixfold.
const DefaultMaxPublicBodyBytes = 16 << 10

// Router is the public HTTP handler.
type Router struct {
	mux   *http.ServeMux
	auth  Authenticator
	idem  *Idempotency
	opts  Options
	log   *slog.Logger
	paths map[string]map[string]*Route // pattern → method → route
}

// NewRouter returns a router that authenticates with auth and stores Idempotency-Key answers
// with idem (nil turns the header off).
func NewRouter(auth Authenticator, idem *Idempotency, o Options) *Router {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.MaxJSONDepth <= 0 {
		o.MaxJSONDepth = 32
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = 10 * time.Second
	}
	if o.MaxPublicBodyBytes <= 0 {
		o.MaxPublicBodyBytes = DefaultMaxPublicBodyBytes
	}
	o.MaxPublicBodyBytes = min(o.MaxPublicBodyBytes, o.MaxBodyBytes)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	rt := &Router{mux: http.NewServeMux(), auth: auth, idem: idem, opts: o, log: o.Logger, paths: map[string]map[string]*Route{}}
	rt.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, kernel.ErrNotFound, correlationFrom(r.Context()))
	})
	return rt
}

// Handle registers routes. It panics on a route without an action: every route proves a check.
func (rt *Router) Handle(routes ...Route) {
	for i := range routes {
		route := routes[i]
		if route.Action == "" || (route.Handler == nil && route.Serve == nil) || route.Method == "" {
			panic(fmt.Sprintf("httpapi: route %s %s lacks an action or a handler", route.Method, route.Pattern))
		}
		methods, ok := rt.paths[route.Pattern]
		if !ok {
			methods = map[string]*Route{}
			rt.paths[route.Pattern] = methods
			rt.mux.HandleFunc(route.Pattern, func(w http.ResponseWriter, r *http.Request) { rt.dispatch(w, r, methods) })
		}
		if _, dup := methods[route.Method]; dup {
			panic("httpapi: duplicate route " + route.Method + " " + route.Pattern)
		}
		methods[route.Method] = &route
	}
}

// HandleRaw registers h for pattern outside the JSON chain: it passes only the outer chain of
// ServeHTTP (panic guard, correlation id, base headers, access log) and is not listed by Routes.
// It is for the gateway upgrade, which authenticates and authorizes in-band, per op.
// The ResponseWriter h gets unwraps to the server's, so it can hijack the connection.
func (rt *Router) HandleRaw(pattern string, h http.Handler) {
	rt.mux.Handle(pattern, h)
}

// Routes lists the registered routes as "METHOD pattern action", sorted; for tests and the
// OpenAPI cross-check.
func (rt *Router) Routes() []Route {
	var out []Route
	for _, ms := range rt.paths {
		for _, r := range ms {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pattern != out[j].Pattern {
			return out[i].Pattern < out[j].Pattern
		}
		return out[i].Method < out[j].Method
	})
	return out
}

type correlationKey struct{}

func correlationFrom(ctx context.Context) string {
	s, _ := ctx.Value(correlationKey{}).(string)
	return s
}

func newCorrelationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter remembers the status for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
	actor  kernel.ID
}

// actorNoteKey carries a pointer through which dispatch tells the access log who acted.
type actorNoteKey struct{}

// Unwrap gives http.ResponseController (and a WebSocket upgrade) the server's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
	w.ResponseWriter.WriteHeader(s)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// ServeHTTP is the outer chain: panic guard, correlation id, base headers, access log, routing.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	cid := newCorrelationID()
	h := w.Header()
	h.Set("Correlation-Id", cid)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	sw := &statusWriter{ResponseWriter: w}
	ctx := context.WithValue(r.Context(), correlationKey{}, cid)
	ctx = context.WithValue(ctx, actorNoteKey{}, &sw.actor)
	// The client is decided here, once, for every handler behind the router (the login
	// limiter, the gateway, the console): see appliance/clientaddr.
	client := rt.opts.TrustedProxies.Resolve(r)
	ctx = clientaddr.With(ctx, client)
	var observed func(route string, status int)
	if rt.opts.Observer != nil {
		ctx, observed = rt.opts.Observer.Request(ctx, r, cid)
	}
	r = r.WithContext(ctx)
	if r.Body != nil && r.Body != http.NoBody {
		// On the copy WithContext made: the server keeps its own body, which it drains or
		// gives up on after the handler as it would without the bound.
		r.Body = rt.boundBody(w, r)
	}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			rt.log.Error("panic", "correlation_id", cid, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if sw.status == 0 {
				writeProblem(sw, errors.New("panic"), cid)
			}
		}
		// The access log names the route pattern, never the query, a token or a body.
		pattern := r.Pattern
		if pattern == "" {
			pattern = "-"
		}
		rt.log.Info("http", "method", r.Method, "route", pattern, "status", sw.status,
			"duration_ms", float64(time.Since(start).Microseconds())/1000, "correlation_id", cid,
			"actor", string(sw.actor), "client", client.IP)
		if observed != nil {
			observed(r.Pattern, sw.status)
		}
	}()
	rt.mux.ServeHTTP(sw, r)
}

var errDeadline = errors.New("request deadline exceeded")

// boundBody bounds the time the body of r may take (BodyReadTimeout, through the connection's
// read deadline) and caps the body of a public form. Without it one byte a second keeps a
// request, and the memory of what it sent, for as long as the client likes. net/http lifts the
// deadline itself once the body has been read to its end (it then watches the connection for
// the client going away), so a handler that works long after its body is not cut off.
func (rt *Router) boundBody(w http.ResponseWriter, r *http.Request) io.ReadCloser {
	body := r.Body
	if r.Method == http.MethodPost && slices.Contains(rt.opts.PublicForms, r.URL.Path) {
		body = http.MaxBytesReader(w, body, rt.opts.MaxPublicBodyBytes)
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(rt.opts.BodyReadTimeout))
	return body
}

func (rt *Router) dispatch(w http.ResponseWriter, r *http.Request, methods map[string]*Route) {
	cid := correlationFrom(r.Context())
	route, ok := methods[r.Method]
	if !ok && r.Method == http.MethodHead {
		route, ok = methods[http.MethodGet]
	}
	if !ok {
		allow := make([]string, 0, len(methods))
		for m := range methods {
			allow = append(allow, m)
		}
		sort.Strings(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeProblem(w, kernel.Errorf(kernel.CodeMethodNotAllowed, "%s is not allowed here", r.Method), cid)
		return
	}

	ctx, cancel := r.Context(), context.CancelFunc(func() {})
	if !route.Stream && route.Serve == nil {
		ctx, cancel = context.WithTimeout(r.Context(), rt.opts.RequestTimeout)
	}
	defer cancel()
	ctx, checks := kernel.WithCheckLog(ctx)

	req := &Request{ClientIP: clientaddr.From(r).IP, header: w.Header(), depth: rt.opts.MaxJSONDepth}

	// Credentials first: a request that will be refused never has its body read, so anyone
	// without a token costs a header's worth of memory, not a body's.
	if !route.Public {
		actor, ok := rt.authenticateRoute(ctx, w, r, route)
		if !ok {
			return
		}
		req.Actor = actor
		ctx = kernel.WithActor(ctx, actor)
	}
	if route.Stream || route.Serve != nil {
		rt.serveRaw(ctx, w, r, req, route, checks)
		return
	}

	limit := rt.opts.MaxBodyBytes
	if route.Public {
		limit = rt.opts.MaxPublicBodyBytes
	}
	if r.ContentLength > limit {
		writeProblem(w, kernel.Errorf(kernel.CodePayloadTooLarge, "the body is larger than %d bytes", limit), cid)
		return
	}
	if r.Body != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
		req.body, req.bodyErr = readBody(r.Body, limit)
		if req.bodyErr != nil {
			// Too large, too slow or cut short: the client's doing, answered now, logged at
			// debug (a client that hung up reads no answer).
			rt.log.Debug("request body not read", "correlation_id", cid, "route", route.Pattern, "err", req.bodyErr)
			writeProblem(w, req.bodyErr, cid)
			return
		}
	}
	req.Request = r.WithContext(ctx)

	var (
		status int
		body   any
		err    error
	)
	if key := r.Header.Get("Idempotency-Key"); key != "" && rt.idem != nil && r.Method == http.MethodPost && req.Actor.Authenticated() && !route.Password {
		var raw []byte
		status, raw, err = rt.idem.serve(req, key, route, checks)
		if raw != nil {
			body = json.RawMessage(raw)
		}
	} else {
		status, body, err = route.Handler(req)
		if err == nil && status < 400 && !checks.Checked(route.Action) {
			err = errNotChecked
		}
	}
	if err == nil && ctx.Err() != nil && status >= 400 {
		err = errDeadline
	}
	rt.answer(w, cid, route, status, body, err)
}

// answer writes a handler's answer: problem+json for an error (an internal one logged), else
// the body as JSON.
func (rt *Router) answer(w http.ResponseWriter, cid string, route *Route, status int, body any, err error) {
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = errDeadline
		}
		if kernel.CodeOf(err) == kernel.CodeInternal {
			rt.log.Error("request failed", "correlation_id", cid, "route", route.Pattern, "err", err)
		}
		writeProblem(w, err, cid)
		return
	}
	writeJSON(w, status, body)
}

// authenticateRoute authenticates r for route: by its bearer token, or on a Cookie route without
// an Authorization header by the console's session cookie (with its CSRF header unless the
// method is safe).
func (rt *Router) authenticateRoute(ctx context.Context, w http.ResponseWriter, r *http.Request, route *Route) (kernel.Actor, bool) {
	if !route.Cookie || rt.opts.SessionCookieName == "" || rt.opts.SessionCSRF == nil || r.Header.Get("Authorization") != "" {
		return rt.authenticate(ctx, w, r)
	}
	ck, err := r.Cookie(rt.opts.SessionCookieName)
	if err != nil || ck.Value == "" {
		return rt.authenticate(ctx, w, r)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		want := rt.opts.SessionCSRF(ck.Value)
		if got := r.Header.Get(CSRFHeader); got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			writeProblem(w, kernel.Errorf(kernel.CodeForbidden, "a request with the session cookie needs the %s header of its session", CSRFHeader), correlationFrom(ctx))
			return kernel.Actor{}, false
		}
	}
	actor, err := rt.auth.Authenticate(ctx, ck.Value)
	if err != nil {
		writeProblem(w, err, correlationFrom(ctx))
		return kernel.Actor{}, false
	}
	if note, ok := ctx.Value(actorNoteKey{}).(*kernel.ID); ok {
		*note = actor.ID
	}
	return actor, true
}

// serveRaw runs a Stream or Serve route: the body stays a stream, read with a deadline that
// moves on with each piece; a Serve route writes its own answer, and the proof of the check
// holds at its first byte (an answer of 2xx without the route's check turns into a 500).
func (rt *Router) serveRaw(ctx context.Context, w http.ResponseWriter, r *http.Request, req *Request, route *Route, checks *kernel.CheckLog) {
	cid := correlationFrom(ctx)
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &idleBody{ReadCloser: r.Body, rc: http.NewResponseController(w), idle: rt.opts.BodyReadTimeout}
	}
	req.Request = r.WithContext(ctx)
	if route.Serve != nil {
		cw := &checkedWriter{ResponseWriter: w, cid: cid, ok: func() bool { return checks.Checked(route.Action) }}
		err := route.Serve(cw, req)
		switch {
		case err != nil && !cw.wrote:
			rt.answer(w, cid, route, 0, nil, err)
		case err != nil:
			rt.log.Debug("answer cut short", "correlation_id", cid, "route", route.Pattern, "err", err)
		case cw.refused:
			rt.log.Error("request failed", "correlation_id", cid, "route", route.Pattern, "err", errNotChecked)
		}
		return
	}
	status, body, err := route.Handler(req)
	if err == nil && status < 400 && !checks.Checked(route.Action) {
		err = errNotChecked
	}
	rt.answer(w, cid, route, status, body, err)
}

// idleBody bounds the wait for each read of a streamed body instead of the whole body's.
type idleBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	return b.ReadCloser.Read(p)
}

// checkedWriter turns the answer of a Serve route into a 500 when the route's action was not
// checked by the time it answers with success.
type checkedWriter struct {
	http.ResponseWriter
	cid     string
	ok      func() bool
	wrote   bool
	refused bool
}

func (w *checkedWriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if status < 400 && !w.ok() {
		w.refused = true
		writeProblem(w.ResponseWriter, errNotChecked, w.cid)
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *checkedWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.refused {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// authenticate resolves the bearer token of r to its actor and notes it for the access log; without
// a token, or with one that resolves to no one, it answers 401 and returns false.
func (rt *Router) authenticate(ctx context.Context, w http.ResponseWriter, r *http.Request) (kernel.Actor, bool) {
	token, ok := bearer(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="bothy"`)
		writeProblem(w, kernel.Errorf(kernel.CodeUnauthenticated, "send a token as Authorization: Bearer"), correlationFrom(ctx))
		return kernel.Actor{}, false
	}
	actor, err := rt.auth.Authenticate(ctx, token)
	if err != nil {
		writeProblem(w, err, correlationFrom(ctx))
		return kernel.Actor{}, false
	}
	if note, ok := ctx.Value(actorNoteKey{}).(*kernel.ID); ok {
		*note = actor.ID
	}
	return actor, true
}

// HandleJSONRPC registers h for POST on pattern outside the JSON chain, for a JSON-RPC endpoint
// (MCP) whose handler reads its body and authorizes each call through the use cases itself. The
// router does what every route gets: the bearer token resolved as for the REST routes (401
// without one; a session cookie is never read, so no page of another origin can make a browser
// call h), the deadline of a request, and the body's guards (media type, size, UTF-8, depth,
// duplicate keys), answered as problem+json before h sees the request. Another method answers
// 405. h finds the actor in its context (kernel.ActorFrom) and the checked body in r.Body.
// maxInFlight > 0 bounds the requests of one principal that h serves at once: the next one is
// answered 429 at once.
func (rt *Router) HandleJSONRPC(pattern string, maxInFlight int, h http.Handler) {
	busy := &inFlight{max: maxInFlight, n: map[kernel.ID]int{}}
	rt.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cid := correlationFrom(r.Context())
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeProblem(w, kernel.Errorf(kernel.CodeMethodNotAllowed, "%s is not allowed here", r.Method), cid)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), rt.opts.RequestTimeout)
		defer cancel()
		actor, ok := rt.authenticate(ctx, w, r)
		if !ok {
			return
		}
		if !busy.enter(actor.ID) {
			writeProblem(w, kernel.Errorf(kernel.CodeRateLimited, "at most %d requests of one principal at once", maxInFlight), cid)
			return
		}
		defer busy.leave(actor.ID)
		if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
			writeProblem(w, err, cid)
			return
		}
		if r.ContentLength > rt.opts.MaxBodyBytes {
			writeProblem(w, kernel.Errorf(kernel.CodePayloadTooLarge, "the body is larger than %d bytes", rt.opts.MaxBodyBytes), cid)
			return
		}
		body, err := readBody(r.Body, rt.opts.MaxBodyBytes)
		if err == nil {
			err = checkJSON(body, rt.opts.MaxJSONDepth)
		}
		if err == nil && !json.Valid(body) { // checkJSON's tokens take a body cut short
			err = kernel.Errorf(kernel.CodeMalformedRequest, "the body is not valid JSON")
		}
		if err != nil {
			writeProblem(w, err, cid)
			return
		}
		r = r.WithContext(kernel.WithActor(ctx, actor))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		h.ServeHTTP(w, r)
	}))
}

// inFlight counts the requests each principal has under way, up to max (0: no bound).
type inFlight struct {
	max int
	mu  sync.Mutex
	n   map[kernel.ID]int
}

func (f *inFlight) enter(id kernel.ID) bool {
	if f.max <= 0 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[id] >= f.max {
		return false
	}
	f.n[id]++
	return true
}

func (f *inFlight) leave(id kernel.ID) {
	if f.max <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[id]--; f.n[id] <= 0 {
		delete(f.n, id)
	}
}

// errNotChecked is the proof of the check (docs/architecture.md, Authorization): a route that would answer below 400
// without having authorized its action answers 500 instead.
var errNotChecked = errors.New("authz_not_checked")

func writeJSON(w http.ResponseWriter, status int, body any) {
	if body == nil {
		w.WriteHeader(status)
		return
	}
	var b []byte
	if a, ok := body.(jsonAppender); ok {
		b = a.AppendJSON(nil)
	} else {
		var err error
		if b, err = json.Marshal(body); err != nil {
			writeProblem(w, fmt.Errorf("encode response: %w", err), "")
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// jsonAppender is an answer that writes its own JSON, compact and valid (encoding/json would
// validate and compact a MarshalJSON's output again, which for a large answer costs more than
// writing it).
type jsonAppender interface {
	AppendJSON(b []byte) []byte
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const p = "Bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	return strings.TrimSpace(h[len(p):]), true
}
