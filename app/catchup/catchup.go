// Package sync brings a client up to date from the event log: catch-up replays the events after a
// cursor that the caller may see, in commit order (see docs/architecture.md, The log as the outbox).
//
// It reads the log only through its Log port and decides visibility only through the kernel's
// Scoper; it never writes and never reads the tables of other modules.
package catchup

import (
	"context"
	"fmt"

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
	// RetainedAfter returns the seq after which every committed event is still in the log:
	// the seq before the oldest kept one, 0 while retention removed nothing. It only grows.
	// Errors: whatever the read returns (internal).
	RetainedAfter(ctx context.Context) (int64, error)
}

// CodeResyncRequired refuses a cursor older than what the log keeps: retention
// (sync.event_retention) removed events after it, so no catch-up can bring the client up to
// date. The client reloads its state and continues from the head (ResyncRequired says which).
var CodeResyncRequired = kernel.NewCode("resync_required", kernel.ClassGone)

// ResyncRequired is the error of CodeResyncRequired, with the seqs a client starts again from.
// kernel.CodeOf finds its code through Unwrap.
type ResyncRequired struct {
	// HeadSeq is the head of the log when the cursor was refused: after reloading its state,
	// the client continues from there.
	HeadSeq int64
	// OldestSeq is the oldest event the log keeps.
	OldestSeq int64
	err       *kernel.Error
}

func (e *ResyncRequired) Error() string { return e.err.Error() }
func (e *ResyncRequired) Unwrap() error { return e.err }

// NewResyncRequired is the refusal of the cursor in field, which is below retainedAfter.
func NewResyncRequired(field string, head, retainedAfter int64) *ResyncRequired {
	return &ResyncRequired{HeadSeq: head, OldestSeq: retainedAfter + 1, err: &kernel.Error{Code: CodeResyncRequired, Field: field,
		Message: fmt.Sprintf("events after the cursor were removed by retention (the oldest kept is %d): reload your state and continue from the head, %d",
			retainedAfter+1, head)}}
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
// beyond the head), resync_required (*ResyncRequired: retention removed events after after),
// validation_failed (limit).
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
	// Checked after the reads: retention removes from the oldest on and the kept log's start
	// only grows, so when it is still at or below after, every event the reads asked for was
	// there; when it passed after, the page may miss some.
	retained, err := s.log.RetainedAfter(ctx)
	if err != nil {
		return Page{}, err
	}
	if after < retained {
		return Page{}, NewResyncRequired("after", max(s.log.Head(), head), retained)
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
