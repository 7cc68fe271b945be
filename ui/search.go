package ui

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/search"
	"bothy.dev/bothy/ui/pages"
)

// The search page (/console/search?q=…), which the top bar's search box leads to: the
// messages the person may read that match the query, newest first, each with its channel,
// author, time and the matching text marked, leading to the message in its thread. It calls
// the same use case as GET /api/v1/search, with the person as the actor, so it finds nothing
// the API would not.

// SearchUseCases is what the search page calls; *search.Service implements it.
type SearchUseCases interface {
	Search(ctx context.Context, actor kernel.Actor, r search.Request) (search.Page, error)
}

var _ SearchUseCases = (*search.Service)(nil)

// searchPageSize is how many matches one page of results shows.
const searchPageSize = 20

var errNoSearch = kernel.Errorf(kernel.CodeNotFound, "search is not wired")

// searchRoutes registers the search page.
func (c *chatView) searchRoutes() {
	c.handle("GET /console/search", signedIn, c.searchPage)
}

func (c *chatView) searchPage(rq *request) error {
	if c.d.Search == nil || !c.chatReady() {
		return errNoSearch
	}
	q := rq.r.URL.Query()
	text, cursor := strings.TrimSpace(q.Get("q")), q.Get("cursor")
	ch := c.chrome(rq, "Search", "chat")
	ch.Search = text
	v := pages.SearchView{Chrome: ch, Query: text, Paged: cursor != ""}
	if text != "" {
		v.Title = "Search: " + text
		v.Chrome.Title = v.Title
		v.FirstHref = searchHref(text, "")
		res, err := c.d.Search.Search(rq.ctx(), rq.actor, search.Request{Q: text, Cursor: cursor, Limit: searchPageSize})
		switch {
		case refusal(err, kernel.CodeValidation):
			v.Error = formError(err)
			return c.render(rq, http.StatusBadRequest, pages.Search(v))
		case refusal(err, kernel.CodeCursorInvalid):
			v.Error = "This page of results is out of date: search again."
			return c.render(rq, http.StatusBadRequest, pages.Search(v))
		case err != nil:
			return err
		}
		v.Searched = true
		if v.Results, err = c.searchResults(rq, res.Items); err != nil {
			return err
		}
		if res.NextCursor != nil && *res.NextCursor != "" {
			v.NextHref = searchHref(text, *res.NextCursor)
		}
	}
	return c.render(rq, http.StatusOK, pages.Search(v))
}

// searchHref is the address of a page of the results of text.
func searchHref(text, cursor string) string {
	q := url.Values{"q": {text}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return "/console/search?" + q.Encode()
}

// searchResults are the hits as the page lists them, each channel and thread read once. A
// channel or thread that went away between the search and these reads leaves its hits out
// rather than failing the page.
func (c *chatView) searchResults(rq *request, hits []search.Result) ([]pages.SearchResult, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	authors := make([]kernel.ID, len(hits))
	for i, h := range hits {
		authors[i] = h.Message.AuthorID
	}
	dir, err := c.directory(rq.ctx(), rq.actor, authors)
	if err != nil {
		return nil, err
	}
	channels := map[kernel.ID]*chat.Channel{}
	threads := map[kernel.ID]*chat.Thread{}
	out := make([]pages.SearchResult, 0, len(hits))
	for _, h := range hits {
		ch, ok := channels[h.ChannelID]
		if !ok {
			got, err := c.d.Chat.GetChannel(rq.ctx(), rq.actor, h.ChannelID)
			switch {
			case err == nil:
				got, _, err = c.named(rq, got)
				if err != nil {
					return nil, err
				}
				ch = &got
			case !kernel.IsCode(err, kernel.CodeNotFound) && !kernel.IsCode(err, kernel.CodeForbidden):
				return nil, err
			}
			channels[h.ChannelID] = ch
		}
		th, ok := threads[h.ThreadID]
		if !ok {
			got, err := c.d.Chat.Thread(rq.ctx(), h.ThreadID)
			switch {
			case err == nil:
				th = &got
			case !kernel.IsCode(err, kernel.CodeNotFound):
				return nil, err
			}
			threads[h.ThreadID] = th
		}
		if ch == nil || th == nil {
			continue
		}
		a := dir.get(h.Message.AuthorID)
		at := h.Message.CreatedAt.UTC()
		r := pages.SearchResult{ID: string(h.Message.ID), Href: permalinkPath(h.Message.ID), Channel: threadTitle(chat.Thread{IsMain: true}, *ch),
			ChannelHref: "/console/channels/" + string(ch.ID), AuthorName: a.Name, AuthorHandle: a.Handle, AuthorAgent: a.Agent,
			Time: at.Format(shortTimeLayout), Stamp: at.Format(time.RFC3339), FullTime: at.Format(fullTimeLayout),
			Highlight: safeHighlight(h.Highlight), Files: len(h.Message.Attachments)}
		if !th.IsMain {
			r.Thread = c.threadName(rq, *th, *ch)
			r.ThreadHref = threadHref(*th)
		}
		out = append(out, r)
	}
	return out, nil
}

// safeHighlight is an excerpt the page may write as HTML: whatever the search answered, the
// only markup that survives is <mark> and </mark>, balanced, and everything else is escaped
// text. The search module escapes its excerpts already; this keeps the page safe should one
// ever carry more.
func safeHighlight(s string) string {
	const open, close = "\x00", "\x01"
	s = strings.NewReplacer(open, "", close, "").Replace(s)
	s = strings.NewReplacer("<mark>", open, "</mark>", close).Replace(s)
	s = html.EscapeString(html.UnescapeString(s))
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch string(r) {
		case open:
			if depth == 0 {
				b.WriteString("<mark>")
			}
			depth++
		case close:
			if depth == 1 {
				b.WriteString("</mark>")
			}
			depth = max(0, depth-1)
		default:
			b.WriteRune(r)
		}
	}
	if depth > 0 {
		b.WriteString("</mark>")
	}
	return b.String()
}
