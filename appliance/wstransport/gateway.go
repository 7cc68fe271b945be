// Package gateway is the WebSocket transport of the realtime gateway (GET /api/v1/gateway): it
// refuses browser upgrades from another origin, accepts the upgrade with github.com/coder/websocket
// (the only package of the server that imports it) and hands each connection to app/gateway as a
// Transport, with the console's session cookie if the upgrade carried one, then returns, so that
// an idle connection costs its reader goroutine and buffers only.
//
// It must not hold protocol rules: frames, sessions, permissions and close codes are app/gateway's.
package wstransport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/appliance/clientaddr"
)

// Path is where the gateway is served.
const Path = "/api/v1/gateway"

// Options of the handler.
type Options struct {
	// PublicURL is server.public_url: a browser upgrade must come from its origin or from the
	// Host it was sent to. Empty: the Host only.
	PublicURL string
	// MaxFrameBytes is gateway.max_frame_bytes: a larger frame closes the connection with 1009.
	MaxFrameBytes int64
	Logger        *slog.Logger
}

// Handler upgrades GET /api/v1/gateway. It is registered outside the JSON chain (it authorizes
// in-band, per op) but behind the router's panic guard and correlation id.
type Handler struct {
	gw     *gateway.Gateway
	origin string // scheme://host[:port] of PublicURL, lower case; "" when unset
	opts   Options
}

// NewHandler returns the upgrade handler of gw.
func NewHandler(gw *gateway.Gateway, o Options) *Handler {
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = 64 << 10
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{gw: gw, opts: o}
	if u, err := url.Parse(o.PublicURL); err == nil && u.Scheme != "" && u.Host != "" {
		h.origin = strings.ToLower(u.Scheme + "://" + u.Host)
	}
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method != http.MethodGet:
		w.Header().Set("Allow", http.MethodGet)
		writeProblem(w, http.StatusMethodNotAllowed, kernel.CodeMethodNotAllowed, r.Method+" is not allowed here")
		return
	case !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket"):
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Connection", "Upgrade")
		writeProblem(w, http.StatusUpgradeRequired, kernel.CodeMalformedRequest, "this route takes a WebSocket upgrade")
		return
	case !h.originAllowed(r):
		writeProblem(w, http.StatusForbidden, kernel.CodeForbidden, "the Origin of this upgrade is not this instance")
		return
	}
	hw := &hijackWriter{ResponseWriter: w}
	c, err := websocket.Accept(hw, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // the origin is checked above, against server.public_url too
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		h.opts.Logger.Debug("gateway: upgrade refused", "err", err, "correlation_id", w.Header().Get("Correlation-Id"))
		return // Accept has answered
	}
	c.SetReadLimit(h.opts.MaxFrameBytes)
	h.gw.Serve(&transport{c: c, nc: hw.conn}, gateway.ConnInfo{RemoteAddr: r.RemoteAddr, Address: peerAddress(r),
		CorrelationID: w.Header().Get("Correlation-Id"), Credential: h.sessionCookie(r)})
}

// peerAddress is the client's IP address, which the gateway's bound per address counts by: the
// TCP peer, or behind a trusted proxy the client it names (appliance/clientaddr).
func peerAddress(r *http.Request) string {
	return clientaddr.From(r).IP
}

// consoleSessionCookie is the name of the console's session cookie (ui.SessionCookieName, which
// this adapter does not import): bothy_session, and __Host-bothy_session behind an https
// server.public_url, where a cookie of the plain name (which a sibling subdomain could plant)
// is not taken. Its token is HttpOnly, so the console's script cannot put it in identify: an
// identify without a token identifies with the cookie the upgrade carried. A page of another
// site cannot ride on it, because a browser's upgrade from another origin is refused above
// (and the cookie is SameSite=Lax besides).
func consoleSessionCookie(publicURL string) string {
	if strings.HasPrefix(publicURL, "https://") {
		return "__Host-bothy_session"
	}
	return "bothy_session"
}

func (h *Handler) sessionCookie(r *http.Request) string {
	ck, err := r.Cookie(consoleSessionCookie(h.opts.PublicURL))
	if err != nil {
		return ""
	}
	return ck.Value
}

// originAllowed lets through requests without Origin (bots, servers: no browser to protect) and
// browsers on the instance's own origin: server.public_url's, or the Host they connected to
// (behind a trusted proxy, the host the proxy says the browser asked for).
func (h *Handler) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" (a sandboxed frame, a file) among others
	}
	if h.origin != "" && strings.EqualFold(u.Scheme+"://"+u.Host, h.origin) {
		return true
	}
	return strings.EqualFold(u.Host, clientaddr.From(r).Host)
}

func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// writeProblem answers an upgrade that is refused before the WebSocket exists, as
// application/problem+json like every other error of the API.
func writeProblem(w http.ResponseWriter, status int, code kernel.Code, detail string) {
	b, _ := json.Marshal(map[string]any{
		"type":           "https://bothy.dev/problems/" + code.String(),
		"title":          http.StatusText(status),
		"status":         status,
		"code":           code.String(),
		"detail":         detail,
		"correlation_id": w.Header().Get("Correlation-Id"),
	})
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	w.Write(b)
}

// transport adapts a coder/websocket connection to gateway.Transport.
type transport struct {
	c  *websocket.Conn
	nc *corkConn // the connection under c
}

var _ gateway.Transport = (*transport)(nil)

func (t *transport) Read(ctx context.Context) ([]byte, error) {
	typ, b, err := t.c.Read(ctx)
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return nil, fmt.Errorf("%w: %w", gateway.ErrTooBig, err)
	}
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, gateway.ErrBinary
	}
	return b, nil
}

// Write frames msgs into the connection's buffer (coder/websocket flushes after every message;
// corkConn gathers those flushes), then sends the buffer with one write. At a fan-out of
// thousands of frames a second, one system call per frame was the gateway's main cost.
func (t *transport) Write(deadline time.Time, msgs [][]byte) error {
	t.nc.cork()
	for _, m := range msgs {
		// The frames go to memory: no deadline applies here, send's does.
		if err := t.c.Write(context.Background(), websocket.MessageText, m); err != nil {
			t.nc.send(time.Now()) // ends the cork; the connection is gone anyway
			return err
		}
	}
	return t.nc.send(deadline)
}

// Close sends the close frame, unless bytes are still unsent: that client does not read, and
// the close frame would wait behind them.
func (t *transport) Close(code gateway.CloseCode, reason string) error {
	if t.nc.backlogged() {
		return t.c.CloseNow()
	}
	return t.c.Close(websocket.StatusCode(code), reason)
}

func (t *transport) Abort() { t.c.CloseNow() }

// Buffer sizes of an upgraded connection. net/http hands over 4 KiB for each direction; client
// frames are small (heartbeats, typing, identify) and server frames are gathered by corkConn, so
// smaller buffers cost nothing in speed and save about 7 KiB per idle connection.
const (
	readBufferSize  = 512
	writeBufferSize = 256
)

// hijackWriter hands coder/websocket the hijacked connection wrapped in a corkConn, with small
// buffers. Bytes the HTTP server read past the upgrade request are served first.
type hijackWriter struct {
	http.ResponseWriter
	conn *corkConn
}

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	var early []byte
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		early = bytes.Clone(b)
	}
	w.conn = &corkConn{Conn: nc, early: early}
	return w.conn, bufio.NewReadWriter(bufio.NewReaderSize(w.conn, readBufferSize), bufio.NewWriterSize(w.conn, writeBufferSize)), nil
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *hijackWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// corkConn is the network connection under a WebSocket. While corked, writes gather in a buffer
// from a shared pool and send writes them with one Write under a deadline; what a missed deadline
// leaves unsent stays for the next send. Otherwise writes go straight through, or, while bytes
// are unsent, join them. Every write holds mu, so a control frame that coder/websocket writes
// from another goroutine (a pong, the answer to a close) never lands in the middle of a batch.
type corkConn struct {
	net.Conn
	early []byte // read past the upgrade by the HTTP server; used by the reading goroutine only

	mu     sync.Mutex
	corked bool
	out    *[]byte // gathered bytes, unsent from off on; nil when there are none
	off    int
}

var corkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooledBuffer bounds what goes back to the pool: one burst of large frames must not pin a
// large buffer for ever.
const maxPooledBuffer = 256 << 10

func (c *corkConn) Read(p []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(p, c.early)
		c.early = c.early[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked || c.out != nil {
		if c.out == nil {
			c.out = corkBuffers.Get().(*[]byte)
		}
		*c.out = append(*c.out, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// backlogged reports whether bytes are unsent.
func (c *corkConn) backlogged() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out != nil
}

// send ends the cork and writes what is gathered before deadline. A missed deadline returns
// gateway.ErrWouldBlock and keeps the rest; the buffer goes back to the pool once all is sent.
func (c *corkConn) send(deadline time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if c.out == nil {
		return nil
	}
	c.Conn.SetWriteDeadline(deadline)
	n, err := c.Conn.Write((*c.out)[c.off:])
	c.off += n
	if c.off == len(*c.out) {
		if cap(*c.out) <= maxPooledBuffer {
			*c.out = (*c.out)[:0]
			corkBuffers.Put(c.out)
		}
		c.out, c.off = nil, 0
	}
	switch {
	case err == nil:
		c.Conn.SetWriteDeadline(time.Time{})
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: %w", gateway.ErrWouldBlock, err)
	default:
		return fmt.Errorf("gateway: write: %w", err)
	}
}
