package tests

import (
	"net/http"
	"testing"
)

// TestMessageETagAndIfMatch: reading or editing a message answers its version as an ETag, and
// an edit with If-Match applies only to that version, so that two tabs of one author cannot
// overwrite each other's edit unseen. Without If-Match an edit works as before.
func TestMessageETagAndIfMatch(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Talk")
		ch := in.owner.mustCreateChannel(t, sp.ID, "general")
		m := in.owner.mustPost(t, ch.MainThreadID, "first draft")

		p := newPlay(in.srv)
		p.clients["owner"] = in.owner
		p.vars["m"] = map[string]any{"id": m.ID}
		etag := func(want string) func(*testing.T, *play, *response) {
			return func(t *testing.T, _ *play, r *response) {
				if got := r.header.Get("ETag"); got != want {
					t.Errorf("ETag %q, want %q", got, want)
				}
			}
		}
		p.run(t, []scenario{
			{name: "reading a message answers its version as the ETag", as: "owner", method: "GET", path: api("messages", "{m.id}"),
				status: http.StatusOK, fields: map[string]any{"version": 1}, check: etag(`"1"`)},
			{name: "an edit with the current ETag applies and answers the next one", as: "owner", method: "PATCH", path: api("messages", "{m.id}"),
				body: map[string]any{"content": "second draft"}, opts: []reqOption{header("If-Match", `"1"`)},
				status: http.StatusOK, fields: map[string]any{"version": 2, "content": "second draft"}, events: []string{"message.updated"},
				check: etag(`"2"`)},
			{name: "an edit with the stale ETag answers 412 precondition_failed and changes nothing", as: "owner", method: "PATCH",
				path: api("messages", "{m.id}"), body: map[string]any{"content": "from the other tab"}, opts: []reqOption{header("If-Match", `"1"`)},
				status: http.StatusPreconditionFailed, fields: map[string]any{"code": "precondition_failed"}},
			{name: "the message is still the second draft", as: "owner", method: "GET", path: api("messages", "{m.id}"),
				status: http.StatusOK, fields: map[string]any{"version": 2, "content": "second draft"}, check: etag(`"2"`)},
			{name: "it keeps one revision, of the first draft", as: "owner", method: "GET", path: api("messages", "{m.id}", "revisions"),
				status: http.StatusOK, check: func(t *testing.T, _ *play, r *response) {
					items, _ := r.obj()["items"].([]any)
					if len(items) != 1 || items[0].(map[string]any)["content"] != "first draft" {
						t.Errorf("revisions %v", items)
					}
				}},
			{name: "an edit without If-Match applies to the current version", as: "owner", method: "PATCH", path: api("messages", "{m.id}"),
				body: map[string]any{"content": "third draft"}, status: http.StatusOK, fields: map[string]any{"version": 3},
				events: []string{"message.updated"}, check: etag(`"3"`)},
		})
	})
}
