package tests

import (
	"net/http"
	"testing"
)

// TestIdempotencyKey covers the Idempotency-Key header of POSTs: a retry answers the stored
// answer without a second effect, another body is refused, and keys belong to one principal.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		_, dave := in.mustCreateUser(t, "dave")
		p := newPlay(in.srv)
		p.clients["owner"] = in.owner
		p.clients["dave"] = dave
		key := func(k string) []reqOption { return []reqOption{header("Idempotency-Key", k)} }
		p.run(t, []scenario{
			{
				name: "the first request with a key has its effect", as: "owner", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "Once"}, opts: key("space-once"), status: http.StatusCreated, save: "first",
				events: []string{"space.created"},
			},
			{
				name: "the same key with the same body answers the same space and appends nothing", as: "owner", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "Once"}, opts: key("space-once"), status: http.StatusCreated,
				fields: map[string]any{"id": "{first.id}", "name": "Once", "created_at": "{first.created_at}"},
				check: func(t *testing.T, p *play, r *response) {
					if r.header.Get("Idempotent-Replayed") != "true" {
						t.Errorf("no Idempotent-Replayed: true on the replay")
					}
				},
			},
			{
				name: "there is still one space", as: "owner", method: "GET", path: api("spaces"), status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var l page[space]
					r.decode(t, &l)
					if len(l.Items) != 1 {
						t.Errorf("spaces %+v, want one", l.Items)
					}
				},
			},
			{
				name: "the same key with another body is refused", as: "owner", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "Twice"}, opts: key("space-once"), status: http.StatusUnprocessableEntity,
				fields: map[string]any{"code": "idempotency_key_reuse"},
			},
			{
				name: "the same key on another route is refused too", as: "owner", method: "POST", path: api("tokens"),
				body: map[string]any{"name": "Once"}, opts: key("space-once"), status: http.StatusUnprocessableEntity,
				fields: map[string]any{"code": "idempotency_key_reuse"},
			},
			{
				name: "the owner makes a token with a key", as: "owner", method: "POST", path: api("tokens"),
				body: map[string]any{"name": "shared key"}, opts: key("token-key"), status: http.StatusCreated, save: "owner_token",
				events: anyEvents,
			},
			{
				name: "another principal's same key gets its own answer", as: "dave", method: "POST", path: api("tokens"),
				body: map[string]any{"name": "shared key"}, opts: key("token-key"), status: http.StatusCreated, save: "dave_token",
				events: anyEvents,
				check: func(t *testing.T, p *play, r *response) {
					if r.obj()["id"] == p.lookup(t, "owner_token.id") || r.obj()["token"] == p.lookup(t, "owner_token.token") {
						t.Errorf("dave got the owner's token: %s", r.raw)
					}
					if r.header.Get("Idempotent-Replayed") != "" {
						t.Errorf("dave's first request is marked as a replay")
					}
				},
			},
			{
				name: "dave's token is dave's", as: "dave", method: "GET", path: api("tokens"), status: http.StatusOK,
				check: func(t *testing.T, p *play, r *response) {
					var l page[apiToken]
					r.decode(t, &l)
					if len(l.Items) != 1 || l.Items[0].ID != p.lookup(t, "dave_token.id") {
						t.Errorf("dave's tokens %+v", l.Items)
					}
				},
			},
			{
				name: "a key with a control character is refused", as: "owner", method: "POST", path: api("spaces"),
				body: map[string]any{"name": "bad key"}, opts: []reqOption{header("Idempotency-Key", "a b"), breaksDocument()},
				status: http.StatusBadRequest, fields: map[string]any{"code": "validation_failed"},
			},
		})
	})
}
