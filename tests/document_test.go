package tests

import (
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The routes of the contract and those the server added; the document must describe each of
// them, and nothing else.
var contractRoutes = []string{
	"POST /api/v1/setup", "POST /api/v1/auth/login", "POST /api/v1/auth/logout", "GET /api/v1/me",
	"POST /api/v1/users", "GET /api/v1/users", "POST /api/v1/users/{id}/disable",
	"POST /api/v1/tokens", "GET /api/v1/tokens", "DELETE /api/v1/tokens/{id}",
	"POST /api/v1/agents", "GET /api/v1/agents", "GET /api/v1/agents/{id}",
	"POST /api/v1/agents/{id}/disable", "POST /api/v1/agents/{id}/enable", "POST /api/v1/agents/{id}/token",
	"POST /api/v1/spaces", "GET /api/v1/spaces", "GET /api/v1/spaces/{id}", "PATCH /api/v1/spaces/{id}",
	"POST /api/v1/spaces/{id}/channels", "GET /api/v1/spaces/{id}/channels", "GET /api/v1/channels/{id}", "PATCH /api/v1/channels/{id}",
	"POST /api/v1/channels/{id}/grants", "GET /api/v1/channels/{id}/grants", "DELETE /api/v1/channels/{id}/grants/{principal_id}",
	"PUT /api/v1/channels/{id}/operator", "DELETE /api/v1/channels/{id}/operator",
	"POST /api/v1/channels/{id}/archive", "POST /api/v1/spaces/{id}/archive", // the console archives through the same use cases
	"POST /api/v1/channels/{id}/threads", "GET /api/v1/channels/{id}/threads",
	"POST /api/v1/threads/{id}/messages", "GET /api/v1/threads/{id}/messages",
	"GET /api/v1/messages/{id}", "PATCH /api/v1/messages/{id}", "DELETE /api/v1/messages/{id}",
	"GET /api/v1/messages/{id}/revisions", // not in the first contract; the server has it
	"POST /api/v1/messages/{id}/thread",   // a reply under a message starts its thread or answers in it
	"PUT /api/v1/messages/{id}/reactions/{emoji}", "DELETE /api/v1/messages/{id}/reactions/{emoji}",
	"PUT /api/v1/messages/{id}/pin", "DELETE /api/v1/messages/{id}/pin", "GET /api/v1/channels/{id}/pins",
	"POST /api/v1/dms", "GET /api/v1/dms", "POST /api/v1/dms/{id}/leave",
	"POST /api/v1/threads/{id}/read", "GET /api/v1/me/unread", "GET /api/v1/me/mentions", // read positions and what is new
	"GET /api/v1/threads/{id}", "PATCH /api/v1/threads/{id}", // one thread and its title
	"GET /api/v1/channels/{id}/notifications", "PUT /api/v1/channels/{id}/notifications", // a person's notification level
	"GET /api/v1/threads/{id}/subscription", "PUT /api/v1/threads/{id}/subscription", // a person's subscription of a thread
	"POST /api/v1/me/push-subscriptions", "GET /api/v1/me/push-subscriptions", "DELETE /api/v1/me/push-subscriptions/{id}", // Web Push
	"GET /api/v1/push/vapid-public-key", // the key a browser subscribes with
	"GET /api/v1/events", "GET /api/v1/agents/me/events", "POST /api/v1/agents/me/ack", "GET /api/v1/openapi.json",
	"GET /api/v1/runs/{id}", "GET /api/v1/threads/{id}/runs", "POST /api/v1/runs/{id}/cancel",
	"POST /api/v1/runs/{id}/start", "PATCH /api/v1/runs/{id}", "POST /api/v1/runs/{id}/finish", "POST /api/v1/runs/{id}/token",
	"POST /api/v1/messages/{id}/interactions",                                                           // a click or pick on a message's buttons and selects
	"POST /api/v1/runs/{id}/approvals", "GET /api/v1/runs/{id}/approvals", "GET /api/v1/approvals/{id}", // what runs ask people
	"POST /api/v1/approvals/{id}/decide", "GET /api/v1/me/approvals",
	"POST /api/v1/users/{id}/enable", "POST /api/v1/users/{id}/password", "POST /api/v1/me/password", "GET /api/v1/instance", "PUT /api/v1/instance", // the owner's console and its API twins
	"POST /api/v1/mcp",                                                                                       // the MCP endpoint (JSON-RPC), with mcp.enabled
	"PUT /api/v1/agents/me/commands", "GET /api/v1/agents/me/commands", "GET /api/v1/channels/{id}/commands", // slash commands
	"GET /api/v1/agents/{id}/budget", "PUT /api/v1/agents/{id}/budget", "DELETE /api/v1/agents/{id}/budget", // an agent's budget
	"GET /api/v1/search",                                                                                                 // the search of messages
	"POST /api/v1/files", "GET /api/v1/files/{id}", "GET /api/v1/files/{id}/content", "GET /api/v1/files/{id}/thumbnail", // files
	"POST /api/v1/uploads", "GET /api/v1/uploads/{id}", "PUT /api/v1/uploads/{id}/parts/{n}", "POST /api/v1/uploads/{id}/complete", // resumable uploads
	"GET /.well-known/jwks.json", // the public keys of invocation tokens
}

var publicRoutes = map[string]bool{"POST /api/v1/setup": true, "POST /api/v1/auth/login": true, "GET /api/v1/openapi.json": true,
	"GET /.well-known/jwks.json": true}

// noIdempotencyKey are the POSTs that take no Idempotency-Key: a logout repeated changes nothing,
// and a JSON-RPC call carries its own request id.
// An upload's body is a stream the server does not keep, so no answer can be replayed for it (a
// client that retries an upload gets a second file, which it may leave unattached).
var noIdempotencyKey = map[string]bool{"POST /api/v1/auth/logout": true, "POST /api/v1/mcp": true, "POST /api/v1/files": true}

// rawBodies take the bytes of a file as their body, of any type (so never 415), instead of JSON.
var rawBodies = map[string]bool{"POST /api/v1/files": true, "PUT /api/v1/uploads/{id}/parts/{n}": true}

// rawAnswers answer the bytes of a file, not JSON.
var rawAnswers = map[string]bool{"GET /api/v1/files/{id}/content": true, "GET /api/v1/files/{id}/thumbnail": true}

// passwordRoutes take a password in their body and so no Idempotency-Key (httpapi Route.Password).
var passwordRoutes = map[string]bool{"POST /api/v1/users": true, "POST /api/v1/users/{id}/password": true, "POST /api/v1/me/password": true}

// TestOpenAPIDocument holds the rules the document keeps for every operation, so an edit that
// forgets one fails here rather than in a reader's client.
func TestOpenAPIDocument(t *testing.T) {
	ops := map[string]*openapi3.Operation{}
	for path, item := range apiDoc.Paths.Map() {
		for method, op := range item.Operations() {
			ops[method+" "+path] = op
		}
	}
	t.Run("it describes exactly the routes of the contract", func(t *testing.T) {
		for _, r := range contractRoutes {
			if ops[r] == nil {
				t.Errorf("no operation for %s", r)
			}
		}
		if len(ops) != len(contractRoutes) {
			t.Errorf("%d operations, the contract has %d routes", len(ops), len(contractRoutes))
		}
	})
	for name, op := range ops {
		t.Run(name+" keeps the rules", func(t *testing.T) {
			public := op.Security != nil && len(*op.Security) == 0
			if public != publicRoutes[name] {
				t.Errorf("public %v, want %v", public, publicRoutes[name])
			}
			if !public && op.Responses.Status(401) == nil {
				t.Errorf("no 401 on an authenticated route")
			}
			if op.Extensions["x-bothy-action"] == nil {
				t.Errorf("no x-bothy-action")
			}
			if strings.HasPrefix(name, "POST ") && !public {
				found := false
				for _, p := range op.Parameters {
					found = found || (p.Value.In == "header" && p.Value.Name == "Idempotency-Key")
				}
				switch {
				case passwordRoutes[name] && found:
					t.Errorf("a route whose body holds a password documents an Idempotency-Key, which it ignores")
				case !found && !passwordRoutes[name] && !noIdempotencyKey[name]:
					t.Errorf("no Idempotency-Key header parameter")
				}
			}
			if op.RequestBody != nil && rawBodies[name] {
				for _, st := range []int{400, 413} {
					if op.Responses.Status(st) == nil {
						t.Errorf("a route with a body does not document %d", st)
					}
				}
			} else if op.RequestBody != nil {
				for _, st := range []int{400, 413, 415} {
					if op.Responses.Status(st) == nil {
						t.Errorf("a route with a body does not document %d", st)
					}
				}
				s := op.RequestBody.Value.Content.Get("application/json").Schema.Value
				if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
					t.Errorf("the request body allows unknown fields")
				}
			}
			for code, resp := range op.Responses.Map() {
				if resp.Value.Headers["Correlation-Id"] == nil {
					t.Errorf("%s: no Correlation-Id header", code)
				}
				st, _ := strconv.Atoi(code)
				if st >= 400 {
					if resp.Value.Content.Get("application/problem+json") == nil || len(resp.Value.Content) != 1 {
						t.Errorf("%s: not application/problem+json only", code)
					}
				} else if st != 204 && st != 202 && st >= 200 && st < 300 && !rawAnswers[name] {
					body := resp.Value.Content.Get("application/json")
					if body == nil {
						t.Errorf("%s: no application/json body", code)
					} else if ap := body.Schema.Value.AdditionalProperties.Has; ap != nil && !*ap {
						t.Errorf("%s: the answer forbids extra fields", code)
					}
				}
			}
		})
	}
}
