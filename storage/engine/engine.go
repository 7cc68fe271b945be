// Package engine names the database engines bothy runs on. It imports nothing, so the storage
// code of both engines, the migration runner and the wiring that picks an engine can all share
// one spelling of the name.
package engine

// Name is a database engine. Its value is the configuration value database.driver and the
// name of the engine's migration folder.
type Name string

const (
	// SQLite is the embedded engine, one file per server.
	SQLite Name = "sqlite"
	// Postgres is PostgreSQL, which several nodes may share.
	Postgres Name = "postgres"
)
