package gateway

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
)

func TestPayloadErrors(t *testing.T) {
	w := newWorld(t)
	var logged kerneltest.Buffer
	w.g.hub.log = slog.New(slog.NewTextHandler(&logged, nil))
	w.runTail()
	bob := w.connect()
	bob.identify("bob", -1)
	bob.catchUp()

	t.Run("an event whose payload does not read as its type's is logged with its seq and type, counted, and still delivered", func(t *testing.T) {
		seq := w.log.append(authz.EvGrantChanged.Name, kernel.Scope{SpaceID: w.space, ChannelID: w.open}, w.open,
			map[string]any{"channel_id": w.open, "principal_id": 42, "level": "view"})
		if e := bob.expectEvent(); e.Seq != seq || e.Type != authz.EvGrantChanged.Name {
			t.Fatalf("got %+v", e)
		}
		if n := w.g.Stats().PayloadErrors; n != 1 {
			t.Fatalf("PayloadErrors = %d, want 1", n)
		}
		line := logged.String()
		if !strings.Contains(line, "seq="+strconv.FormatInt(seq, 10)) || !strings.Contains(line, "type=grant.changed") {
			t.Fatalf("log %q", line)
		}
	})

	t.Run("the events after it are delivered as before", func(t *testing.T) {
		m := w.post(w.open, w.openTh, "after")
		if e := bob.expectEvent(); e.Seq != m {
			t.Fatalf("got %+v, want seq %d", e, m)
		}
		if n := w.g.Stats().PayloadErrors; n != 1 {
			t.Fatalf("PayloadErrors = %d, want 1", n)
		}
	})
}
