package tests

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSetupLinkOnAWildcardAddress: a server listening on every address (0.0.0.0) prints a setup
// link that another machine can open, an address of this machine rather than localhost, and
// says in its log that server.public_url names the address people reach; with
// server.public_url the link is on it.
func TestSetupLinkOnAWildcardAddress(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		t.Run("without server.public_url the link names an address of this machine that answers", func(t *testing.T) {
			srv := mustStart(t, eng, "--listen-addr", "0.0.0.0:0")
			u, err := url.Parse(srv.setupLink)
			if err != nil {
				t.Fatal(err)
			}
			if want, host := machineAddresses(t), u.Hostname(); !want[host] {
				t.Fatalf("the setup link %s names %q, not one of this machine's addresses that others reach %v", srv.setupLink, host, want)
			}
			p := newBrowser(t, u.Scheme+"://"+u.Host).get(u.RequestURI()).want(t, http.StatusOK)
			if !p.has("setup-form") {
				t.Fatalf("the printed link does not open the setup form: %.600s", p.body)
			}
			if logs := srv.logs.String(); !strings.Contains(logs, "set server.public_url") {
				t.Fatalf("the log does not point to server.public_url:\n%s", logs)
			}
		})
		t.Run("with server.public_url the link is on it", func(t *testing.T) {
			srv := mustStart(t, eng, "--listen-addr", "0.0.0.0:0", "--set", "server.public_url=https://chat.example.com")
			if !strings.HasPrefix(srv.setupLink, "https://chat.example.com/console/setup?code=") {
				t.Fatalf("setup link %s", srv.setupLink)
			}
			if strings.Contains(srv.logs.String(), "set server.public_url") {
				t.Fatalf("the log asks for server.public_url although it is set:\n%s", srv.logs)
			}
		})
	})
}

// machineAddresses are the addresses of this machine that another one may reach (neither
// loopback nor link-local); the test is only as strict as the machine allows.
func machineAddresses(tb testing.TB) map[string]bool {
	tb.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]bool{}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() {
			out[ipn.IP.String()] = true
		}
	}
	if len(out) == 0 {
		tb.Skip("this machine has no address but loopback: the link can only name localhost")
	}
	return out
}
