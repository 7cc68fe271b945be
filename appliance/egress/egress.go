// Package egress is the HTTP client of the requests the server makes on its own to addresses
// its users chose (a browser's Web Push endpoint; later webhooks): timeouts on every step, no
// proxy from the environment, and, unless the configuration allows private targets, every
// connection refused at dial time when its address is not on the public internet
// (publicaddr.Address), so that neither a name that resolves to a private address nor a
// redirect reaches the server's own network. Redirects are followed at most three times, to
// https URLs of public hosts only.
//
// It must not log what it sends: bodies are encrypted payloads, headers carry signed tokens.
package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"bothy.dev/bothy/app/kernel/publicaddr"
)

// Options tune a Client. The zero value of each field means its default.
type Options struct {
	// AllowPrivate lets requests reach private, loopback and link-local addresses and follow
	// redirects to http: for a push service on the local network, or a test's fake.
	AllowPrivate bool
	// Timeout bounds one request from dial to the end of the answer's body. Default 10 s.
	Timeout time.Duration
	// MaxConnsPerHost bounds the connections to one host (a push service). Default 64.
	MaxConnsPerHost int
	// Observe is told of each request, for traces and metrics: the context it returns is the
	// request's, and done is called with the answer's status (0 without one) and the error.
	// nil: none.
	Observe func(ctx context.Context, method, host string) (context.Context, func(status int, err error))
}

// Client sends requests to user-chosen addresses.
type Client struct {
	hc *http.Client
	o  Options
}

// ErrRefusedAddress is the dial error for an address that is not public.
var ErrRefusedAddress = errors.New("egress: the address is not on the public internet")

// maxAnswerBytes is how much of an answer's body is read (and dropped) so that the connection
// can be reused; a push service answers with a few bytes.
const maxAnswerBytes = 64 << 10

// New returns a client.
func New(o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxConnsPerHost <= 0 {
		o.MaxConnsPerHost = 64
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !o.AllowPrivate {
		dialer.Control = refusePrivate
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would be the address the dialer checks
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   o.MaxConnsPerHost,
		MaxConnsPerHost:       o.MaxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: o.Timeout,
		ExpectContinueTimeout: time.Second,
	}
	c := &Client{o: o}
	c.hc = &http.Client{Transport: tr, Timeout: o.Timeout, CheckRedirect: c.checkRedirect}
	return c
}

// refusePrivate is the dialer's Control: it runs for the address each connection really goes
// to, after the name was resolved.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !publicaddr.Address(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrRefusedAddress, address)
	}
	return nil
}

func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("egress: more than 3 redirects")
	}
	if c.o.AllowPrivate {
		return nil
	}
	if req.URL.Scheme != "https" || !publicaddr.Host(req.URL.Hostname()) {
		return errors.New("egress: a redirect to a URL that is not https on a public host")
	}
	return nil
}

// Post sends body to url with the header fields and returns the answer's status code (it
// implements push.Sender). An error means there was no answer: the network, a timeout, a
// refused address or redirect.
func (c *Client) Post(ctx context.Context, url string, header map[string]string, body []byte) (status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("egress: %w", err)
	}
	if c.o.Observe != nil {
		var done func(int, error)
		ctx, done = c.o.Observe(ctx, http.MethodPost, req.URL.Hostname())
		req = req.WithContext(ctx)
		defer func() { done(status, err) }()
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
	return resp.StatusCode, nil
}

// CloseIdle closes the idle connections, at shutdown.
func (c *Client) CloseIdle() { c.hc.CloseIdleConnections() }
