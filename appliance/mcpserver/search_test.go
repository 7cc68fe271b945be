package mcpserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/search"
)

// Search answers one result for "deploy" and records the request.
func (f *fakes) Search(_ context.Context, _ kernel.Actor, r search.Request) (search.Page, error) {
	f.searched = append(f.searched, r)
	if r.Q == "" {
		return search.Page{}, kernel.Invalid("q", "q holds no word to search for and no filter")
	}
	m := messaging.Message{ID: "01900000-0000-7000-8000-0000000000d1", Content: "we deploy"}
	return search.Page{Items: []search.Result{{Message: m, ChannelID: "01900000-0000-7000-8000-0000000000c1", Highlight: "we <mark>deploy</mark>"}}}, nil
}

func TestSearchMessages(t *testing.T) {
	f := &fakes{}
	s, err := connect(t, serve(t, f, time.Second).URL, withToken{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	text, isErr := call(t, s, "search_messages", map[string]any{"query": "deploy in:#general", "channel_id": "01900000-0000-7000-8000-0000000000c1",
		"sort": "relevance", "limit": 5, "cursor": "abc"})
	if isErr || !strings.Contains(text, `"highlight":"we \u003cmark\u003edeploy\u003c/mark\u003e"`) {
		t.Fatalf("answer %s", text)
	}
	want := search.Request{Q: "deploy in:#general", ChannelID: "01900000-0000-7000-8000-0000000000c1", Sort: search.SortRelevance, Limit: 5, Cursor: "abc"}
	if len(f.searched) != 1 || f.searched[0] != want {
		t.Fatalf("the use case got %+v", f.searched)
	}
	if text, isErr := call(t, s, "search_messages", map[string]any{"query": ""}); !isErr || !strings.HasPrefix(text, "validation_failed: ") {
		t.Fatalf("empty query: %s", text)
	}
	if text, isErr := call(t, s, "search_messages", map[string]any{"query": "x", "channel_id": "nope"}); !isErr || !strings.Contains(text, "(field channel_id)") {
		t.Fatalf("bad channel: %s", text)
	}
}
