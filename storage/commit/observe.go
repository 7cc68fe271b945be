package commit

import (
	"context"
	"time"
)

// Observer is told of the writer's work, for traces and metrics. Its methods must be quick:
// Batch runs on the writer's goroutine, between two batches.
type Observer interface {
	// Unit is called as a Unit of Work is handed to the writer, outside any unit; the context it
	// returns is the unit's (it may carry a span), and done is called with the unit's outcome
	// once the writer has answered it.
	Unit(ctx context.Context) (context.Context, func(err error))
	// Batch is told of each batch once it has committed or failed for good, before its units
	// are answered.
	Batch(b BatchReport)
}

// BatchReport is what one batch did.
type BatchReport struct {
	// Units are the contexts of the batch's units (those Observer.Unit returned), in order.
	Units []context.Context
	// Committed is how many units committed; Events how many events they appended.
	Committed, Events int
	// Start is when the batch began, CommitStart when its COMMIT was sent, End when it was
	// answered (CommitStart is zero when no COMMIT was sent).
	Start, CommitStart, End time.Time
	// Attempts is how often the batch ran (more than 1 after a transient conflict).
	Attempts int
	// Err is why the batch failed as a whole, nil when it committed.
	Err error
}
