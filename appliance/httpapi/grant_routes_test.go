package httpapi

import (
	"context"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage"
)

// mustChannelRow lays out a space and a channel of kind through chat's repository.
func (a *idAPI) mustChannelRow(t *testing.T, ownerID kernel.ID, kind string) kernel.ID {
	t.Helper()
	cs := storage.NewChatStore(a.db)
	now := time.Now().UTC()
	sp := chat.Space{ID: kernel.NewID(), Name: "space", CreatedBy: ownerID, CreatedAt: now, UpdatedAt: now}
	ch := chat.Channel{ID: kernel.NewID(), SpaceID: sp.ID, Name: "general", Kind: kind, MainThreadID: kernel.NewID(),
		CreatedBy: ownerID, CreatedAt: now, UpdatedAt: now}
	err := a.db.Do(context.Background(), func(ctx context.Context) error {
		if err := cs.CreateSpace(ctx, sp); err != nil {
			return err
		}
		return cs.CreateChannel(ctx, ch)
	})
	if err != nil {
		t.Fatal(err)
	}
	return ch.ID
}

func TestGrantRoutes(t *testing.T) {
	a := newIDAPI(t, identity.DefaultConfig())
	owner := a.setup(t)
	ownerID := kernel.ID(a.call(t, "GET", "/api/v1/me", owner, "").body["id"].(string))
	aliceID, alice := a.person(t, owner, "alice")
	bobID, bob := a.person(t, owner, "bob")
	ch := string(a.mustChannelRow(t, ownerID, "channel"))
	dm := string(a.mustChannelRow(t, ownerID, "dm"))
	grants := "/api/v1/channels/" + ch + "/grants"

	a.run(t, []scenario{
		{name: "an owner grants post to a person", method: "POST", path: grants, token: owner,
			body: `{"principal_id":"` + aliceID + `","level":"post"}`, status: 201,
			fields: map[string]any{"channel_id": ch, "principal_id": aliceID, "level": "post"}},
		{name: "changing the level answers 200", method: "POST", path: grants, token: owner,
			body: `{"principal_id":"` + aliceID + `","level":"manage"}`, status: 200,
			fields: map[string]any{"level": "manage"}},
		{name: "a manager lists the grants", method: "GET", path: grants, token: alice, status: 200},
		{name: "an unknown level is refused on level", method: "POST", path: grants, token: owner,
			body: `{"principal_id":"` + bobID + `","level":"admin"}`, status: 400, code: "validation_failed",
			fields: map[string]any{"field": "level"}},
		{name: "a malformed principal id is refused on principal_id", method: "POST", path: grants, token: owner,
			body: `{"principal_id":"bob","level":"view"}`, status: 400, code: "validation_failed",
			fields: map[string]any{"field": "principal_id"}},
		{name: "an unknown principal is refused on principal_id", method: "POST", path: grants, token: owner,
			body: `{"principal_id":"` + string(kernel.NewID()) + `","level":"view"}`, status: 400, code: "validation_failed",
			fields: map[string]any{"field": "principal_id"}},
		{name: "a stranger does not see the channel's grants", method: "GET", path: grants, token: bob, status: 404, code: "not_found"},
		{name: "a stranger may not grant itself", method: "POST", path: grants, token: bob,
			body: `{"principal_id":"` + bobID + `","level":"manage"}`, status: 404, code: "not_found"},
		{name: "an unknown channel is not found", method: "GET", path: "/api/v1/channels/" + string(kernel.NewID()) + "/grants", token: owner, status: 404},
		{name: "a malformed channel id is not found", method: "GET", path: "/api/v1/channels/nope/grants", token: owner, status: 404},
		{name: "a manager grants view to another", method: "POST", path: grants, token: alice,
			body: `{"principal_id":"` + bobID + `","level":"view"}`, status: 201},
		{name: "a viewer may not list the grants", method: "GET", path: grants, token: bob, status: 403, code: "forbidden"},
		{name: "a viewer may not revoke", method: "DELETE", path: grants + "/" + aliceID, token: bob, status: 403, code: "forbidden"},
		{name: "a manager revokes a grant", method: "DELETE", path: grants + "/" + bobID, token: alice, status: 204},
		{name: "revoking again finds nothing", method: "DELETE", path: grants + "/" + bobID, token: alice, status: 404},
		{name: "grants need credentials", method: "GET", path: grants, status: 401},
		{name: "an owner does not see the grants of a DM it is not in", method: "GET", path: "/api/v1/channels/" + dm + "/grants", token: owner, status: 404},
	})

	t.Run("the list shows each grant with its time", func(t *testing.T) {
		r := a.call(t, "GET", grants, owner, "")
		items := r.body["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("%s", r.raw)
		}
		g := items[0].(map[string]any)
		if g["principal_id"] != aliceID || g["level"] != "manage" || g["channel_id"] != ch {
			t.Fatalf("%v", g)
		}
		if _, err := time.Parse(time.RFC3339, g["created_at"].(string)); err != nil {
			t.Fatal(err)
		}
	})
}
