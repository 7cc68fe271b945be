package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// ChatUseCases is what the chat routes call; *chat.Service implements it.
type ChatUseCases interface {
	CreateSpace(ctx context.Context, actor kernel.Actor, name string) (chat.Space, error)
	ListSpaces(ctx context.Context, actor kernel.Actor) ([]chat.Space, error)
	GetSpace(ctx context.Context, actor kernel.Actor, id kernel.ID) (chat.Space, error)
	UpdateSpace(ctx context.Context, actor kernel.Actor, id kernel.ID, p chat.SpacePatch) (chat.Space, error)
	CreateChannel(ctx context.Context, actor kernel.Actor, spaceID kernel.ID, in chat.NewChannel) (chat.Channel, error)
	ListChannels(ctx context.Context, actor kernel.Actor, spaceID kernel.ID) ([]chat.Channel, error)
	GetChannel(ctx context.Context, actor kernel.Actor, id kernel.ID) (chat.Channel, error)
	UpdateChannel(ctx context.Context, actor kernel.Actor, id kernel.ID, p chat.ChannelPatch) (chat.Channel, error)
	ListThreads(ctx context.Context, actor kernel.Actor, channelID kernel.ID, p chat.Page) ([]chat.Thread, bool, error)
	GetThread(ctx context.Context, actor kernel.Actor, id kernel.ID) (chat.Thread, error)
	UpdateThread(ctx context.Context, actor kernel.Actor, id kernel.ID, p chat.ThreadPatch) (chat.Thread, error)
	SetOperator(ctx context.Context, actor kernel.Actor, channelID, agentID kernel.ID) (chat.Channel, error)
	ClearOperator(ctx context.Context, actor kernel.Actor, channelID kernel.ID) (chat.Channel, error)
	ArchiveChannel(ctx context.Context, actor kernel.Actor, id kernel.ID) (chat.Channel, error)
	ArchiveSpace(ctx context.Context, actor kernel.Actor, id kernel.ID) (chat.Space, error)
}

var _ ChatUseCases = (*chat.Service)(nil)

// itemsPage is the answer of a keyset-paginated list.
type itemsPage[T any] struct {
	Items   []T  `json:"items"`
	HasMore bool `json:"has_more"`
}

// itemsList is the answer of an unpaginated list.
type itemsList[T any] struct {
	Items []T `json:"items"`
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// keysetPage reads ?before=&after=&limit= of a list keyed by id. A malformed cursor is
// cursor_invalid, a malformed limit validation_failed; the use case checks the rest.
func keysetPage(r *Request) (chat.Page, error) {
	var p chat.Page
	q := r.URL.Query()
	for _, c := range []struct {
		name string
		dst  *kernel.ID
	}{{"before", &p.Before}, {"after", &p.After}} {
		if v := q.Get(c.name); v != "" {
			id, err := kernel.ParseID(v)
			if err != nil {
				return p, &kernel.Error{Code: kernel.CodeCursorInvalid, Field: c.name, Message: c.name + " must be an id"}
			}
			*c.dst = id
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, kernel.Invalid("limit", "limit must be a positive integer")
		}
		p.Limit = n
	}
	return p, nil
}

// ChatRoutes serves spaces, channels, the operator of a channel, the thread list of a channel
// and one thread (read, title).
func ChatRoutes(c ChatUseCases) []Route {
	rt := chatRoutes{c: c}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/spaces", Action: chat.ActSpaceCreate, Handler: withBody(rt.createSpace)},
		{Method: http.MethodGet, Pattern: "/api/v1/spaces", Action: chat.ActSpaceRead, Handler: rt.listSpaces},
		{Method: http.MethodGet, Pattern: "/api/v1/spaces/{id}", Action: chat.ActSpaceRead, Handler: withID(rt.getSpace)},
		{Method: http.MethodPatch, Pattern: "/api/v1/spaces/{id}", Action: chat.ActSpaceUpdate, Handler: withIDBody(rt.updateSpace)},
		{Method: http.MethodPost, Pattern: "/api/v1/spaces/{id}/channels", Action: chat.ActChannelCreate, Handler: withIDBody(rt.createChannel)},
		{Method: http.MethodGet, Pattern: "/api/v1/spaces/{id}/channels", Action: chat.ActChannelRead, Handler: withID(rt.listChannels)},
		{Method: http.MethodGet, Pattern: "/api/v1/channels/{id}", Action: chat.ActChannelRead, Handler: withID(rt.getChannel)},
		{Method: http.MethodPatch, Pattern: "/api/v1/channels/{id}", Action: chat.ActChannelUpdate, Handler: withIDBody(rt.updateChannel)},
		{Method: http.MethodPut, Pattern: "/api/v1/channels/{id}/operator", Action: chat.ActChannelOperatorSet, Handler: withIDBody(rt.setOperator)},
		{Method: http.MethodDelete, Pattern: "/api/v1/channels/{id}/operator", Action: chat.ActChannelOperatorSet, Handler: withID(rt.clearOperator)},
		{Method: http.MethodPost, Pattern: "/api/v1/spaces/{id}/archive", Action: chat.ActSpaceUpdate, Handler: withID(rt.archiveSpace)},
		{Method: http.MethodPost, Pattern: "/api/v1/channels/{id}/archive", Action: chat.ActChannelUpdate, Handler: withID(rt.archiveChannel)},
		{Method: http.MethodGet, Pattern: "/api/v1/channels/{id}/threads", Action: chat.ActThreadRead, Handler: withID(rt.listThreads)},
		{Method: http.MethodGet, Pattern: "/api/v1/threads/{id}", Action: chat.ActThreadRead, Handler: withID(rt.getThread)},
		{Method: http.MethodPatch, Pattern: "/api/v1/threads/{id}", Action: chat.ActThreadUpdate, Handler: withIDBody(rt.updateThread)},
	}
}

// chatRoutes holds the handlers of ChatRoutes.
type chatRoutes struct{ c ChatUseCases }

type spaceBody struct {
	Name string `json:"name"`
}

type spacePatchBody struct {
	Name *string `json:"name"`
}

type channelBody struct {
	Name  string `json:"name"`
	Topic string `json:"topic"`
}

type channelPatchBody struct {
	Name  *string `json:"name"`
	Topic *string `json:"topic"`
}

type threadPatchBody struct {
	Title *string `json:"title"`
}

type operatorBody struct {
	AgentID *string `json:"agent_id"`
}

func (rt chatRoutes) createSpace(r *Request, in spaceBody) (int, any, error) {
	return created(rt.c.CreateSpace(r.Context(), r.Actor, in.Name))
}

func (rt chatRoutes) listSpaces(r *Request) (int, any, error) {
	return list(rt.c.ListSpaces(r.Context(), r.Actor))
}

func (rt chatRoutes) getSpace(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.c.GetSpace(r.Context(), r.Actor, id))
}

func (rt chatRoutes) updateSpace(r *Request, id kernel.ID, in spacePatchBody) (int, any, error) {
	return ok(rt.c.UpdateSpace(r.Context(), r.Actor, id, chat.SpacePatch{Name: in.Name}))
}

func (rt chatRoutes) createChannel(r *Request, spaceID kernel.ID, in channelBody) (int, any, error) {
	return created(rt.c.CreateChannel(r.Context(), r.Actor, spaceID, chat.NewChannel{Name: in.Name, Topic: in.Topic}))
}

func (rt chatRoutes) listChannels(r *Request, spaceID kernel.ID) (int, any, error) {
	return list(rt.c.ListChannels(r.Context(), r.Actor, spaceID))
}

func (rt chatRoutes) getChannel(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.c.GetChannel(r.Context(), r.Actor, id))
}

func (rt chatRoutes) updateChannel(r *Request, id kernel.ID, in channelPatchBody) (int, any, error) {
	return ok(rt.c.UpdateChannel(r.Context(), r.Actor, id, chat.ChannelPatch{Name: in.Name, Topic: in.Topic}))
}

func (rt chatRoutes) setOperator(r *Request, id kernel.ID, in operatorBody) (int, any, error) {
	if in.AgentID == nil {
		return 0, nil, kernel.Invalid("agent_id", "agent_id is required (DELETE the operator to remove it)")
	}
	agentID, err := kernel.ParseID(*in.AgentID)
	if err != nil {
		return 0, nil, kernel.Invalid("agent_id", "agent_id must be an id")
	}
	return ok(rt.c.SetOperator(r.Context(), r.Actor, id, agentID))
}

func (rt chatRoutes) clearOperator(r *Request, id kernel.ID) (int, any, error) {
	_, err := rt.c.ClearOperator(r.Context(), r.Actor, id)
	return noContent(err)
}

func (rt chatRoutes) archiveSpace(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.c.ArchiveSpace(r.Context(), r.Actor, id))
}

func (rt chatRoutes) archiveChannel(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.c.ArchiveChannel(r.Context(), r.Actor, id))
}

func (rt chatRoutes) listThreads(r *Request, channelID kernel.ID) (int, any, error) {
	p, err := keysetPage(r)
	if err != nil {
		return 0, nil, err
	}
	return page(rt.c.ListThreads(r.Context(), r.Actor, channelID, p))
}

func (rt chatRoutes) getThread(r *Request, id kernel.ID) (int, any, error) {
	return ok(rt.c.GetThread(r.Context(), r.Actor, id))
}

func (rt chatRoutes) updateThread(r *Request, id kernel.ID, in threadPatchBody) (int, any, error) {
	return ok(rt.c.UpdateThread(r.Context(), r.Actor, id, chat.ThreadPatch{Title: in.Title}))
}
