// Package clientaddr decides who a request's client is: its address, the scheme and the host it
// asked for. Behind a reverse proxy the TCP peer is the proxy, and the client is named in a
// header the proxy adds (Forwarded, X-Forwarded-For, X-Forwarded-Proto, X-Forwarded-Host); such
// a header is believed only when the peer is one of server.trusted_proxies, since anyone else
// can write whatever they like in it. The router resolves the client once, at the start of its
// outer chain, and keeps it in the request's context: the login limiter, the access log, the
// gateway's bound per address and its Origin check all read it from there.
//
// It imports only the standard library, so every adapter (httpapi, wstransport, ui) may use it.
package clientaddr

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies is the set of reverse proxies whose forwarding headers are believed. The zero value
// trusts no one: the client is always the TCP peer.
type Proxies struct {
	prefixes []netip.Prefix
}

// ParseProxies reads server.trusted_proxies: CIDRs (10.0.0.0/8, fd00::/8) or single addresses
// (127.0.0.1, ::1), separated by commas or spaces. An empty string trusts no one.
func ParseProxies(s string) (Proxies, error) {
	var p Proxies
	for i, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		var pre netip.Prefix
		if strings.Contains(f, "/") {
			var err error
			if pre, err = netip.ParsePrefix(f); err != nil {
				return Proxies{}, fmt.Errorf("entry %d is not a CIDR such as 10.0.0.0/8 or fd00::/8", i+1)
			}
			if pre.Addr().Zone() != "" {
				return Proxies{}, fmt.Errorf("entry %d has a zone, which a CIDR cannot", i+1)
			}
		} else {
			a, err := netip.ParseAddr(f)
			if err != nil || a.Zone() != "" {
				return Proxies{}, fmt.Errorf("entry %d is neither a CIDR such as 10.0.0.0/8 nor an address such as 127.0.0.1", i+1)
			}
			pre = netip.PrefixFrom(a, a.BitLen())
		}
		// 10.0.0.1/8 means 10.0.0.0/8; an IPv4 block written in IPv6 (::ffff:10.0.0.0/104)
		// is kept as the IPv4 block, since peers are compared unmapped.
		pre = pre.Masked()
		if a := pre.Addr(); a.Is4In6() && pre.Bits() >= 96 {
			pre = netip.PrefixFrom(a.Unmap(), pre.Bits()-96)
		}
		p.prefixes = append(p.prefixes, pre)
	}
	return p, nil
}

// Trusts reports whether a is one of the trusted proxies.
func (p Proxies) Trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, pre := range p.prefixes {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// Empty reports whether no proxy is trusted.
func (p Proxies) Empty() bool { return len(p.prefixes) == 0 }

// Client is who sent a request, as far as the server can tell.
type Client struct {
	// IP is the client's address in canonical form (an IPv4 address in IPv6 form unmapped), or
	// the raw RemoteAddr when that is no address (a test's, a Unix socket's).
	IP string
	// Peer is the TCP peer's address: the client, or the proxy that forwarded the request.
	Peer string
	// Scheme is "https" or "http": what the client used to reach the instance.
	Scheme string
	// Host is the host (and port) the client asked for.
	Host string
	// Forwarded is true when IP, Scheme or Host came from a trusted proxy's header.
	Forwarded bool
}

// Resolve decides the client of r. Only when the TCP peer is a trusted proxy are the forwarding
// headers read: the client address is then the right-most hop of Forwarded (its for=), or
// without that header of X-Forwarded-For, that is not itself a trusted proxy. Each proxy appends
// the address it got the request from, so the entries left of the first untrusted one from the
// right are whatever that untrusted sender claimed, and they are never taken.
func (p Proxies) Resolve(r *http.Request) Client {
	c := Client{IP: r.RemoteAddr, Peer: r.RemoteAddr, Scheme: schemeOf(r.TLS), Host: r.Host}
	peer, ok := parseRemote(r.RemoteAddr)
	if !ok {
		return c
	}
	c.IP, c.Peer = peer.String(), peer.String()
	if !p.Trusts(peer) {
		return c
	}
	var hops []hop
	if fwd := r.Header.Values("Forwarded"); len(fwd) > 0 {
		hops = parseForwarded(fwd)
	} else if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		hops = parseXFF(xff)
	}
	// From the right: past every trusted proxy, to the one that received the request from the
	// client. An entry that is no address (garbage, "unknown", an obfuscated name) stops the
	// walk: the client is then the last proxy known, never a guess further left.
	client := -1
	for i := len(hops) - 1; i >= 0; i-- {
		if !hops[i].addr.IsValid() {
			break
		}
		client = i
		if !p.Trusts(hops[i].addr) {
			break
		}
	}
	if client >= 0 {
		c.IP = hops[client].addr.String()
		c.Forwarded = true
	}
	// The scheme and host the client used are what the proxy that received its request saw:
	// that proxy's Forwarded element (proto=, host=), else the nearest X-Forwarded-Proto and
	// X-Forwarded-Host, which each proxy sets or overwrites.
	proto, host := "", ""
	if client >= 0 {
		proto, host = hops[client].proto, hops[client].host
	}
	if proto == "" {
		proto = lastListEntry(r.Header.Values("X-Forwarded-Proto"))
	}
	if host == "" {
		host = lastListEntry(r.Header.Values("X-Forwarded-Host"))
	}
	if s := strings.ToLower(proto); s == "http" || s == "https" {
		c.Scheme, c.Forwarded = s, true
	}
	if validHost(host) {
		c.Host, c.Forwarded = host, true
	}
	return c
}

type clientKey struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// From returns the client the router resolved for r; a request that did not pass the router
// (a handler's unit test) gets its TCP peer, trusting no proxy.
func From(r *http.Request) Client {
	if c, ok := r.Context().Value(clientKey{}).(Client); ok {
		return c
	}
	return Proxies{}.Resolve(r)
}

func schemeOf(t *tls.ConnectionState) string {
	if t != nil {
		return "https"
	}
	return "http"
}

// parseRemote reads a RemoteAddr ("192.0.2.1:5555", "[2001:db8::1]:5555").
func parseRemote(s string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// hop is one proxy's report of where it got the request from.
type hop struct {
	addr  netip.Addr // invalid when the entry is no address
	proto string
	host  string
}

// parseXFF reads X-Forwarded-For: addresses separated by commas, over any number of header
// lines, in order.
func parseXFF(values []string) []hop {
	var out []hop
	for _, v := range values {
		for _, e := range strings.Split(v, ",") {
			out = append(out, hop{addr: parseNode(strings.TrimSpace(e))})
		}
	}
	return out
}

// parseForwarded reads Forwarded (RFC 7239): elements separated by commas, each pairs
// name=value separated by semicolons, a value a token or a quoted string (which may hold commas
// and semicolons). A malformed element is a hop with no address.
func parseForwarded(values []string) []hop {
	var out []hop
	for _, v := range values {
		for _, el := range splitQuoted(v, ',') {
			h, ok := parseElement(el)
			if !ok {
				h = hop{}
			}
			out = append(out, h)
		}
	}
	return out
}

func parseElement(el string) (hop, bool) {
	var h hop
	for _, pair := range splitQuoted(el, ';') {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, val, ok := strings.Cut(pair, "=")
		if !ok {
			return hop{}, false
		}
		val, ok = unquote(strings.TrimSpace(val))
		if !ok {
			return hop{}, false
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "for":
			h.addr = parseNode(val)
		case "proto":
			h.proto = val
		case "host":
			h.host = val
		}
	}
	return h, true
}

// splitQuoted splits s at sep outside double quotes.
func splitQuoted(s string, sep byte) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unquote returns a token as it is and a quoted string without its quotes and escapes; a quote
// that does not close, or one inside a token, is malformed.
func unquote(v string) (string, bool) {
	if !strings.HasPrefix(v, `"`) {
		return v, !strings.Contains(v, `"`)
	}
	if len(v) < 2 || !strings.HasSuffix(v, `"`) {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		if v[i] == '\\' {
			i++
			if i == len(v)-1 {
				return "", false
			}
		} else if v[i] == '"' {
			return "", false
		}
		b.WriteByte(v[i])
	}
	return b.String(), true
}

// parseNode reads a node as Forwarded's for= or an X-Forwarded-For entry writes it: an IPv4
// address, with an optional port; an IPv6 address in brackets with an optional port, or bare.
// "unknown", an obfuscated name ("_hidden") and anything else is no address.
func parseNode(s string) netip.Addr {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}
		}
		if rest := s[end+1:]; rest != "" {
			if port, ok := strings.CutPrefix(rest, ":"); !ok || !validPort(port) {
				return netip.Addr{}
			}
		}
		s = s[1:end]
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() {
			return netip.Addr{}
		}
		return a.Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("")
	}
	if host, port, ok := strings.Cut(s, ":"); ok && validPort(port) {
		if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
			return a
		}
	}
	return netip.Addr{}
}

// validPort is a port number, or an obfuscated port ("_abc") as RFC 7239 allows.
func validPort(p string) bool {
	if p == "" || len(p) > 16 {
		return false
	}
	if p[0] == '_' {
		return true
	}
	if len(p) > 5 {
		return false
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// lastListEntry is the right-most entry of a header that proxies may have written as a list,
// over all its lines: the one the nearest proxy wrote.
func lastListEntry(values []string) string {
	if len(values) == 0 {
		return ""
	}
	v := values[len(values)-1]
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSpace(v)
}

// validHost accepts a host[:port] as a Host header holds it, and nothing that could smuggle a
// path, credentials or a second value into a URL built from it.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '-', c == ':', c == '[', c == ']', c == '_':
		default:
			return false
		}
	}
	return true
}
