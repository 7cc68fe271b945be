package gatewaybench

import (
	"errors"
	"fmt"
)

// Order checks that a connection's frames come in their place in the protocol: one ready, then
// events whose seqs rise (a duplicate or a reordering is an error) and one catchup.complete.
// The zero Order expects ready first.
type Order struct {
	last             int64 // the seq of the last logged event
	ready, completed bool
}

// Ready notes a ready frame.
func (o *Order) Ready() error {
	if o.ready {
		return errors.New("a second ready on one connection")
	}
	o.ready = true
	return nil
}

// Complete notes a catchup.complete frame.
func (o *Order) Complete() error {
	if !o.ready || o.completed {
		return errors.New("catchup.complete before ready, or twice")
	}
	o.completed = true
	return nil
}

// Event notes a logged event (seq > 0; an ephemeral event, presence or typing, has seq 0 and no
// place in the order).
func (o *Order) Event(seq int64) error {
	switch {
	case !o.ready:
		return fmt.Errorf("seq %d before ready", seq)
	case seq <= o.last:
		return fmt.Errorf("seq %d after seq %d", seq, o.last)
	}
	o.last = seq
	return nil
}

// Last is the seq of the last logged event, 0 before any.
func (o *Order) Last() int64 { return o.last }

// From notes that the connection's log starts after seq (a consumer live from the head): an
// event at or below it is out of order.
func (o *Order) From(seq int64) { o.last = max(o.last, seq) }
