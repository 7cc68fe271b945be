package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
)

// codeRequestTimeout answers a body that did not arrive within http.body_read_timeout; only
// the HTTP adapter meets it.
const codeRequestTimeout kernel.Code = "request_timeout"

// statusOf maps a public error code to its HTTP status: the one place that does, so a code means the same status on every route.
func statusOf(code kernel.Code) int {
	switch code {
	case kernel.CodeValidation, kernel.CodeMalformedRequest, kernel.CodeCursorInvalid:
		return http.StatusBadRequest
	case kernel.CodeUnauthenticated:
		return http.StatusUnauthorized
	case kernel.CodeForbidden:
		return http.StatusForbidden
	case kernel.CodeNotFound:
		return http.StatusNotFound
	case kernel.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case kernel.CodeConflict, kernel.CodeRequestInProgress, kernel.CodeLastOwner, kernel.CodeSetupComplete:
		return http.StatusConflict
	// A thread under a message that is itself in a thread: the message's place conflicts with
	// the request, which a client fixes by answering in that thread.
	case messaging.CodeNotInMainThread:
		return http.StatusConflict
	case kernel.CodeMessageDeleted:
		return http.StatusGone
	case kernel.CodePreconditionFailed:
		return http.StatusPreconditionFailed
	case kernel.CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case kernel.CodeUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case codeRequestTimeout:
		return http.StatusRequestTimeout
	case kernel.CodeIdempotencyKeyReuse:
		return http.StatusUnprocessableEntity
	case kernel.CodeRateLimited:
		return http.StatusTooManyRequests
	case kernel.CodeUnavailable, kernel.CodeSetupRequired:
		return http.StatusServiceUnavailable
	// The codes of runs: a run that has started or ended, or a patch out of turn, conflicts with
	// the run's state; an invocation token that fails is a failed authentication.
	case runs.CodeAlreadyStarted, runs.CodeRunEnded, runs.CodeRunVersionConflict:
		return http.StatusConflict
	case runs.CodeInvocationTokenInvalid, runs.CodeInvocationTokenExpired:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// Problem is an RFC 9457 problem document with a stable, documented code that clients may switch on.
type Problem struct {
	Type          string `json:"type"`
	Title         string `json:"title"`
	Status        int    `json:"status"`
	Code          string `json:"code"`
	Detail        string `json:"detail,omitempty"`
	Field         string `json:"field,omitempty"`
	CorrelationID string `json:"correlation_id,omitempty"`
}

// problemFor turns any error into the problem the client sees. Errors without a code are
// internal_error with a generic detail: internals only go to the log.
func problemFor(err error) (Problem, *kernel.Error) {
	var ke *kernel.Error
	if !errors.As(err, &ke) {
		switch {
		case errors.Is(err, errDeadline):
			ke = kernel.Errorf(kernel.CodeUnavailable, "the request took too long")
			ke.RetryAfterSeconds = 1
		default:
			ke = &kernel.Error{Code: kernel.CodeInternal, Message: "internal error"}
		}
	}
	st := statusOf(ke.Code)
	return Problem{
		Type:   "https://bothy.dev/problems/" + string(ke.Code),
		Title:  http.StatusText(st),
		Status: st,
		Code:   string(ke.Code),
		Detail: ke.Message,
		Field:  ke.Field,
	}, ke
}

func writeProblem(w http.ResponseWriter, err error, correlationID string) int {
	p, ke := problemFor(err)
	p.CorrelationID = correlationID
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	if ke.RetryAfterSeconds > 0 || ke.Code == kernel.CodeUnavailable || ke.Code == kernel.CodeRateLimited {
		ra := ke.RetryAfterSeconds
		if ra <= 0 {
			ra = 1
		}
		h.Set("Retry-After", strconv.Itoa(ra))
	}
	w.WriteHeader(p.Status)
	b, _ := json.Marshal(p)
	_, _ = w.Write(b)
	return p.Status
}
