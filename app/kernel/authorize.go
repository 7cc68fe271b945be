package kernel

import (
	"context"
	"sync"
)

// Action is a permission-checked operation. The names are stable: they appear in the
// audit, in route metadata and in tests. Each module declares its own actions; the authz
// module's table gives each its rule.
type Action string

// ResourceKind names what an action is performed on.
type ResourceKind string

const (
	ResInstance  ResourceKind = "instance"
	ResPrincipal ResourceKind = "principal"
	ResSpace     ResourceKind = "space"
	ResChannel   ResourceKind = "channel"
	ResThread    ResourceKind = "thread"
	ResMessage   ResourceKind = "message"
	ResToken     ResourceKind = "token"
)

// ResRun is a run of an agent; its OwnerID is the principal who invoked it.
const ResRun ResourceKind = "run"

// Resource describes the target of an action with the ids of its ancestors, which the use case
// has already loaded; authorize never loads structure itself.
type Resource struct {
	Kind      ResourceKind
	ID        ID
	SpaceID   ID
	ChannelID ID
	// ChannelKind is "dm" for direct messages: owners see them only as participants.
	ChannelKind string
	// OwnerID is the author or owner of the resource (a message's author, a token's holder).
	OwnerID ID
}

// Authorizer is the one decision point for permissions (see docs/architecture.md,
// Authorization).
type Authorizer interface {
	// Authorize decides whether actor may perform action on r. It returns nil, or an *Error
	// with not_found (the caller may not see r), forbidden (it may see r but not do this) or
	// unauthenticated (no principal where one is required). Every call is recorded in the
	// request's check log (RecordCheck).
	Authorize(ctx context.Context, actor Actor, action Action, r Resource) error
}

// CheckLog records the actions checked while serving one request, so the HTTP layer can prove
// that a route which answers 2xx did check its action (the proof of the check: it answers 500 otherwise).
type CheckLog struct {
	mu      sync.Mutex
	actions []Action
}

type checkLogKey struct{}

// WithCheckLog returns ctx carrying a fresh check log.
func WithCheckLog(ctx context.Context) (context.Context, *CheckLog) {
	l := &CheckLog{}
	return context.WithValue(ctx, checkLogKey{}, l), l
}

// RecordCheck notes in ctx's check log that action was decided. Authorizer implementations call
// it for every decision, allowed or not; list scopes call it too.
func RecordCheck(ctx context.Context, action Action) {
	if l, _ := ctx.Value(checkLogKey{}).(*CheckLog); l != nil {
		l.mu.Lock()
		l.actions = append(l.actions, action)
		l.mu.Unlock()
	}
}

// Checked reports whether action was decided during the request.
func (l *CheckLog) Checked(action Action) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.actions {
		if a == action {
			return true
		}
	}
	return false
}

// Visibility answers, for one principal at one moment, which spaces and channels it may read.
// It is computed once for a list or a catch-up page instead of one query per item.
type Visibility interface {
	Space(id ID) bool
	Channel(id ID) bool
	// All reports that the principal may read every non-DM space and channel (an owner).
	All() bool
}

// Scoper computes visibility; the authz module implements it next to Authorizer.
type Scoper interface {
	// Visible returns what actor may read. It records action in the check log, so a list route
	// counts as checked. Errors: unauthenticated for the anonymous actor.
	Visible(ctx context.Context, actor Actor, action Action) (Visibility, error)
}
