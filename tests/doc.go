// Package tests holds bothy's end-to-end tests. They build the real binary, start it on a
// temporary data directory with listeners on port 0 and talk to it only over HTTP, like a user
// (STYLE rule 19). Every request they send and every answer they get is checked against the
// OpenAPI document (appliance/httpapi/openapi.json), so a handler that drifts from the
// documented contract fails here.
//
// The package must not import the server's packages: it knows the server only by its command
// line, its output and its HTTP API.
package tests
