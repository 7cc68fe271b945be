package kernel

import (
	"errors"
	"fmt"
	"time"
)

// Class is the kind of failure an error code names. Each adapter decides its answer from the
// class alone (the HTTP status, the gateway's close code, the console's page), so a module can
// add a code without teaching the adapters about it.
type Class uint8

const (
	ClassInternal            Class = iota // the server failed; nothing the client can fix
	ClassInvalid                          // the request is malformed or fails validation
	ClassUnauthenticated                  // no principal, or credentials that fail
	ClassForbidden                        // the principal may see the resource but not do this
	ClassNotFound                         // no such resource, or one the principal may not see
	ClassMethodNotAllowed                 // the resource does not take this method
	ClassTimeout                          // the request did not arrive in time
	ClassConflict                         // the resource's state does not allow the request now
	ClassGone                             // the resource existed and was removed
	ClassPrecondition                     // the client's view of the resource is stale
	ClassTooLarge                         // the request is above a size limit
	ClassUnsupportedMedia                 // the request's media type is not taken
	ClassUnprocessable                    // well formed, but contradicts an earlier request
	ClassRateLimited                      // too many requests; try again later
	ClassUnavailable                      // the server cannot take the request now; try again
	ClassRangeNotSatisfiable              // the part of the resource asked for lies outside it
)

// Code is a stable public error code: clients may branch on its name. It carries its class, from
// which the adapters choose their answer. Codes are declared once, by the module that returns
// them, with NewCode; the zero Code is no code.
type Code struct {
	name  string
	class Class
}

// NewCode declares a code. The name is public and stable.
func NewCode(name string, class Class) Code { return Code{name: name, class: class} }

// String returns the code's public name.
func (c Code) String() string { return c.name }

// Class returns the kind of failure the code names.
func (c Code) Class() Class { return c.class }

// MarshalText encodes the code as its name.
func (c Code) MarshalText() ([]byte, error) { return []byte(c.name), nil }

// The codes every module and adapter may return. A code that only one module returns is
// declared by that module.
var (
	CodeValidation       = NewCode("validation_failed", ClassInvalid)
	CodeMalformedRequest = NewCode("malformed_request", ClassInvalid)
	// CodeCursorInvalid refuses a page or log cursor that is not one the server handed out.
	CodeCursorInvalid      = NewCode("cursor_invalid", ClassInvalid)
	CodeUnauthenticated    = NewCode("unauthenticated", ClassUnauthenticated)
	CodeForbidden          = NewCode("forbidden", ClassForbidden)
	CodeNotFound           = NewCode("not_found", ClassNotFound)
	CodeMethodNotAllowed   = NewCode("method_not_allowed", ClassMethodNotAllowed)
	CodeConflict           = NewCode("conflict", ClassConflict)
	CodePreconditionFailed = NewCode("precondition_failed", ClassPrecondition)
	CodePayloadTooLarge    = NewCode("payload_too_large", ClassTooLarge)
	CodeRateLimited        = NewCode("rate_limited", ClassRateLimited)
	CodeInternal           = NewCode("internal_error", ClassInternal)
	CodeUnavailable        = NewCode("unavailable", ClassUnavailable)
)

// Error is a domain error: a stable code and a message safe to show to the caller.
// Anything that is not an *Error is internal_error to the outside.
type Error struct {
	Code    Code
	Message string
	// Field names the offending input field of a validation error, if any.
	Field string
}

func (e *Error) Error() string { return e.Code.name + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a validation_failed error that names the field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeValidation, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrNotFound is the one not-found answer: for what does not exist and for what the caller
// may not see, so that an answer never tells that a hidden resource exists.
var ErrNotFound = &Error{Code: CodeNotFound, Message: "no such resource"}

// CodeOf returns the code of err, the zero Code for nil, or internal_error when err carries none.
func CodeOf(err error) Code {
	if err == nil {
		return Code{}
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// IsCode reports whether err carries code.
func IsCode(err error, code Code) bool { return err != nil && CodeOf(err) == code }

// TryLater wraps an error the caller may retry after a while: a rate limit, a store that
// cannot take the write now. The wait is advice to the transport (HTTP's Retry-After), not
// part of the domain error, so it lives beside it.
type TryLater struct {
	Err   error
	After time.Duration
}

func (e *TryLater) Error() string { return e.Err.Error() }
func (e *TryLater) Unwrap() error { return e.Err }

// RetryAfter wraps err with the wait after which a retry may succeed.
func RetryAfter(err error, after time.Duration) error { return &TryLater{Err: err, After: after} }

// RetryAfterOf returns the wait err advises, or zero when it advises none.
func RetryAfterOf(err error) time.Duration {
	var t *TryLater
	if errors.As(err, &t) {
		return t.After
	}
	return 0
}
