// Package sync brings a client up to date from the event log: catch-up replays the events after a
// cursor that the caller may see, in commit order (see docs/architecture.md, The log as the outbox).
//
// It reads the log only through its Log port and decides visibility only through the kernel's
// Scoper; it never writes and never reads the tables of other modules.
package catchup

import (
	"context"

	"bothy.dev/bothy/app/kernel"
)

// Log is the read side of the event log.
type Log interface {
	// EventsAfter reads up to limit committed events with seq > after, in seq order.
	EventsAfter(ctx context.Context, after int64, limit int) ([]kernel.LoggedEvent, error)
	// Head returns the highest committed seq this process knows of (no I/O). With several
	// nodes it may lag the database for as long as a notification takes.
	Head() int64
	// ReadHead returns the highest committed seq as the database has it, for checking a cursor
	// that another node may have handed out. Errors: whatever the read returns (internal).
	ReadHead(ctx context.Context) (int64, error)
}

// Catch-up limits. A call scans at most ScanFactor × limit log rows, so a caller who may see
// little of a busy log still gets a quick answer and moves on with NextAfter.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	ScanFactor   = 10
	minChunk     = 100
)

// Service holds the use cases of sync.
type Service struct {
	log    Log
	scoper kernel.Scoper
}

// Deps is what the catch-up service needs.
type Deps struct {
	Log    Log
	Scoper kernel.Scoper
}

// New returns the catch-up service.
func New(d Deps) *Service {
	if d.Log == nil || d.Scoper == nil {
		panic("catchup: New needs Log and Scoper")
	}
	return &Service{log: d.Log, scoper: d.Scoper}
}

// Page is one answer of CatchUp.
type Page struct {
	// Events are the visible events after the cursor, in seq order.
	Events []kernel.LoggedEvent
	// HeadSeq is the highest committed seq when the page was read.
	HeadSeq int64
	// NextAfter is the cursor for the next call: the last seq scanned, visible or not.
	NextAfter int64
}

// CatchUp returns up to limit events after seq after that actor may see (events.catch_up).
// A channel event needs the channel visible, a space event the space, a personal event is its
// principal's only, and an event without scope (user.created, user.updated) is for every
// person. limit 0 means DefaultLimit. Errors: unauthenticated, cursor_invalid (after below 0 or
// beyond the head), validation_failed (limit).
func (s *Service) CatchUp(ctx context.Context, actor kernel.Actor, after int64, limit int) (Page, error) {
	vis, err := s.scoper.Visible(ctx, actor, ActEventsCatchUp)
	if err != nil {
		return Page{}, err
	}
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 1 || limit > MaxLimit:
		return Page{}, kernel.Invalid("limit", "limit must be between 1 and %d", MaxLimit)
	}
	head, err := s.log.ReadHead(ctx)
	if err != nil {
		return Page{}, err
	}
	if after < 0 || after > head {
		return Page{}, &kernel.Error{Code: kernel.CodeCursorInvalid, Field: "after",
			Message: "after must be a seq between 0 and the head of the log"}
	}
	p := Page{Events: make([]kernel.LoggedEvent, 0, min(limit, 64)), NextAfter: after}
	budget := ScanFactor * limit
scan:
	for budget > 0 {
		chunk := min(max(limit, minChunk), budget)
		evs, err := s.log.EventsAfter(ctx, p.NextAfter, chunk)
		if err != nil {
			return Page{}, err
		}
		budget -= len(evs)
		for _, e := range evs {
			p.NextAfter = e.Seq
			if Visible(vis, actor, e.Scope) {
				p.Events = append(p.Events, e)
				if len(p.Events) == limit {
					break scan
				}
			}
		}
		if len(evs) < chunk {
			break
		}
	}
	p.HeadSeq = max(s.log.Head(), head, p.NextAfter)
	return p, nil
}

// Visible decides whether actor, who sees what vis allows, may receive an event of scope sc.
func Visible(vis kernel.Visibility, actor kernel.Actor, sc kernel.Scope) bool {
	switch {
	case !sc.PrincipalID.IsZero():
		return sc.PrincipalID == actor.ID
	case !sc.ChannelID.IsZero():
		return vis.Channel(sc.ChannelID)
	case !sc.SpaceID.IsZero():
		return vis.Space(sc.SpaceID)
	default:
		return actor.Authenticated() && actor.Kind == kernel.KindPerson
	}
}
