// Package publicaddr decides whether an address or a host name may be the target of a request
// the server makes on its own (a Web Push delivery, later a webhook): one that reaches the public
// internet, never the machine itself, its local network or a provider's shared space. A person
// who registers an endpoint chooses where the server connects, so the check stands between that
// choice and the server's neighbours.
//
// It must not resolve names: a check at registration looks at the text of the host, and the
// dialer checks the address each connection really goes to (a name can resolve elsewhere later).
package publicaddr

import (
	"net/netip"
	"strings"
)

// refused are the IPv4 and IPv6 ranges that are not the public internet, beyond what netip's
// own predicates name (loopback, private, link-local, multicast, unspecified).
var refused = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT, shared address space
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: an IPv4 address in disguise
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: an IPv4 address in disguise
}

// Address reports whether a is an address of the public internet. An IPv4 address written as
// IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it is; a zone (fe80::1%eth0) is refused.
func Address(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range refused {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Host reports whether host (the host of a URL, without its port; an IPv6 literal with or
// without its brackets) may name a public server, without resolving it: an IP literal must be a
// public address; a name must hold a dot and must not be localhost or under .localhost,
// .local, .internal, .home.arpa or .lan, which name the local network by convention.
func Host(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if host == "" {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return Address(a)
	}
	name := strings.ToLower(host)
	if !strings.Contains(name, ".") || strings.ContainsAny(name, "%/\\@ ") {
		return false
	}
	// A name whose last label is all digits is an IPv4 address in a form netip does not parse
	// (010.0.0.1, 127.1, 0x7f.1) that some resolvers would still read as one; no top-level
	// domain is all digits.
	last := name[strings.LastIndex(name, ".")+1:]
	if last == "" || strings.Trim(last, "0123456789") == "" {
		return false
	}
	for _, local := range []string{"localhost", "local", "internal", "home.arpa", "lan"} {
		if name == local || strings.HasSuffix(name, "."+local) {
			return false
		}
	}
	return true
}
