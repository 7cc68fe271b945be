package storage

import "bothy.dev/bothy/app/catchup"

// The DB itself is sync's Log: EventsAfter reads the committed log (eventlog.go) and Head the
// highest committed seq, so catch-up needs no repository of its own.
var _ catchup.Log = (*DB)(nil)
