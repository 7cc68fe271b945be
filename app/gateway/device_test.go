package gateway

import (
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// identifyDevice identifies c with token on device and reads its catch-up.
func (c *client) identifyDevice(token, device string) {
	c.t.Helper()
	c.send(`{"op":"identify","d":{"token":"` + token + `","device_id":"` + device + `"}}`)
	c.expect(OpReady)
	c.catchUp()
}

const (
	laptop = "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"
	phone  = "0a1b2c3d-4e5f-4a6b-9c7d-fedcba987654"
)

func TestDeviceReplacement(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.HeartbeatInterval = time.Hour })
	w.runTail()

	t.Run("a newer connection of a device closes the older with 4017", func(t *testing.T) {
		first, other, second := w.connect(), w.connect(), w.connect()
		first.identifyDevice("ada", laptop)
		other.identifyDevice("ada", phone)
		second.identifyDevice("ada", laptop)
		first.expectClose(CloseDeviceReplaced)
		seq := w.post(w.open, w.openTh, "after the replacement")
		for _, c := range []*client{second, other} {
			if e := c.expectEvent(); e.Seq != seq {
				t.Fatalf("got %+v, want seq %d", e, seq)
			}
		}
	})
	t.Run("the same device of another principal, and connections without a device, stay", func(t *testing.T) {
		ada, bob := w.connect(), w.connect()
		ada.identifyDevice("ada", phone) // replaces the phone connection of the first test
		bob.identifyDevice("bob", phone)
		plain1, plain2 := w.connect(), w.connect()
		plain1.identify("ada", -1)
		plain1.catchUp()
		plain2.identify("ada", -1)
		plain2.catchUp()
		seq := w.post(w.open, w.openTh, "all of them")
		for _, c := range []*client{ada, bob, plain1, plain2} {
			if e := c.expectEvent(); e.Seq != seq {
				t.Fatalf("got %+v, want seq %d", e, seq)
			}
		}
	})
	t.Run("a device_id that is not a UUID in lower case is a decode error", func(t *testing.T) {
		for _, bad := range []string{"laptop", "6F1C2D3E-4A5B-4C6D-8E7F-0123456789AB", laptop + "0"} {
			c := w.connect()
			c.send(`{"op":"identify","d":{"token":"ada","device_id":"` + bad + `"}}`)
			c.expectClose(CloseDecodeError)
		}
	})
}

func TestDeviceReplacementAcrossNodes(t *testing.T) {
	n := newNode(t, func(c *Config) { c.HeartbeatInterval, c.PresenceFlushInterval = time.Hour, time.Hour })
	c := n.connect()
	c.identifyDevice("ada", laptop)
	got := n.waitPublished(signalDevice, n.ada.ID, 1)
	if got["device_id"] != laptop || got["binding_id"] == "" || got["node"] != string(n.g.cfg.Node) {
		t.Fatalf("published %v", got)
	}
	older := kernel.ID("01000000-0000-7000-8000-000000000000") // a UUIDv7 from 1970
	signal := func(binding kernel.ID) map[string]any {
		return map[string]any{"kind": "gateway.device", "node": string(n.other), "principal_id": string(n.ada.ID),
			"device_id": laptop, "binding_id": string(binding)}
	}
	n.signalJSON(signal(older))
	n.signalJSON(map[string]any{"kind": "gateway.device", "node": string(n.other), "principal_id": string(n.ada.ID),
		"device_id": "laptop", "binding_id": string(kernel.NewID())})
	waitFor(t, "the malformed signal's log record", func() bool { return n.logs.count("malformed") == 1 })
	c.quiet() // an older binding elsewhere (a valid signal: one log record only), and a malformed one, close nothing
	n.signalJSON(signal(kernel.NewID()))
	c.expectClose(CloseDeviceReplaced)
}
