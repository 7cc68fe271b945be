package httpapi

import (
	_ "embed"
	"encoding/json"
	"net/http"

	"bothy.dev/bothy/app/instance"
	"bothy.dev/bothy/app/kernel"
)

// openAPIDocument is the OpenAPI 3.1 description of the public REST API. The end-to-end tests
// validate every request they send and every answer they get against it, so it is the contract
// the handlers keep, not a decoration.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns the embedded document (a copy: callers may not change the served one).
func OpenAPIDocument() []byte { return append([]byte(nil), openAPIDocument...) }

// OpenAPIRoutes serves the document at GET /api/v1/openapi.json, to anyone: discovery needs no
// credentials, but it still goes through the one decision point (instance.discovery.read).
func OpenAPIRoutes(az kernel.Authorizer) []Route {
	rt := openAPIRoutes{az: az}
	return []Route{
		{Method: http.MethodGet, Pattern: "/api/v1/openapi.json", Action: instance.ActDiscoveryRead, Public: true, Handler: rt.document},
	}
}

// openAPIRoutes holds the handler of OpenAPIRoutes.
type openAPIRoutes struct{ az kernel.Authorizer }

func (rt openAPIRoutes) document(r *Request) (int, any, error) {
	if err := rt.az.Authorize(r.Context(), r.Actor, instance.ActDiscoveryRead, kernel.Resource{Kind: kernel.ResInstance}); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, json.RawMessage(openAPIDocument), nil
}
