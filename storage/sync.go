package storage

import appsync "bothy.dev/bothy/app/sync"

// The DB itself is sync's Log: EventsAfter reads the committed log (eventlog.go) and Head the
// highest committed seq, so catch-up needs no repository of its own.
var _ appsync.Log = (*DB)(nil)
