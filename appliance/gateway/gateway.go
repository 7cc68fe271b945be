// Package gateway is the WebSocket transport of the realtime gateway (GET /api/v1/gateway): it
// refuses browser upgrades from another origin, accepts the upgrade with github.com/coder/websocket
// (the only package of the server that imports it) and hands each connection to app/gateway as a
// Transport, then returns, so that an idle connection costs its reader goroutine and buffers only.
//
// It must not hold protocol rules: frames, sessions, permissions and close codes are app/gateway's.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/app/kernel"
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
// in-band, seed 9.3) but behind the router's panic guard and correlation id.
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
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // the origin is checked above, against server.public_url too
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		h.opts.Logger.Debug("gateway: upgrade refused", "err", err, "correlation_id", w.Header().Get("Correlation-Id"))
		return // Accept has answered
	}
	c.SetReadLimit(h.opts.MaxFrameBytes)
	h.gw.Serve(&transport{c: c}, gateway.ConnInfo{RemoteAddr: r.RemoteAddr, CorrelationID: w.Header().Get("Correlation-Id")})
}

// originAllowed lets through requests without Origin (bots, servers: no browser to protect) and
// browsers on the instance's own origin: server.public_url's, or the Host they connected to.
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
	return strings.EqualFold(u.Host, r.Host)
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
		"type":           "https://bothy.dev/problems/" + string(code),
		"title":          http.StatusText(status),
		"status":         status,
		"code":           code,
		"detail":         detail,
		"correlation_id": w.Header().Get("Correlation-Id"),
	})
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	w.Write(b)
}

// transport adapts a coder/websocket connection to gateway.Transport.
type transport struct{ c *websocket.Conn }

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

// Write sends one text message. coder/websocket closes the connection when ctx's deadline
// passes during the write.
func (t *transport) Write(ctx context.Context, msg []byte) error {
	return t.c.Write(ctx, websocket.MessageText, msg)
}

func (t *transport) Close(code gateway.CloseCode, reason string) error {
	return t.c.Close(websocket.StatusCode(code), reason)
}

func (t *transport) Abort() { t.c.CloseNow() }
