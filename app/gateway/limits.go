package gateway

import "bothy.dev/bothy/app/kernel"

// Connection bounds. Without them one leaked session token, or one address, could hold as many
// connections as the process has file descriptors, each with its goroutine, buffers and a place
// in every fan-out. Two counts bound them, both held under g.mu:
//
//   - per address (gateway.max_connections_per_address): every connection from one peer
//     address, identified or not, from the upgrade on. One that never identifies holds its slot
//     only until gateway.identify_timeout closes it (4003).
//   - per principal (gateway.max_connections_per_principal): the identified connections of one
//     person or agent, counted from the identify or resume that was accepted.
//
// The connection past a bound is closed with 4018. A connection that replaces another of the
// same principal is never refused for the principal's bound, since the one it replaces is on its
// way out: an agent's consumer taking over (4015), a device connecting again (4017), a resume
// of a session whose connection is still open (4006).

// addAddressLocked counts c under its address, or reports false when the address holds
// MaxConnectionsPerAddress already. The caller holds g.mu.
func (g *Gateway) addAddressLocked(c *conn) bool {
	addr := c.info.Address
	if addr == "" {
		return true
	}
	if limit := g.cfg.MaxConnectionsPerAddress; limit > 0 && g.perAddress[addr] >= limit {
		return false
	}
	g.perAddress[addr]++
	c.countedAddress = addr
	return true
}

// admitPrincipal counts c as an identified connection of principal, or reports false when the
// principal holds MaxConnectionsPerPrincipal already and c replaces none of them.
func (g *Gateway) admitPrincipal(c *conn, principal kernel.ID, replaces bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.countedPrincipal == principal {
		return true
	}
	if limit := g.cfg.MaxConnectionsPerPrincipal; limit > 0 && !replaces && g.perPrincipal[principal] >= limit {
		return false
	}
	g.releasePrincipalLocked(c)
	g.perPrincipal[principal]++
	c.countedPrincipal = principal
	return true
}

// replacesAnother reports whether an identify or resume of actor with device takes the place of
// a connection this node holds: the agent's consumer, or the device's connection.
func (g *Gateway) replacesAnother(actor kernel.Actor, device string) bool {
	if actor.Kind == kernel.KindAgent && g.deps.Consumers != nil {
		g.consumers.mu.Lock()
		_, held := g.consumers.held[actor.ID]
		g.consumers.mu.Unlock()
		if held {
			return true
		}
	}
	if device == "" {
		return false
	}
	g.devices.mu.Lock()
	defer g.devices.mu.Unlock()
	_, held := g.devices.held[deviceKey{actor.ID, device}]
	return held
}

// releaseLocked gives back what c counted; forget calls it once c is gone. The caller holds g.mu.
func (g *Gateway) releaseLocked(c *conn) {
	if a := c.countedAddress; a != "" {
		if g.perAddress[a]--; g.perAddress[a] <= 0 {
			delete(g.perAddress, a)
		}
		c.countedAddress = ""
	}
	g.releasePrincipalLocked(c)
}

func (g *Gateway) releasePrincipalLocked(c *conn) {
	if p := c.countedPrincipal; !p.IsZero() {
		if g.perPrincipal[p]--; g.perPrincipal[p] <= 0 {
			delete(g.perPrincipal, p)
		}
		c.countedPrincipal = kernel.NilID
	}
}
