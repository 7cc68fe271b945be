package commit

import (
	"context"
	"database/sql"

	"bothy.dev/bothy/app/kernel"
)

// unit is the state of one Unit of Work while its batch runs.
type unit struct {
	conn   Querier
	events []kernel.Event
	// atCommit is what the unit recorded for the writes its batch makes at commit (AtCommit.Record).
	atCommit    []pendingAtCommit
	atCommitBuf [1]pendingAtCommit // atCommit's first, without an allocation of its own
	// logged are the unit's events as stored, kept for Writer.OnCommit.
	logged []kernel.LoggedEvent
	// afterCommit are the unit's AfterCommit functions, run once the batch has committed.
	afterCommit []func()
	batch       *batchView
	// head is the seq of the last event before the unit's own: the batch's base plus what the
	// units before it in the batch appended. The unit's first event gets head+1.
	head int64
}

// batchView is the kernel.TxView of one unit: the batch's base seq and the event types that
// the batch's earlier units (types) and the unit itself (events) appended.
type batchView struct {
	base  int64
	types map[string]bool
}

type unitView struct {
	b  *batchView
	st *unit
}

func (v unitView) BaseSeq() int64 { return v.b.base }

func (v unitView) Appended(types ...string) bool {
	for _, t := range types {
		if v.b.types[t] {
			return true
		}
		for _, e := range v.st.events {
			if e.Type == t {
				return true
			}
		}
	}
	return false
}

type unitKey struct{}

func unitFrom(ctx context.Context) *unit {
	st, _ := ctx.Value(unitKey{}).(*unit)
	return st
}

// Querier is what the statements of a Unit of Work run on.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// InUnit reports whether ctx carries a Unit of Work.
func InUnit(ctx context.Context) bool { return unitFrom(ctx) != nil }

// Conn returns what the statements of the Unit of Work of ctx run on: the batch's transaction,
// statements prepared once. It returns nil outside a Unit of Work.
func Conn(ctx context.Context) Querier {
	if st := unitFrom(ctx); st != nil {
		return st.conn
	}
	return nil
}

// HeadBefore returns the seq of the last event before the first that the Unit of Work of ctx
// appends: its events get their seqs only at commit, right after it, in order. ok is false
// outside a Unit of Work.
func HeadBefore(ctx context.Context) (head int64, ok bool) {
	st := unitFrom(ctx)
	if st == nil {
		return 0, false
	}
	return st.head, true
}

// Append buffers a durable event in the Unit of Work of ctx, numbered and inserted into the log
// at its batch's commit. It reports false outside a Unit of Work.
func Append(ctx context.Context, e kernel.Event) bool {
	st := unitFrom(ctx)
	if st == nil {
		return false
	}
	st.events = append(st.events, e)
	return true
}

// AfterCommit registers fn to run once the Unit of Work of ctx has committed; never when it
// rolls back or its batch fails (a unit the writer runs again registers again). fn runs on the
// writer's goroutine right after the COMMIT, before the next batch: it must be quick and must
// not block or write. It reports false outside a Unit of Work.
func AfterCommit(ctx context.Context, fn func()) bool {
	st := unitFrom(ctx)
	if st == nil {
		return false
	}
	st.afterCommit = append(st.afterCommit, fn)
	return true
}
