package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
)

// EventType is one kind of event and the Go type P of its payload. The module that emits the
// event defines it once, as a package variable made by DefineEvent (durable, in the log) or
// DefineEphemeral (sent by the gateway only); readers encode and decode the payload through it
// instead of guessing its shape. Name is stable: clients read it.
type EventType[P any] struct {
	Name string
}

// EventInfo describes a registered event type, for the log and for tests.
type EventInfo struct {
	Name    string
	Payload reflect.Type
	// Durable is true for an event of the log, false for an ephemeral one of the gateway.
	Durable bool
	// Redacts are the types of the earlier events whose payload this one replaces in the log.
	Redacts []string
	// roundTrip encodes a payload of this type and decodes it again.
	roundTrip func(v any) (any, error)
}

// RoundTrip encodes v, which must be of the registered payload type, and decodes it again
// through the event type, the way a reader gets it.
func (i EventInfo) RoundTrip(v any) (any, error) { return i.roundTrip(v) }

// EventOption changes how DefineEvent registers an event type.
type EventOption func(*EventInfo)

// RedactsEarlier says that an event of the type being defined replaces the payload of the
// earlier events of types, about the same subject, in the log (see Redacts).
func RedactsEarlier(types ...string) EventOption {
	return func(i *EventInfo) { i.Redacts = append(i.Redacts, types...) }
}

var events = struct {
	sync.RWMutex
	byName map[string]EventInfo
	views  []EventView
}{byName: map[string]EventInfo{}}

// DefineEvent registers the durable event type name with payload type P. It panics when name is
// registered already: two modules must not emit one event type.
func DefineEvent[P any](name string, opts ...EventOption) EventType[P] {
	return define[P](name, true, opts)
}

// DefineEphemeral registers the ephemeral event type name (never in the log, sent by the
// gateway only) with payload type P.
func DefineEphemeral[P any](name string) EventType[P] {
	return define[P](name, false, nil)
}

func define[P any](name string, durable bool, opts []EventOption) EventType[P] {
	t := EventType[P]{Name: name}
	info := EventInfo{Name: name, Payload: reflect.TypeFor[P](), Durable: durable, roundTrip: func(v any) (any, error) {
		p, ok := v.(P)
		if !ok {
			return nil, fmt.Errorf("kernel: %s carries %T, not %T", name, p, v)
		}
		b, err := t.Encode(p)
		if err != nil {
			return nil, err
		}
		return t.Decode(LoggedEvent{Type: name, Payload: b})
	}}
	for _, o := range opts {
		o(&info)
	}
	events.Lock()
	defer events.Unlock()
	if _, ok := events.byName[name]; ok {
		panic("kernel: event type defined twice: " + name)
	}
	events.byName[name] = info
	return t
}

// EventTypes lists the registered event types, by name.
func EventTypes() []EventInfo {
	events.RLock()
	defer events.RUnlock()
	out := make([]EventInfo, 0, len(events.byName))
	for _, i := range events.byName {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b EventInfo) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// LookupEvent returns the registered event type name.
func LookupEvent(name string) (EventInfo, bool) {
	events.RLock()
	defer events.RUnlock()
	i, ok := events.byName[name]
	return i, ok
}

// CheckEvent says why e cannot be appended: its type is not a registered durable one, or its
// payload is not of the type's payload type. Such an event is a programming error (append it
// through EventType.Event); the test event logs panic on it.
func CheckEvent(e Event) error {
	i, ok := LookupEvent(e.Type)
	switch {
	case !ok:
		return fmt.Errorf("kernel: event type %q is not defined (DefineEvent)", e.Type)
	case !i.Durable:
		return fmt.Errorf("kernel: event type %q is ephemeral, not one of the log", e.Type)
	case reflect.TypeOf(e.Payload) != i.Payload:
		return fmt.Errorf("kernel: event %s carries %T, not %v", e.Type, e.Payload, i.Payload)
	}
	return nil
}

// Event returns e as an event of this type carrying p: the only way a module should fill an
// Event's Type and Payload, so that the payload is always of the registered type.
func (t EventType[P]) Event(e Event, p P) Event {
	e.Type, e.Payload = t.Name, p
	return e
}

// Encode returns p as JSON, as the log stores it and the gateway sends it.
func (t EventType[P]) Encode(p P) ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("kernel: encode the payload of %s: %w", t.Name, err)
	}
	return b, nil
}

// Decode reads the payload of e, which must be of this type. Errors: a *PayloadError when e is
// of another type or its payload is not a P.
func (t EventType[P]) Decode(e LoggedEvent) (P, error) {
	var p P
	if e.Type != t.Name {
		return p, &PayloadError{Seq: e.Seq, Type: e.Type, Err: fmt.Errorf("decoded as %s", t.Name)}
	}
	if v, ok := e.Value.(P); ok {
		return v, nil
	}
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		return p, &PayloadError{Seq: e.Seq, Type: e.Type, Err: err}
	}
	return p, nil
}

// DecodeOneOf reads the payload of e through whichever of types e is of, for a reader that
// handles several event types with one payload type. Errors: a *PayloadError, as Decode's; e of
// none of types is one too.
func DecodeOneOf[P any](e LoggedEvent, types ...EventType[P]) (P, error) {
	for _, t := range types {
		if t.Name == e.Type {
			return t.Decode(e)
		}
	}
	var p P
	return p, &PayloadError{Seq: e.Seq, Type: e.Type, Err: errors.New("not one of the event types expected")}
}

// PayloadError is a logged event whose payload cannot be read as its type's.
type PayloadError struct {
	Seq  int64
	Type string
	Err  error
}

func (e *PayloadError) Error() string {
	return fmt.Sprintf("kernel: the payload of event %d (%s): %v", e.Seq, e.Type, e.Err)
}

func (e *PayloadError) Unwrap() error { return e.Err }

// EventView is a reader's own, narrower type V for the payload of another module's event, for a
// module that must not import the one that emits it (a lower module following a higher one's
// events). ViewEvent records it so that a test can hold V's members to the payload's.
type EventView struct {
	Name string
	View reflect.Type
}

// ViewEvent returns a descriptor that decodes the payload of event type name into V. V must read
// only members the registered payload type has; a test holds it (EventViews).
func ViewEvent[V any](name string) EventType[V] {
	events.Lock()
	events.views = append(events.views, EventView{Name: name, View: reflect.TypeFor[V]()})
	events.Unlock()
	return EventType[V]{Name: name}
}

// EventViews lists the views ViewEvent made.
func EventViews() []EventView {
	events.RLock()
	defer events.RUnlock()
	return slices.Clone(events.views)
}

// Redacts returns the types of the earlier events whose payload an event of type typ replaces
// in the log with its own: a message.deleted redacts its message's message.created and
// message.updated (same subject), so that deleted content is not readable in the log. The module
// that appends it redacts the stored log in the same transaction; a copy of the log kept in
// memory must do the same when it sees the event.
func Redacts(typ string) []string {
	i, _ := LookupEvent(typ)
	return i.Redacts
}
