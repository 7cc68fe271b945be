// Package stats answers what the owner's overview shows about the instance: how many people,
// agents, spaces, channels, messages and runs it holds, how busy the last day was (messages and
// runs per hour), and how large its database is.
//
// It must not import storage or net/http, and it only reads: every number comes from one Store
// call that the store answers from indexes, so the overview stays cheap however large the
// instance grows.
package stats

import (
	"context"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// Counts are the totals of the instance. Channels are the channels of spaces, without direct
// messages; Messages counts every message ever posted, deleted ones included.
type Counts struct {
	People, Agents, Spaces, Channels, Messages, Runs int64
}

// HourCount is what happened in one hour.
type HourCount struct {
	Messages, Runs int64
}

// Hour is one bucket of the activity: the hour that starts at Start (UTC).
type Hour struct {
	Start time.Time
	HourCount
}

// Database is the size of the database on disk. On SQLite Bytes is the database file and WAL
// the write-ahead log next to it; on PostgreSQL Bytes is pg_database_size and WAL is 0.
type Database struct {
	Engine string
	Bytes  int64
	WAL    int64
}

// Overview is everything the overview shows.
type Overview struct {
	Counts   Counts
	Hours    []Hour // Hours hours, oldest first; the last one is the hour now runs in
	Database Database
}

// Hours is how many hours the activity covers: the last day.
const Hours = 24

// Store is the statistics repository port (storage/stats.go). Its reads run on the read pool.
type Store interface {
	// Counts returns the totals, each one COUNT the engine answers from an index. Errors: only
	// the database's.
	Counts(ctx context.Context) (Counts, error)
	// Hourly returns the messages and runs created in each of the n hours from first on: the
	// i-th count covers [first + i h, first + (i+1) h). Each count is an index range. Errors:
	// only the database's.
	Hourly(ctx context.Context, first time.Time, n int) ([]HourCount, error)
	// DatabaseSize returns the size of the database on disk. Errors: only the database's or
	// the file system's.
	DatabaseSize(ctx context.Context) (Database, error)
}

// Service holds the use case.
type Service struct {
	store Store
	authz kernel.Authorizer
	clock kernel.Clock
}

// Deps is what the stats service needs; Clock may be nil (the system clock).
type Deps struct {
	Store Store
	Authz kernel.Authorizer
	Clock kernel.Clock
}

// New returns the stats service.
func New(d Deps) *Service {
	if d.Store == nil || d.Authz == nil {
		panic("stats: New needs Store and Authz")
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	return &Service{store: d.Store, authz: d.Authz, clock: d.Clock}
}

// Overview returns the counts, the activity of the last Hours hours (every hour present, empty
// ones as zero) and the database size (instance.stats.read, owners only).
// Errors: unauthenticated, forbidden.
func (s *Service) Overview(ctx context.Context, actor kernel.Actor) (Overview, error) {
	if err := s.authz.Authorize(ctx, actor, ActStatsRead, kernel.Resource{Kind: kernel.ResInstance}); err != nil {
		return Overview{}, err
	}
	totals, err := s.store.Counts(ctx)
	if err != nil {
		return Overview{}, err
	}
	first := s.clock.Now().UTC().Truncate(time.Hour).Add(-(Hours - 1) * time.Hour)
	counts, err := s.store.Hourly(ctx, first, Hours)
	if err != nil {
		return Overview{}, err
	}
	db, err := s.store.DatabaseSize(ctx)
	if err != nil {
		return Overview{}, err
	}
	return Overview{Counts: totals, Hours: Buckets(first, counts), Database: db}, nil
}

// Buckets labels counts as Hours consecutive hours from first, zero where counts ends early.
func Buckets(first time.Time, counts []HourCount) []Hour {
	out := make([]Hour, Hours)
	for i := range out {
		out[i].Start = first.Add(time.Duration(i) * time.Hour)
		if i < len(counts) {
			out[i].HourCount = counts[i]
		}
	}
	return out
}
