package wstransport_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"bothy.dev/bothy/appliance/config"
	"bothy.dev/bothy/storage/engine"
)

// TestOriginBehindTrustedProxy holds that a browser's upgrade through a trusted proxy that
// changes the Host is checked against the host the proxy says the browser asked for
// (X-Forwarded-Host), and that the same header from any other peer changes nothing. Linux
// routes all of 127.0.0.0/8 to the loopback, so 127.0.0.2 is a second peer.
func TestOriginBehindTrustedProxy(t *testing.T) {
	s := mustStart(t, engine.SQLite, func(c *config.Config) { c.Server.TrustedProxies = "127.0.0.1" })
	dial := func(t *testing.T, local string, h http.Header) int {
		t.Helper()
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
		hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, s.ws, &websocket.DialOptions{HTTPHeader: h, HTTPClient: hc})
		if c != nil {
			c.CloseNow()
		}
		if resp == nil {
			t.Fatalf("no response: %v", err)
		}
		return resp.StatusCode
	}
	browser := http.Header{"Origin": {"https://chat.example.com"}, "X-Forwarded-Host": {"chat.example.com"}, "X-Forwarded-Proto": {"https"}}
	if st := dial(t, "127.0.0.1", browser); st != http.StatusSwitchingProtocols {
		t.Errorf("through the trusted proxy: %d, want 101", st)
	}
	if st := dial(t, "127.0.0.1", http.Header{"Origin": {"https://chat.example.com"}}); st != http.StatusForbidden {
		t.Errorf("through the trusted proxy without X-Forwarded-Host: %d, want 403", st)
	}
	if st := dial(t, "127.0.0.2", browser); st != http.StatusForbidden {
		t.Errorf("from an untrusted peer with the same headers: %d, want 403", st)
	}
}
