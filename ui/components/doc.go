// Package components holds the parts the console's pages share (badges, one-button forms, empty
// rows, charts, messages, run cards). Each takes plain values or a view struct, never a domain
// service.
package components
