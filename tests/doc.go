// Package tests holds bothy's end-to-end tests. They build the real binary, start it on a
// temporary data directory with listeners on port 0 and talk to it only over HTTP and
// WebSocket, like a user. Every request they send and every answer they get is
// checked against the OpenAPI document (appliance/httpapi/openapi.json), so a handler that
// drifts from the documented contract fails here. The gateway tests (gateway_test.go) follow it
// with bots of the Go client (bothy.dev/bothy/client) and hold what they are handed against the
// REST catch-up of the same principal; misbehaving clients are raw WebSocket connections.
//
// Every test runs on SQLite, and on PostgreSQL as well when BOTHY_TEST_POSTGRES_URL names a
// cluster where it may create databases (subtests sqlite/… and postgres/…): each PostgreSQL server
// gets a database of its own, created from template0, migrated with `bothy migrate up` and dropped
// (WITH (FORCE)) once the server has stopped. TestMoveFromSQLiteToPostgres moves an instance with
// `bothy migrate copy`.
//
// The package must not import the server's packages: it knows the server only by its command
// line, its output, its HTTP API and its gateway (a test may open the database itself, with the
// driver, to check what the API cannot show).
package tests
