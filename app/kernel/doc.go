// Package kernel holds what every domain module may use: ids, the clock, error codes, the actor
// of a request, the Unit-of-Work and event-log ports and the authorization port.
//
// It must not import anything of the project, net/http, database/sql or a third-party module.
package kernel
