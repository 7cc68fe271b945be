package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/search"
)

// SearchUseCases is what the search route calls; *search.Service implements it.
type SearchUseCases interface {
	Search(ctx context.Context, actor kernel.Actor, r search.Request) (search.Page, error)
}

var _ SearchUseCases = (*search.Service)(nil)

// SearchRoutes serves the search of messages: what the caller may read (message.read), one page
// at a time, newest first or by relevance.
func SearchRoutes(svc SearchUseCases) []Route {
	rt := searchRoutes{svc: svc}
	return []Route{
		{Method: http.MethodGet, Pattern: "/api/v1/search", Action: messaging.ActMessageRead, Handler: rt.search},
	}
}

type searchRoutes struct{ svc SearchUseCases }

func (rt searchRoutes) search(r *Request) (int, any, error) {
	in, err := searchRequest(r.URL.Query().Get, r.URL.Query().Has)
	if err != nil {
		return 0, nil, err
	}
	return ok(rt.svc.Search(r.Context(), r.Actor, in))
}

// searchRequest reads the parameters of a search (q, channel_id, author_id, has, before,
// after, sort, limit, cursor) through get, has telling a parameter given empty from one left
// out. Errors: validation_failed naming the parameter.
func searchRequest(get func(string) string, has func(string) bool) (search.Request, error) {
	in := search.Request{Q: get("q"), Sort: search.Sort(get("sort")), Cursor: get("cursor")}
	for _, p := range []struct {
		name string
		dst  *kernel.ID
	}{{"channel_id", &in.ChannelID}, {"author_id", &in.AuthorID}} {
		if v := get(p.name); v != "" {
			id, err := kernel.ParseID(v)
			if err != nil {
				return in, kernel.Invalid(p.name, "%s must be an id", p.name)
			}
			*p.dst = id
		}
	}
	switch v := get("has"); v {
	case "":
	case "file":
		in.HasFile = true
	default:
		return in, kernel.Invalid("has", "has takes only file")
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"before", &in.Before}, {"after", &in.After}} {
		if v := get(p.name); v != "" {
			t, err := search.ParseTime(p.name, v)
			if err != nil {
				return in, err
			}
			*p.dst = t
		}
	}
	if has("limit") {
		n, err := strconv.Atoi(get("limit"))
		if err != nil || n < 1 || n > search.MaxLimit {
			return in, kernel.Invalid("limit", "limit is an integer from 1 to %d", search.MaxLimit)
		}
		in.Limit = n
	}
	return in, nil
}
