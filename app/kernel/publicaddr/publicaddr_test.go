package publicaddr

import (
	"net/netip"
	"testing"
)

func TestAddress(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"93.184.215.14", true},
		{"2606:4700::1111", true},
		{"10.0.0.1", false},
		{"172.16.5.4", false},
		{"192.168.1.1", false},
		{"127.0.0.1", false},
		{"169.254.1.1", false},
		{"100.64.0.1", false},
		{"0.0.0.0", false},
		{"255.255.255.255", false},
		{"224.0.0.1", false},
		{"::1", false},
		{"::", false},
		{"fe80::1", false},
		{"fd00::1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:8.8.8.8", true},
		{"64:ff9b::a00:1", false},
	} {
		if got := Address(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("Address(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
	t.Run("an address with a zone is refused", func(t *testing.T) {
		if Address(netip.MustParseAddr("fe80::1%eth0")) {
			t.Fatal("allowed")
		}
	})
}

func TestHost(t *testing.T) {
	for _, c := range []struct {
		host string
		want bool
	}{
		{"push.example.com", true},
		{"fcm.googleapis.com.", true},
		{"updates.push.services.mozilla.com", true},
		{"93.184.215.14", true},
		{"[2606:4700::1111]", true},
		{"localhost", false},
		{"LOCALHOST", false},
		{"app.localhost", false},
		{"printer.local", false},
		{"db.internal", false},
		{"nas", false},
		{"10.0.0.1", false},
		{"[::1]", false},
		{"::1", false},
		{"169.254.1.1", false},
		{"127.1", false},
		{"0x7f.1", false},
		{"", false},
		{".", false},
	} {
		if got := Host(c.host); got != c.want {
			t.Errorf("Host(%q) = %v, want %v", c.host, got, c.want)
		}
	}
}
