package gatewaybench

import (
	"strings"
	"testing"
)

func TestOrder(t *testing.T) {
	t.Run("ready, rising seqs and catchup.complete pass", func(t *testing.T) {
		var o Order
		for _, err := range []error{o.Ready(), o.Event(3), o.Event(7), o.Complete(), o.Event(8)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if o.Last() != 8 {
			t.Errorf("Last() = %d, want 8", o.Last())
		}
	})
	t.Run("a frame out of its place fails", func(t *testing.T) {
		for _, c := range []struct {
			name  string
			steps func(o *Order) error
			want  string
		}{
			{"an event before ready", func(o *Order) error { return o.Event(1) }, "seq 1 before ready"},
			{"a second ready", func(o *Order) error { o.Ready(); return o.Ready() }, "a second ready"},
			{"a seq twice", func(o *Order) error { o.Ready(); o.Event(4); return o.Event(4) }, "seq 4 after seq 4"},
			{"a seq lower than the one before", func(o *Order) error { o.Ready(); o.Event(4); return o.Event(2) }, "seq 2 after seq 4"},
			{"catchup.complete before ready", func(o *Order) error { return o.Complete() }, "catchup.complete before ready"},
			{"catchup.complete twice", func(o *Order) error { o.Ready(); o.Complete(); return o.Complete() }, "or twice"},
			{"an event at or below the head a consumer starts from", func(o *Order) error { o.Ready(); o.From(9); return o.Event(9) }, "seq 9 after seq 9"},
		} {
			var o Order
			if err := c.steps(&o); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
			}
		}
	})
}
