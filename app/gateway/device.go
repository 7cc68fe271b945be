package gateway

import (
	"sync"

	"bothy.dev/bothy/app/kernel"
)

// devices binds each device of a principal to its one connection (a replaced one closes with 4017, on any node). A
// client that names its device in identify (device_id, a UUID it keeps, one per browser
// profile or installed app) holds one connection for it: the newest identify or resume of the
// device, on any node, closes the older connection with 4017. A reloaded tab or a client that
// reconnected from a new network thus never leaves a zombie connection behind that keeps
// receiving (and counting as online) until its heartbeat runs out.
//
// Every binding gets a UUIDv7; the newer binding wins, also across nodes, where the signal
// gateway.device names it.
type devices struct {
	mu   sync.Mutex
	held map[deviceKey]binding
}

type deviceKey struct {
	principal kernel.ID
	device    string
}

type binding struct {
	id kernel.ID
	c  *conn
}

// bind makes c the connection of device for principal, closes the connection it replaces on
// this node, and tells the other nodes. A connection without a device is not bound.
func (g *Gateway) bindDevice(c *conn, principal kernel.ID, device string) {
	if device == "" {
		return
	}
	key := deviceKey{principal, device}
	b := binding{kernel.NewID(), c}
	g.devices.mu.Lock()
	if g.devices.held == nil {
		g.devices.held = map[deviceKey]binding{}
	}
	old, had := g.devices.held[key]
	g.devices.held[key] = b
	g.devices.mu.Unlock()
	c.mu.Lock()
	c.device = key
	c.mu.Unlock()
	if had && old.c != c {
		old.c.closeWith(CloseDeviceReplaced, "")
	}
	if g.cluster != nil {
		g.cluster.publish(signal{Kind: signalDevice, PrincipalID: principal, DeviceID: device, BindingID: b.id})
	}
}

// unbindDevice forgets c's binding when it still holds it.
func (g *Gateway) unbindDevice(c *conn) {
	c.mu.Lock()
	key := c.device
	c.mu.Unlock()
	if key.device == "" {
		return
	}
	g.devices.mu.Lock()
	if b, ok := g.devices.held[key]; ok && b.c == c {
		delete(g.devices.held, key)
	}
	g.devices.mu.Unlock()
}

// replacedElsewhere closes this node's connection of the device when another node bound it
// after it (a signal that arrives late, twice or out of order closes nothing newer).
func (g *Gateway) replacedElsewhere(principal kernel.ID, device string, newer kernel.ID) {
	key := deviceKey{principal, device}
	g.devices.mu.Lock()
	b, ok := g.devices.held[key]
	if ok && b.id < newer {
		delete(g.devices.held, key)
	} else {
		ok = false
	}
	g.devices.mu.Unlock()
	if ok {
		b.c.closeWith(CloseDeviceReplaced, "")
	}
}

// validDeviceID reports whether s is a UUID in canonical form (any version, lower case): the
// device ids cross nodes as ids, never as text.
func validDeviceID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f'):
			return false
		}
	}
	return true
}
