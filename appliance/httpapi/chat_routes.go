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

// ChatRoutes serves spaces, channels, the operator of a channel and the thread list of a channel.
func ChatRoutes(c ChatUseCases) []Route {
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/spaces", Action: kernel.ActSpaceCreate, Handler: func(r *Request) (int, any, error) {
			var in struct {
				Name string `json:"name"`
			}
			if err := r.Decode(&in); err != nil {
				return 0, nil, err
			}
			sp, err := c.CreateSpace(r.Context(), r.Actor, in.Name)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusCreated, sp, nil
		}},
		{Method: http.MethodGet, Pattern: "/api/v1/spaces", Action: kernel.ActSpaceRead, Handler: func(r *Request) (int, any, error) {
			items, err := c.ListSpaces(r.Context(), r.Actor)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, itemsList[chat.Space]{Items: nonNil(items)}, nil
		}},
		{Method: http.MethodGet, Pattern: "/api/v1/spaces/{id}", Action: kernel.ActSpaceRead, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			sp, err := c.GetSpace(r.Context(), r.Actor, id)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, sp, nil
		}},
		{Method: http.MethodPatch, Pattern: "/api/v1/spaces/{id}", Action: kernel.ActSpaceUpdate, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			var in struct {
				Name *string `json:"name"`
			}
			if err := r.Decode(&in); err != nil {
				return 0, nil, err
			}
			sp, err := c.UpdateSpace(r.Context(), r.Actor, id, chat.SpacePatch{Name: in.Name})
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, sp, nil
		}},
		{Method: http.MethodPost, Pattern: "/api/v1/spaces/{id}/channels", Action: kernel.ActChannelCreate, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			var in struct {
				Name  string `json:"name"`
				Topic string `json:"topic"`
			}
			if err := r.Decode(&in); err != nil {
				return 0, nil, err
			}
			ch, err := c.CreateChannel(r.Context(), r.Actor, id, chat.NewChannel{Name: in.Name, Topic: in.Topic})
			if err != nil {
				return 0, nil, err
			}
			return http.StatusCreated, ch, nil
		}},
		{Method: http.MethodGet, Pattern: "/api/v1/spaces/{id}/channels", Action: kernel.ActChannelRead, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			items, err := c.ListChannels(r.Context(), r.Actor, id)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, itemsList[chat.Channel]{Items: nonNil(items)}, nil
		}},
		{Method: http.MethodGet, Pattern: "/api/v1/channels/{id}", Action: kernel.ActChannelRead, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			ch, err := c.GetChannel(r.Context(), r.Actor, id)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, ch, nil
		}},
		{Method: http.MethodPatch, Pattern: "/api/v1/channels/{id}", Action: kernel.ActChannelUpdate, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			var in struct {
				Name  *string `json:"name"`
				Topic *string `json:"topic"`
			}
			if err := r.Decode(&in); err != nil {
				return 0, nil, err
			}
			ch, err := c.UpdateChannel(r.Context(), r.Actor, id, chat.ChannelPatch{Name: in.Name, Topic: in.Topic})
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, ch, nil
		}},
		{Method: http.MethodPut, Pattern: "/api/v1/channels/{id}/operator", Action: kernel.ActChannelOperatorSet, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			var in struct {
				AgentID *string `json:"agent_id"`
			}
			if err := r.Decode(&in); err != nil {
				return 0, nil, err
			}
			if in.AgentID == nil {
				return 0, nil, kernel.Invalid("agent_id", "agent_id is required (DELETE the operator to remove it)")
			}
			agentID, err := kernel.ParseID(*in.AgentID)
			if err != nil {
				return 0, nil, kernel.Invalid("agent_id", "agent_id must be an id")
			}
			ch, err := c.SetOperator(r.Context(), r.Actor, id, agentID)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, ch, nil
		}},
		{Method: http.MethodDelete, Pattern: "/api/v1/channels/{id}/operator", Action: kernel.ActChannelOperatorSet, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			if _, err := c.ClearOperator(r.Context(), r.Actor, id); err != nil {
				return 0, nil, err
			}
			return http.StatusNoContent, nil, nil
		}},
		{Method: http.MethodPost, Pattern: "/api/v1/spaces/{id}/archive", Action: kernel.ActSpaceUpdate, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			sp, err := c.ArchiveSpace(r.Context(), r.Actor, id)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, sp, nil
		}},
		{Method: http.MethodPost, Pattern: "/api/v1/channels/{id}/archive", Action: kernel.ActChannelUpdate, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			ch, err := c.ArchiveChannel(r.Context(), r.Actor, id)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, ch, nil
		}},
		{Method: http.MethodGet, Pattern: "/api/v1/channels/{id}/threads", Action: kernel.ActThreadRead, Handler: func(r *Request) (int, any, error) {
			id, err := r.PathID("id")
			if err != nil {
				return 0, nil, err
			}
			p, err := keysetPage(r)
			if err != nil {
				return 0, nil, err
			}
			items, more, err := c.ListThreads(r.Context(), r.Actor, id, p)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, itemsPage[chat.Thread]{Items: nonNil(items), HasMore: more}, nil
		}},
	}
}
