package search

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// Sort is the order of results.
type Sort string

const (
	// SortNewest is newest first, the default.
	SortNewest Sort = "newest"
	// SortRelevance is best match first (the engine's ranking), then newest.
	SortRelevance Sort = "relevance"
)

// Page limits.
const (
	DefaultLimit = 20
	MaxLimit     = 100
	// maxOffset bounds how deep relevance pages go: each is ranked from the start again.
	maxOffset = 1000
)

// IndexQuery is what the index is asked: the terms, and the filters already resolved to ids.
type IndexQuery struct {
	Terms []Term
	// Channels are the channels searched. With AllChannels every channel is, except those in
	// Channels: an owner's query names the few DMs they are not in rather than every channel.
	Channels    []kernel.ID
	AllChannels bool
	AuthorID    kernel.ID // zero: any author
	HasFile     bool
	// Before and After bound created_at, both exclusive (zero: none).
	Before, After time.Time
	Sort          Sort
	// Key continues a newest-first page after the hit with that Key; Offset a relevance page.
	Key    string
	Offset int
	// Limit is how many hits to answer at most.
	Limit int
}

// Hit is one message the index found.
type Hit struct {
	MessageID, ChannelID, ThreadID kernel.ID
	// Title is the thread's title when the message is the first of its thread (it is indexed
	// with it), else empty.
	Title string
	// Key is the hit's place in a newest-first order, opaque to this package.
	Key string
}

// Index is the search index storage keeps.
type Index interface {
	// Search answers the hits of q in its order, at most q.Limit.
	Search(ctx context.Context, q IndexQuery) ([]Hit, error)
	// ChannelNames lists every channel's id by name; a name may be in several spaces.
	ChannelNames(ctx context.Context) (map[string][]kernel.ID, error)
	// ChannelIDs lists the id of every channel, DMs included.
	ChannelIDs(ctx context.Context) ([]kernel.ID, error)
}

// Messages loads a message as GET /api/v1/messages/{id} answers it (messaging.Store does).
type Messages interface {
	Message(ctx context.Context, id kernel.ID) (messaging.Message, error)
}

// Deps are the ports of the use case; none may be nil.
type Deps struct {
	Index     Index
	Messages  Messages
	Directory messaging.Directory
	Scoper    kernel.Scoper
}

// Service answers searches.
type Service struct{ d Deps }

// New returns the search use case.
func New(d Deps) *Service { return &Service{d: d} }

// Request is one search: q in the query language and the filters of the parameters, which
// hold together with those of q.
type Request struct {
	Q         string
	ChannelID kernel.ID
	AuthorID  kernel.ID
	HasFile   bool
	// Before and After bound the creation time, both exclusive (zero: none).
	Before, After time.Time
	Sort          Sort
	Limit         int
	Cursor        string
}

// Result is one message found, with where it is and an excerpt of the matching text.
type Result struct {
	Message   messaging.Message `json:"message"`
	ChannelID kernel.ID         `json:"channel_id"`
	ThreadID  kernel.ID         `json:"thread_id"`
	// Highlight is an excerpt of at most about 200 characters, HTML-escaped, each matched word
	// in <mark>…</mark>.
	Highlight string `json:"highlight"`
}

// Page is one page of results; NextCursor continues it, nil at the end.
type Page struct {
	Items      []Result `json:"items"`
	NextCursor *string  `json:"next_cursor"`
}

// Search answers one page of the messages that match r in the channels actor may read
// (message.read through the Scoper: a DM only for its participants, an owner's rights not
// reaching others' DMs). A channel filter the caller may not read finds nothing, as an
// unknown author or channel name does. Errors: validation_failed, cursor_invalid,
// unauthenticated.
func (s *Service) Search(ctx context.Context, actor kernel.Actor, r Request) (Page, error) {
	empty := Page{Items: []Result{}}
	switch {
	case r.Limit == 0:
		r.Limit = DefaultLimit
	case r.Limit < 0 || r.Limit > MaxLimit:
		return empty, kernel.Invalid("limit", "limit is between 1 and %d", MaxLimit)
	}
	q, err := ParseQuery(r.Q)
	if err != nil {
		return empty, err
	}
	iq, err := indexQuery(q, r)
	if err != nil {
		return empty, err
	}
	if !q.positive() && len(q.FromHandles) == 0 && len(q.ChannelNames) == 0 && !q.HasFile && r.ChannelID.IsZero() &&
		r.AuthorID.IsZero() && !r.HasFile {
		return empty, kernel.Invalid("q", "q holds no word to search for and no filter")
	}
	vis, err := s.d.Scoper.Visible(ctx, actor, messaging.ActMessageRead)
	if err != nil {
		return empty, err
	}
	ok, err := s.resolve(ctx, q, r, vis, &iq)
	if err != nil || !ok {
		return empty, err
	}
	hits, err := s.d.Index.Search(ctx, iq)
	if err != nil {
		return empty, err
	}
	more := len(hits) > r.Limit
	if more {
		hits = hits[:r.Limit]
	}
	page := Page{Items: make([]Result, 0, len(hits))}
	for _, h := range hits {
		if !vis.Channel(h.ChannelID) {
			continue // the index's filter already left it out; this holds if it ever did not
		}
		m, err := s.d.Messages.Message(ctx, h.MessageID)
		if kernel.IsCode(err, kernel.CodeNotFound) {
			continue
		}
		if err != nil {
			return empty, err
		}
		if m.Deleted {
			continue
		}
		page.Items = append(page.Items, Result{Message: m, ChannelID: h.ChannelID, ThreadID: h.ThreadID,
			Highlight: Highlight(q.Terms, m.Content, h.Title, attachmentNames(m))})
	}
	if more && len(hits) > 0 {
		var c string
		if iq.Sort == SortRelevance {
			c = encodeCursor("r", strconv.Itoa(iq.Offset+len(hits)))
		} else {
			c = encodeCursor("n", hits[len(hits)-1].Key)
		}
		page.NextCursor = &c
	}
	return page, nil
}

// indexQuery checks r's own parameters and fills what needs no lookup.
func indexQuery(q Query, r Request) (IndexQuery, error) {
	iq := IndexQuery{Terms: q.Terms, HasFile: q.HasFile || r.HasFile, Sort: r.Sort, Limit: r.Limit + 1,
		Before: earlier(q.Before, r.Before), After: later(q.After, r.After)}
	switch iq.Sort {
	case "":
		iq.Sort = SortNewest
	case SortNewest, SortRelevance:
	default:
		return iq, kernel.Invalid("sort", "sort is newest or relevance")
	}
	if !iq.Before.IsZero() && !iq.After.IsZero() && !iq.After.Before(iq.Before) {
		return iq, kernel.Invalid("before", "before must be later than after")
	}
	if r.Cursor != "" {
		kind, val, ok := decodeCursor(r.Cursor)
		switch {
		case !ok:
			return iq, kernel.Errorf(kernel.CodeCursorInvalid, "the cursor is not one this search handed out")
		case kind == "n" && iq.Sort == SortNewest && val != "":
			iq.Key = val
		case kind == "r" && iq.Sort == SortRelevance:
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 || n > maxOffset {
				return iq, kernel.Errorf(kernel.CodeCursorInvalid, "the cursor is not one this search handed out")
			}
			iq.Offset = n
		default:
			return iq, kernel.Errorf(kernel.CodeCursorInvalid, "the cursor is for another sort")
		}
	}
	return iq, nil
}

// resolve turns the filters by name into ids and fills the channels searched; ok is false
// when nothing can match (an unknown author, a channel the caller may not read).
func (s *Service) resolve(ctx context.Context, q Query, r Request, vis kernel.Visibility, iq *IndexQuery) (bool, error) {
	authors := slices.Clone(q.FromHandles)
	if len(authors) > 0 {
		keys := slices.Compact(slices.Sorted(slices.Values(authors)))
		if len(keys) > 1 {
			return false, nil
		}
		ids, err := s.d.Directory.ResolveHandles(ctx, keys)
		if err != nil {
			return false, err
		}
		id, ok := ids[keys[0]]
		if !ok || (!r.AuthorID.IsZero() && r.AuthorID != id) {
			return false, nil
		}
		iq.AuthorID = id
	} else {
		iq.AuthorID = r.AuthorID
	}
	// The channels searched: those named (by id, by name, or both: they must agree), or every
	// channel the caller may read.
	var named []kernel.ID
	if len(q.ChannelNames) > 0 {
		byName, err := s.d.Index.ChannelNames(ctx)
		if err != nil {
			return false, err
		}
		for i, n := range q.ChannelNames {
			ids := byName[strings.ToLower(n)]
			if i == 0 {
				named = slices.Clone(ids)
			} else {
				named = slices.DeleteFunc(named, func(id kernel.ID) bool { return !slices.Contains(ids, id) })
			}
		}
		if len(named) == 0 {
			return false, nil
		}
	}
	if !r.ChannelID.IsZero() {
		if named != nil && !slices.Contains(named, r.ChannelID) {
			return false, nil
		}
		named = []kernel.ID{r.ChannelID}
	}
	if named != nil {
		iq.Channels = slices.DeleteFunc(named, func(id kernel.ID) bool { return !vis.Channel(id) })
		return len(iq.Channels) > 0, nil
	}
	all, err := s.d.Index.ChannelIDs(ctx)
	if err != nil {
		return false, err
	}
	var in, out []kernel.ID
	for _, id := range all {
		if vis.Channel(id) {
			in = append(in, id)
		} else {
			out = append(out, id)
		}
	}
	// The shorter list goes to the index: most people read few channels, an owner nearly all.
	if len(out) < len(in) {
		iq.AllChannels, iq.Channels = true, out
		return true, nil
	}
	iq.Channels = in
	return len(in) > 0, nil
}

func attachmentNames(m messaging.Message) []string {
	out := make([]string, 0, len(m.Attachments))
	for _, a := range m.Attachments {
		out = append(out, a.Name)
	}
	return out
}

// encodeCursor and decodeCursor make the opaque cursor: a kind (n: newest, r: relevance) and
// a value, in unpadded base64url.
func encodeCursor(kind, val string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + val))
}

func decodeCursor(c string) (kind, val string, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(c) > 200 {
		return "", "", false
	}
	kind, val, ok = strings.Cut(string(b), ":")
	return kind, val, ok
}
