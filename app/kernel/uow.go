package kernel

import (
	"context"
	"time"
)

// UnitOfWork runs a use case in one transaction (see docs/architecture.md, The write path).
type UnitOfWork interface {
	// Do runs fn in one transaction carried by ctx; a nested call joins the outer one. fn may be
	// retried whole on a transient conflict, so it must have no effect outside the database.
	// fn must not start a Unit of Work with a context that is not derived from the one it got.
	// Errors: whatever fn returns; unavailable when the store cannot take the write.
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}

// Scope names what a durable event concerns; the delivery path authorizes readers by it.
// A personal event sets only PrincipalID; an instance-wide one sets nothing.
type Scope struct {
	SpaceID     ID
	ChannelID   ID
	ThreadID    ID
	PrincipalID ID
}

// Event is a durable event, appended inside a Unit of Work; it gets its seq at commit.
type Event struct {
	Type  string // "message.created", …: the Name of an EventType (events.go)
	Scope Scope
	// SubjectID is the id of the object the event is about (a message, a channel, …); the log
	// redactor finds events by it.
	SubjectID ID
	ActorID   ID
	Payload   any // of the EventType's payload type; encoded as JSON once, at commit
}

// EventLog is the append side of the event log.
type EventLog interface {
	// Append buffers e in the Unit of Work of ctx. It panics when ctx carries none: an event
	// outside a transaction is a programming error, never a runtime condition.
	Append(ctx context.Context, e Event)
}

// LoggedEvent is an event as stored in the log.
type LoggedEvent struct {
	Seq       int64
	Type      string
	Scope     Scope
	SubjectID ID
	ActorID   ID
	Payload   []byte // JSON
	CreatedAt time.Time
	// Value is the payload as it was appended, of its event type's payload type, when the event
	// comes straight from this process's writer (storage's OnCommit); nil when it was read from
	// the log. Decode answers it without decoding Payload. Readers must not change it.
	Value any
}

// TxView is what a Unit of Work's transaction has seen of the log: the head committed before the
// transaction began, and the types of the events that earlier units of the same transaction (a
// group-commit batch) and this unit so far have appended. A decision made from state kept in
// memory is as good as one read in the transaction when that state has seen BaseSeq and no unit
// of the transaction has appended an event that changes it.
type TxView interface {
	BaseSeq() int64
	// Appended reports whether an event of one of types is pending in the transaction.
	Appended(types ...string) bool
}

type txViewKey struct{}

// WithTxView puts the view of the Unit of Work into ctx; the store does, for each unit.
func WithTxView(ctx context.Context, v TxView) context.Context {
	return context.WithValue(ctx, txViewKey{}, v)
}

// TxViewFrom returns the view of the Unit of Work of ctx, if ctx carries one.
func TxViewFrom(ctx context.Context) (TxView, bool) {
	v, ok := ctx.Value(txViewKey{}).(TxView)
	return v, ok
}
