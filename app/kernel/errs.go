package kernel

import (
	"errors"
	"fmt"
)

// Code is a stable public error code: clients may branch on it. The HTTP status and the gateway close code
// follow from the code, in one place each.
type Code string

const (
	CodeValidation          Code = "validation_failed"
	CodeMalformedRequest    Code = "malformed_request"
	CodeCursorInvalid       Code = "cursor_invalid"
	CodeUnauthenticated     Code = "unauthenticated"
	CodeForbidden           Code = "forbidden"
	CodeNotFound            Code = "not_found"
	CodeMethodNotAllowed    Code = "method_not_allowed"
	CodeConflict            Code = "conflict"
	CodeRequestInProgress   Code = "request_in_progress"
	CodeLastOwner           Code = "last_owner"
	CodeMessageDeleted      Code = "message_deleted"
	CodePreconditionFailed  Code = "precondition_failed"
	CodePayloadTooLarge     Code = "payload_too_large"
	CodeUnsupportedMedia    Code = "unsupported_media_type"
	CodeIdempotencyKeyReuse Code = "idempotency_key_reuse"
	CodeRateLimited         Code = "rate_limited"
	CodeSetupRequired       Code = "setup_required"
	CodeSetupComplete       Code = "setup_complete"
	CodeInternal            Code = "internal_error"
	CodeUnavailable         Code = "unavailable"
)

// Error is a domain error: a stable code and a message safe to show to the caller.
// Anything that is not an *Error is internal_error to the outside.
type Error struct {
	Code    Code
	Message string
	// Field names the offending input field of a validation error, if any.
	Field string
	// RetryAfterSeconds is set on rate_limited and unavailable.
	RetryAfterSeconds int
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

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

// CodeOf returns the code of err, or internal_error when err carries none.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// IsCode reports whether err carries code.
func IsCode(err error, code Code) bool { return err != nil && CodeOf(err) == code }
