package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/kernel"
)

// InboxUseCases is what the inbox routes call; *inbox.Service implements it.
type InboxUseCases interface {
	MarkRead(ctx context.Context, actor kernel.Actor, threadID, messageID kernel.ID) (inbox.Position, error)
	Unread(ctx context.Context, actor kernel.Actor) (inbox.Unread, error)
	Mentions(ctx context.Context, actor kernel.Actor, p inbox.Page) ([]inbox.Mention, kernel.ID, error)
}

var _ InboxUseCases = (*inbox.Service)(nil)

// InboxRoutes serves what is new for the caller: moving the read position of a thread, the
// unread counts of everything the caller may see, and the messages that mention the caller.
func InboxRoutes(svc InboxUseCases) []Route {
	rt := inboxRoutes{svc: svc}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/threads/{id}/read", Action: inbox.ActReadMark, Handler: withIDBody(rt.markRead)},
		{Method: http.MethodGet, Pattern: "/api/v1/me/unread", Action: inbox.ActUnreadRead, Handler: rt.unread},
		{Method: http.MethodGet, Pattern: "/api/v1/me/mentions", Action: inbox.ActMentionsRead, Handler: rt.mentions},
	}
}

type inboxRoutes struct{ svc InboxUseCases }

type markReadBody struct {
	MessageID string `json:"message_id"`
}

func (b markReadBody) check() error {
	if _, err := kernel.ParseID(b.MessageID); err != nil {
		return kernel.Invalid("message_id", "message_id must be an id")
	}
	return nil
}

func (rt inboxRoutes) markRead(r *Request, threadID kernel.ID, in markReadBody) (int, any, error) {
	id, _ := kernel.ParseID(in.MessageID) // checked by markReadBody.check
	return ok(rt.svc.MarkRead(r.Context(), r.Actor, threadID, id))
}

func (rt inboxRoutes) unread(r *Request) (int, any, error) {
	return ok(rt.svc.Unread(r.Context(), r.Actor))
}

// mentionsPage is a page of the mentions inbox: has_more as every page says it, and next, the
// cursor of the next page (its after), when there is one.
type mentionsPage struct {
	Items   []inbox.Mention `json:"items"`
	HasMore bool            `json:"has_more"`
	Next    *kernel.ID      `json:"next,omitempty"`
}

func (rt inboxRoutes) mentions(r *Request) (int, any, error) {
	var p inbox.Page
	q := r.URL.Query()
	if v := q.Get("after"); v != "" {
		id, err := kernel.ParseID(v)
		if err != nil {
			return 0, nil, &kernel.Error{Code: kernel.CodeCursorInvalid, Field: "after", Message: "after must be an id"}
		}
		p.After = id
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, nil, kernel.Invalid("limit", "limit must be a positive integer")
		}
		p.Limit = n
	}
	items, next, err := rt.svc.Mentions(r.Context(), r.Actor, p)
	if err != nil {
		return 0, nil, err
	}
	out := mentionsPage{Items: nonNil(items), HasMore: !next.IsZero()}
	if out.HasMore {
		out.Next = &next
	}
	return http.StatusOK, out, nil
}
