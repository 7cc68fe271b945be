package clientaddr

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestParseProxies(t *testing.T) {
	good := map[string][]string{
		"":                                nil,
		"  ":                              nil,
		"10.0.0.0/8":                      {"10.0.0.0/8"},
		"10.1.2.3/8":                      {"10.0.0.0/8"}, // masked
		"127.0.0.1, ::1":                  {"127.0.0.1/32", "::1/128"},
		"192.168.0.0/16,fd00::/8":         {"192.168.0.0/16", "fd00::/8"},
		"::ffff:10.0.0.0/104":             {"10.0.0.0/8"},
		"10.0.0.1\n10.0.0.2\t10.0.0.3/32": {"10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32"},
	}
	for in, want := range good {
		p, err := ParseProxies(in)
		if err != nil {
			t.Errorf("ParseProxies(%q): %v", in, err)
			continue
		}
		var got []string
		for _, pre := range p.prefixes {
			got = append(got, pre.String())
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("ParseProxies(%q) = %v, want %v", in, got, want)
		}
		if p.Empty() != (len(want) == 0) {
			t.Errorf("ParseProxies(%q).Empty() = %v", in, p.Empty())
		}
	}
	for _, in := range []string{"10.0.0.0/33", "10.0.0/8", "example.com", "10.0.0.0/8,nope", "fe80::1%eth0", "fe80::%eth0/64", "*", "10.0.0.0/-1"} {
		if _, err := ParseProxies(in); err == nil {
			t.Errorf("ParseProxies(%q) took it", in)
		} else if strings.Contains(err.Error(), in) {
			t.Errorf("ParseProxies(%q): the error %q quotes the value", in, err)
		}
	}
}

func TestTrusts(t *testing.T) {
	p, err := ParseProxies("10.0.0.0/8, 2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"10.1.2.3":         true,
		"::ffff:10.1.2.3":  true, // an IPv4 peer on a dual-stack socket
		"11.0.0.1":         false,
		"2001:db8::1":      true,
		"2001:db9::1":      false,
		"fe80::1%eth0":     false,
		"2001:db8::1%eth0": true, // the zone does not hide the address
	} {
		if got := p.Trusts(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Trusts(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestResolve holds the rule of the forwarding headers: believed only from a trusted peer, and
// of them only the right-most hop that is not itself a trusted proxy.
func TestResolve(t *testing.T) {
	proxies, err := ParseProxies("10.0.0.0/8, 2001:db8:ffff::/48, 127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	type hdr = map[string][]string
	cases := []struct {
		name   string
		peer   string
		tls    bool
		host   string
		header hdr
		want   Client
	}{
		{name: "no proxy, no header: the peer",
			peer: "192.0.2.7:5555", host: "chat.example.com",
			want: Client{IP: "192.0.2.7", Peer: "192.0.2.7", Scheme: "http", Host: "chat.example.com"}},
		{name: "an untrusted peer's forged headers change nothing",
			peer: "192.0.2.7:5555", host: "chat.example.com",
			header: hdr{"X-Forwarded-For": {"203.0.113.9"}, "Forwarded": {"for=203.0.113.8;proto=https;host=evil.example"},
				"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"evil.example"}},
			want: Client{IP: "192.0.2.7", Peer: "192.0.2.7", Scheme: "http", Host: "chat.example.com"}},
		{name: "an untrusted peer over TLS is https",
			peer: "192.0.2.7:5555", tls: true, host: "chat.example.com",
			want: Client{IP: "192.0.2.7", Peer: "192.0.2.7", Scheme: "https", Host: "chat.example.com"}},
		{name: "a trusted peer without a header is the client",
			peer: "10.0.0.2:4000", host: "chat.example.com",
			want: Client{IP: "10.0.0.2", Peer: "10.0.0.2", Scheme: "http", Host: "chat.example.com"}},
		{name: "a trusted peer's X-Forwarded-For and X-Forwarded-Proto",
			peer: "10.0.0.2:4000", host: "chat.example.com",
			header: hdr{"X-Forwarded-For": {"203.0.113.9"}, "X-Forwarded-Proto": {"https"}},
			want:   Client{IP: "203.0.113.9", Peer: "10.0.0.2", Scheme: "https", Host: "chat.example.com", Forwarded: true}},
		{name: "several hops: the trusted proxies on the right are passed",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"203.0.113.9, 10.0.0.5, 10.0.0.3"}},
			want:   Client{IP: "203.0.113.9", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "forged left-most entries are never taken",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"1.1.1.1, 10.0.0.99", "198.51.100.4, 10.0.0.3"}},
			want:   Client{IP: "198.51.100.4", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "a forged trusted address left of the client is not reached",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"10.9.9.9, 198.51.100.4"}},
			want:   Client{IP: "198.51.100.4", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "every hop trusted: the left-most",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"10.0.0.7,10.0.0.3"}},
			want:   Client{IP: "10.0.0.7", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "garbage right of the client stops at the last proxy known",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"198.51.100.4, nonsense, 10.0.0.3"}},
			want:   Client{IP: "10.0.0.3", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "garbage as the only hop leaves the peer",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"<script>"}},
			want:   Client{IP: "10.0.0.2", Peer: "10.0.0.2", Scheme: "http", Host: "h"}},
		{name: "an empty X-Forwarded-For leaves the peer",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-For": {""}},
			want:   Client{IP: "10.0.0.2", Peer: "10.0.0.2", Scheme: "http", Host: "h"}},
		{name: "garbage left of the client is not read",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"%%%, 198.51.100.4"}},
			want:   Client{IP: "198.51.100.4", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "an IPv4 entry with a port",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"198.51.100.4:3456"}},
			want:   Client{IP: "198.51.100.4", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "IPv6: a trusted peer, a bare and a bracketed client",
			peer: "[2001:db8:ffff::2]:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"2001:db8:1::1, [2001:db8:ffff::5]:80"}},
			want:   Client{IP: "2001:db8:1::1", Peer: "2001:db8:ffff::2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "IPv6: an untrusted peer",
			peer: "[2001:db8:1::2]:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"198.51.100.4"}},
			want:   Client{IP: "2001:db8:1::2", Peer: "2001:db8:1::2", Scheme: "http", Host: "h"}},
		{name: "an IPv4 peer on a dual-stack socket is unmapped and trusted",
			peer: "[::ffff:10.0.0.2]:4000", host: "h",
			header: hdr{"X-Forwarded-For": {"::ffff:198.51.100.4"}},
			want:   Client{IP: "198.51.100.4", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "Forwarded: quoted IPv6 with a port, proto and host of the client's element",
			peer: "127.0.0.1:4000", host: "127.0.0.1:8080",
			header: hdr{"Forwarded": {`for="[2001:db8:cafe::17]:4711";proto=https;host=chat.example.com`}},
			want:   Client{IP: "2001:db8:cafe::17", Peer: "127.0.0.1", Scheme: "https", Host: "chat.example.com", Forwarded: true}},
		{name: "Forwarded wins over X-Forwarded-For",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"Forwarded": {"for=198.51.100.4"}, "X-Forwarded-For": {"203.0.113.9"}},
			want:   Client{IP: "198.51.100.4", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "Forwarded: several elements and lines, case of names, a quoted IPv4 with a port",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"Forwarded": {`For=1.1.1.1, for="198.51.100.4:1234";Proto=HTTPS`, `for=10.0.0.3;proto=http;by=10.0.0.2`}},
			want:   Client{IP: "198.51.100.4", Peer: "10.0.0.2", Scheme: "https", Host: "h", Forwarded: true}},
		{name: "Forwarded: a quoted comma does not split the element",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"Forwarded": {`for=198.51.100.4;host="a,b"`}},
			want:   Client{IP: "198.51.100.4", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "Forwarded: unknown and obfuscated nodes are no address",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"Forwarded": {`for=198.51.100.4, for=unknown, for=10.0.0.3`}},
			want:   Client{IP: "10.0.0.3", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "Forwarded: obfuscated",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"Forwarded": {`for=_hidden`}},
			want:   Client{IP: "10.0.0.2", Peer: "10.0.0.2", Scheme: "http", Host: "h"}},
		{name: "Forwarded: an unclosed quote is malformed",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"Forwarded": {`for="198.51.100.4`}},
			want:   Client{IP: "10.0.0.2", Peer: "10.0.0.2", Scheme: "http", Host: "h"}},
		{name: "Forwarded: IPv6 without brackets in quotes is taken, brackets with junk are not",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"Forwarded": {`for="[2001:db8::1]x", for="2001:db8::9"`}},
			want:   Client{IP: "2001:db8::9", Peer: "10.0.0.2", Scheme: "http", Host: "h", Forwarded: true}},
		{name: "Forwarded: a pair without = is malformed",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"Forwarded": {`for`}},
			want:   Client{IP: "10.0.0.2", Peer: "10.0.0.2", Scheme: "http", Host: "h"}},
		{name: "Forwarded: an element without for= is no address",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"Forwarded": {`for=198.51.100.4, proto=https`}},
			want:   Client{IP: "10.0.0.2", Peer: "10.0.0.2", Scheme: "http", Host: "h"}},
		{name: "X-Forwarded-Proto and X-Forwarded-Host: the nearest proxy's entry",
			peer: "10.0.0.2:4000", host: "127.0.0.1:8080",
			header: hdr{"X-Forwarded-For": {"198.51.100.4"}, "X-Forwarded-Proto": {"http, https"}, "X-Forwarded-Host": {"evil.example, chat.example.com:8443"}},
			want:   Client{IP: "198.51.100.4", Peer: "10.0.0.2", Scheme: "https", Host: "chat.example.com:8443", Forwarded: true}},
		{name: "a scheme other than http and https and a host with a path are not taken",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-Proto": {"javascript"}, "X-Forwarded-Host": {"evil.example/x"}},
			want:   Client{IP: "10.0.0.2", Peer: "10.0.0.2", Scheme: "http", Host: "h"}},
		{name: "a host with credentials is not taken",
			peer: "10.0.0.2:4000", host: "h",
			header: hdr{"X-Forwarded-Host": {"user@evil.example"}},
			want:   Client{IP: "10.0.0.2", Peer: "10.0.0.2", Scheme: "http", Host: "h"}},
		{name: "a RemoteAddr that is no address is kept as it is",
			peer: "pipe", host: "h",
			header: hdr{"X-Forwarded-For": {"198.51.100.4"}},
			want:   Client{IP: "pipe", Peer: "pipe", Scheme: "http", Host: "h"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr, r.Host, r.Header = tc.peer, tc.host, http.Header{}
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for k, vs := range tc.header {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			if got := proxies.Resolve(r); got != tc.want {
				t.Errorf("Resolve:\n got %+v\nwant %+v", got, tc.want)
			}
			// Trusting no one, the peer is the client whatever the headers say.
			none := Proxies{}.Resolve(r)
			if none.IP != tc.want.Peer || none.Forwarded || none.Host != tc.host {
				t.Errorf("Resolve trusting no one: %+v", none)
			}
		})
	}
}

func TestFrom(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.2:1"
	r.Header.Set("X-Forwarded-For", "198.51.100.4")
	if c := From(r); c.IP != "10.0.0.2" {
		t.Errorf("without the router: %+v, want the peer", c)
	}
	want := Client{IP: "198.51.100.4", Peer: "10.0.0.2", Scheme: "https", Host: "x", Forwarded: true}
	r = r.WithContext(With(context.Background(), want))
	if c := From(r); c != want {
		t.Errorf("with the router's: %+v", c)
	}
}
