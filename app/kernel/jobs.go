package kernel

import (
	"context"
	"time"
)

// Job is background work that a Unit of Work causes (see docs/architecture.md, Jobs): enqueued inside the
// unit, it commits or rolls back with the unit's rows, and a process of role all or worker runs
// it after the commit, when it is due. A job runs at least once: a handler may run again after
// a crash or a lost answer, so it reads the current state and does nothing when nothing is left
// to do (a run that is no longer queued is not expired again).
type Job struct {
	// Name selects the handler: module.verb, such as "runs.queued_expiry". The appliance
	// registers one handler per name; Enqueue refuses a name without one.
	Name string
	// Args is encoded as JSON and handed to the handler as it was encoded: a small struct of
	// ids, never content or secrets (the queue is one more place data would live, and deletion
	// and privacy stay with the domain tables). nil means none.
	Args any
	// At is when the job is due, on the wall clock (the queue's receiver compares it with the
	// system time, not with a kernel.Clock); the zero time, or a time past, means at once.
	At time.Time
	// Key, when set, makes the job unique by (Name, Key) while it is in the queue (waiting,
	// running, or waiting to be tried again): an Enqueue with the Name and Key of a job still
	// in the queue adds nothing and keeps the first job's Args and At. The key is free again
	// once that job is done or dropped. A handler that schedules its own successor therefore
	// gives it another key (the due time in it, say).
	Key string
}

// Jobs is the enqueue side of the job queue.
type Jobs interface {
	// Enqueue adds j in the Unit of Work of ctx, so that it commits or rolls back with the
	// unit's other writes (in a unit of its own when ctx carries none). Errors: internal for a
	// programming error (no name, a name without a registered handler, Args that do not encode
	// as JSON or exceed 4 KiB, a key over 200 bytes); unavailable when the store cannot write.
	Enqueue(ctx context.Context, j Job) error
}
