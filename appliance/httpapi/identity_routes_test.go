package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/kerneltest"
	"bothy.dev/bothy/appliance/passwords"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/storetest"
)

// idAPI is a router with the identity and grant routes on a real store.
type idAPI struct {
	h    http.Handler
	db   *storage.DB
	id   *identity.Service
	az   *authz.Service
	code string // the setup code
}

func newIDAPI(t *testing.T, cfg identity.Config) *idAPI {
	t.Helper()
	db := storetest.Open(t, storage.Options{})
	azStore := storage.NewAuthzStore(db)
	az := authz.New(authz.Deps{Store: azStore, Structure: azStore, UoW: db, Events: db})
	cheap := passwords.New(passwords.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}, 0)
	id := identity.New(identity.Deps{Store: storage.NewIdentityStore(db), UoW: db, Events: db, Authz: az, Hasher: cheap}, cfg)
	rt := NewRouter(id, nil, Options{})
	rt.Handle(IdentityRoutes(id)...)
	rt.Handle(GrantRoutes(az)...)
	code, ok, err := id.IssueSetupCode(context.Background())
	if err != nil || !ok {
		t.Fatalf("setup code: %v %v", ok, err)
	}
	return &idAPI{h: rt, db: db, id: id, az: az, code: code}
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (a *idAPI) call(t *testing.T, method, path, token, body string) answer {
	t.Helper()
	var req *http.Request
	if body != "" {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	} else {
		req = httptest.NewRequest(method, path, nil)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.RemoteAddr = "192.0.2.7:5555"
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	out := answer{status: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &out.body); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, rec.Body.String(), err)
		}
	}
	return out
}

// setup creates the owner olga and returns its session token.
func (a *idAPI) setup(t *testing.T) string {
	t.Helper()
	if r := a.call(t, "POST", "/api/v1/setup", "", `{"code":"`+a.code+`","handle":"olga","display_name":"Olga","password":"owner-password"}`); r.status != 201 {
		t.Fatalf("setup: %d %s", r.status, r.raw)
	}
	return a.login(t, "olga", "owner-password")
}

func (a *idAPI) login(t *testing.T, handle, pw string) string {
	t.Helper()
	r := a.call(t, "POST", "/api/v1/auth/login", "", `{"handle":"`+handle+`","password":"`+pw+`"}`)
	if r.status != 200 {
		t.Fatalf("login %s: %d %s", handle, r.status, r.raw)
	}
	return r.body["token"].(string)
}

// person creates a person as the owner and returns its id and session token.
func (a *idAPI) person(t *testing.T, ownerToken, handle string) (string, string) {
	t.Helper()
	r := a.call(t, "POST", "/api/v1/users", ownerToken, `{"handle":"`+handle+`","display_name":"`+handle+`","password":"`+handle+`-password"}`)
	if r.status != 201 {
		t.Fatalf("create %s: %d %s", handle, r.status, r.raw)
	}
	return r.body["id"].(string), a.login(t, handle, handle+"-password")
}

// scenario is one request and what must come back.
type scenario struct {
	name   string
	method string
	path   string
	token  string
	body   string
	status int
	code   string         // the problem code, for errors
	fields map[string]any // expected top-level fields of a JSON answer
	absent []string       // fields that must not be there
}

func (a *idAPI) run(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			r := a.call(t, s.method, s.path, s.token, s.body)
			if r.status != s.status {
				t.Fatalf("status %d, want %d: %s", r.status, s.status, r.raw)
			}
			if s.code != "" && r.body["code"] != s.code {
				t.Fatalf("code %v, want %s: %s", r.body["code"], s.code, r.raw)
			}
			for k, v := range s.fields {
				if r.body[k] != v {
					t.Errorf("%s = %#v, want %#v (%s)", k, r.body[k], v, r.raw)
				}
			}
			for _, k := range s.absent {
				if _, ok := r.body[k]; ok {
					t.Errorf("%s must not be in %s", k, r.raw)
				}
			}
		})
	}
}

func TestSetupAndLoginRoutes(t *testing.T) {
	a := newIDAPI(t, kerneltest.With(identity.DefaultConfig(), func(c *identity.Config) { c.LoginFailuresPerHandle, c.LoginFailuresPerIP = 3, 100 }))
	a.run(t, []scenario{
		{name: "setup with a wrong code is forbidden", method: "POST", path: "/api/v1/setup",
			body: `{"code":"nope","handle":"olga","display_name":"Olga","password":"owner-password"}`, status: 403, code: "forbidden"},
		{name: "setup refuses an unknown field", method: "POST", path: "/api/v1/setup",
			body: `{"code":"` + a.code + `","handle":"olga","display_name":"Olga","password":"owner-password","admin":true}`, status: 400, code: "validation_failed"},
		{name: "setup refuses a bad handle naming the field", method: "POST", path: "/api/v1/setup",
			body: `{"code":"` + a.code + `","handle":"o l g a","display_name":"Olga","password":"owner-password"}`, status: 400, code: "validation_failed",
			fields: map[string]any{"field": "handle"}},
		{name: "setup with the code creates the first owner", method: "POST", path: "/api/v1/setup",
			body: `{"code":"` + a.code + `","handle":"olga","display_name":"Olga","password":"owner-password"}`, status: 201,
			fields: map[string]any{"handle": "olga", "display_name": "Olga", "kind": "person", "status": "active", "is_owner": true},
			absent: []string{"password", "password_hash"}},
		{name: "a second setup finds the setup complete", method: "POST", path: "/api/v1/setup",
			body: `{"code":"` + a.code + `","handle":"eve","display_name":"Eve","password":"owner-password"}`, status: 409, code: "setup_complete"},
		{name: "a wrong password is unauthenticated", method: "POST", path: "/api/v1/auth/login",
			body: `{"handle":"olga","password":"wrong-password"}`, status: 401, code: "unauthenticated"},
		{name: "an unknown handle answers the same", method: "POST", path: "/api/v1/auth/login",
			body: `{"handle":"nobody","password":"wrong-password"}`, status: 401, code: "unauthenticated"},
		{name: "login refuses a body that is no object", method: "POST", path: "/api/v1/auth/login", body: `[]`, status: 400},
		{name: "the right password opens a session", method: "POST", path: "/api/v1/auth/login",
			body: `{"handle":"Olga","password":"owner-password"}`, status: 200},
		{name: "me needs credentials", method: "GET", path: "/api/v1/me", status: 401, code: "unauthenticated"},
		{name: "a made-up token is unauthenticated", method: "GET", path: "/api/v1/me", token: "bothy_made-up", status: 401, code: "unauthenticated"},
	})

	t.Run("the session answers with token, expiry and user, and me reads the caller", func(t *testing.T) {
		r := a.call(t, "POST", "/api/v1/auth/login", "", `{"handle":"olga","password":"owner-password"}`)
		exp, err := time.Parse(time.RFC3339, r.body["expires_at"].(string))
		if err != nil || exp.Location() != time.UTC || time.Until(exp) < 719*time.Hour {
			t.Fatalf("expires_at %v %v", r.body["expires_at"], err)
		}
		user := r.body["user"].(map[string]any)
		if user["handle"] != "olga" || user["is_owner"] != true {
			t.Fatalf("user %v", user)
		}
		me := a.call(t, "GET", "/api/v1/me", r.body["token"].(string), "")
		if me.status != 200 || me.body["id"] != user["id"] || !strings.HasSuffix(me.body["created_at"].(string), "Z") {
			t.Fatalf("me %d %s", me.status, me.raw)
		}
	})

	t.Run("logout ends the session", func(t *testing.T) {
		tok := a.login(t, "olga", "owner-password")
		if r := a.call(t, "POST", "/api/v1/auth/logout", tok, ""); r.status != 204 || r.raw != "" {
			t.Fatalf("logout %d %s", r.status, r.raw)
		}
		if r := a.call(t, "GET", "/api/v1/me", tok, ""); r.status != 401 {
			t.Fatalf("after logout %d", r.status)
		}
	})

	t.Run("repeated failures are rate limited with Retry-After", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			a.call(t, "POST", "/api/v1/auth/login", "", `{"handle":"olga","password":"wrong-password"}`)
		}
		r := a.call(t, "POST", "/api/v1/auth/login", "", `{"handle":"olga","password":"owner-password"}`)
		if r.status != 429 || r.body["code"] != "rate_limited" || r.header.Get("Retry-After") == "" {
			t.Fatalf("%d %v %s", r.status, r.header, r.raw)
		}
	})
}

func TestUserAndTokenRoutes(t *testing.T) {
	a := newIDAPI(t, identity.DefaultConfig())
	owner := a.setup(t)
	aliceID, alice := a.person(t, owner, "alice")
	bobID, bob := a.person(t, owner, "bob")

	created := a.call(t, "POST", "/api/v1/tokens", alice, `{"name":"ci"}`)
	if created.status != 201 {
		t.Fatalf("create token: %d %s", created.status, created.raw)
	}
	tokenValue, tokenID := created.body["token"].(string), created.body["id"].(string)

	a.run(t, []scenario{
		{name: "an owner creates a person", method: "POST", path: "/api/v1/users", token: owner,
			body: `{"handle":"carol","display_name":"Carol","password":"carol-password"}`, status: 201,
			fields: map[string]any{"handle": "carol", "kind": "person", "status": "active", "is_owner": false}},
		{name: "a taken handle is a conflict on handle", method: "POST", path: "/api/v1/users", token: owner,
			body: `{"handle":"ALICE","display_name":"Alice 2","password":"alice-password"}`, status: 409, code: "conflict",
			fields: map[string]any{"field": "handle"}},
		{name: "a short password is refused on password", method: "POST", path: "/api/v1/users", token: owner,
			body: `{"handle":"dave","display_name":"Dave","password":"short"}`, status: 400, code: "validation_failed",
			fields: map[string]any{"field": "password"}},
		{name: "a person who is no owner may not create people", method: "POST", path: "/api/v1/users", token: alice,
			body: `{"handle":"dave","display_name":"Dave","password":"dave-password"}`, status: 403, code: "forbidden"},
		{name: "creating people needs credentials", method: "POST", path: "/api/v1/users",
			body: `{"handle":"dave","display_name":"Dave","password":"dave-password"}`, status: 401},
		{name: "any person lists people", method: "GET", path: "/api/v1/users", token: alice, status: 200},
		{name: "a malformed cursor is cursor_invalid", method: "GET", path: "/api/v1/users?after=x", token: alice, status: 400, code: "cursor_invalid"},
		{name: "an API token authenticates its holder", method: "GET", path: "/api/v1/me", token: tokenValue, status: 200,
			fields: map[string]any{"id": aliceID}},
		{name: "the caller lists its tokens", method: "GET", path: "/api/v1/tokens", token: alice, status: 200},
		{name: "another's token is not found", method: "DELETE", path: "/api/v1/tokens/" + tokenID, token: bob, status: 404, code: "not_found"},
		{name: "a malformed token id is not found", method: "DELETE", path: "/api/v1/tokens/nope", token: alice, status: 404},
		{name: "a person who is no owner may not disable", method: "POST", path: "/api/v1/users/" + bobID + "/disable", token: alice, status: 403, code: "forbidden"},
		{name: "an unknown person is not found", method: "POST", path: "/api/v1/users/" + string(kernel.NewID()) + "/disable", token: owner, status: 404},
	})

	t.Run("the token list shows no values and last use", func(t *testing.T) {
		r := a.call(t, "GET", "/api/v1/tokens", alice, "")
		items := r.body["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("%s", r.raw)
		}
		item := items[0].(map[string]any)
		if item["id"] != tokenID || item["name"] != "ci" || strings.Contains(r.raw, tokenValue) || strings.Contains(r.raw, `"token"`) {
			t.Fatalf("%s", r.raw)
		}
		if _, ok := item["last_used_at"]; !ok {
			t.Fatalf("last_used_at missing: %s", r.raw)
		}
	})

	t.Run("the people list holds every person", func(t *testing.T) {
		r := a.call(t, "GET", "/api/v1/users", bob, "")
		if n := len(r.body["items"].([]any)); n != 4 {
			t.Fatalf("%d people: %s", n, r.raw)
		}
	})

	t.Run("the last owner cannot disable itself", func(t *testing.T) {
		me := a.call(t, "GET", "/api/v1/me", owner, "")
		r := a.call(t, "POST", "/api/v1/users/"+me.body["id"].(string)+"/disable", owner, "")
		if r.status != 409 || r.body["code"] != "last_owner" {
			t.Fatalf("%d %s", r.status, r.raw)
		}
	})

	t.Run("revoking a token stops it", func(t *testing.T) {
		if r := a.call(t, "DELETE", "/api/v1/tokens/"+tokenID, alice, ""); r.status != 204 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		if r := a.call(t, "GET", "/api/v1/me", tokenValue, ""); r.status != 401 {
			t.Fatalf("revoked token: %d", r.status)
		}
		if r := a.call(t, "DELETE", "/api/v1/tokens/"+tokenID, alice, ""); r.status != 404 {
			t.Fatalf("second revoke: %d", r.status)
		}
	})

	t.Run("disabling a person ends its session at once", func(t *testing.T) {
		r := a.call(t, "POST", "/api/v1/users/"+bobID+"/disable", owner, "")
		if r.status != 200 || r.body["status"] != "disabled" || r.body["id"] != bobID {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		if r := a.call(t, "GET", "/api/v1/me", bob, ""); r.status != 401 {
			t.Fatalf("disabled session: %d", r.status)
		}
	})
}
