package appliance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

const healthcheckHelp = `bothy healthcheck --url URL [--timeout 5s]

Sends GET to URL, for container health checks without a shell, for example
  bothy healthcheck --url http://127.0.0.1:8081/readyz
URL must be http:// with a loopback host (127.0.0.0/8, ::1, localhost): the health
endpoints live on the internal listener. Needs no configuration and no database.

Exit codes: 0 for a 2xx answer; 1 otherwise, with one line on stderr naming the status
code or the class of error; 2 for a wrong invocation (a URL that is not loopback http).`

func (c *cli) healthcheck(ctx context.Context, args []string) int {
	f := c.newFlags("healthcheck", healthcheckHelp)
	rawURL := f.String("url", "", "health `URL` on the internal listener (required)")
	timeout := f.Duration("timeout", 5*time.Second, "bound of the whole request")
	if code, done := f.parse(args); done {
		return code
	}
	if *rawURL == "" {
		return f.usageError("--url is required")
	}
	u, err := url.Parse(*rawURL)
	if err != nil || u.Scheme != "http" || u.User != nil || !loopbackHost(u.Hostname()) {
		return f.usageError("--url must be an http:// URL with a loopback host (127.0.0.0/8, ::1, localhost)")
	}
	if *timeout <= 0 {
		return f.usageError("--timeout must be positive")
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	client := &http.Client{
		// No proxy from the environment, and no redirect away from the loopback host.
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return f.usageError("--url: %v", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(c.stderr, "healthcheck: %s\n", errorClass(err))
		return ExitFailure
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		fmt.Fprintf(c.stderr, "healthcheck: status %d\n", resp.StatusCode)
		return ExitFailure
	}
	return ExitOK
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// errorClass names what went wrong without the details of the request.
func errorClass(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "name resolution failed"
	}
	return "request failed"
}
