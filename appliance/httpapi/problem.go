package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"bothy.dev/bothy/app/kernel"
)

// The codes only the HTTP adapter returns.
var (
	// codeRequestTimeout answers a body that did not arrive within http.body_read_timeout.
	codeRequestTimeout = kernel.NewCode("request_timeout", kernel.ClassTimeout)
	// CodeUnsupportedMedia answers a body that is not JSON.
	CodeUnsupportedMedia = kernel.NewCode("unsupported_media_type", kernel.ClassUnsupportedMedia)
	// CodeRequestInProgress answers a repeated Idempotency-Key whose first request has not
	// finished.
	CodeRequestInProgress = kernel.NewCode("request_in_progress", kernel.ClassConflict)
	// CodeIdempotencyKeyReuse answers an Idempotency-Key used before for another request.
	CodeIdempotencyKeyReuse = kernel.NewCode("idempotency_key_reuse", kernel.ClassUnprocessable)
	// CodeSetupRequired answers a request to an instance that has no owner yet.
	CodeSetupRequired = kernel.NewCode("setup_required", kernel.ClassUnavailable)
	// CodeRangeNotSatisfiable refuses a Range that lies wholly outside the bytes of a download.
	CodeRangeNotSatisfiable = kernel.NewCode("range_not_satisfiable", kernel.ClassRangeNotSatisfiable)
)

// statusOf maps an error code to its HTTP status by the code's class: the one place that does,
// so a code means the same status on every route, whichever module declares it.
func statusOf(code kernel.Code) int {
	switch code.Class() {
	case kernel.ClassInvalid:
		return http.StatusBadRequest
	case kernel.ClassUnauthenticated:
		return http.StatusUnauthorized
	case kernel.ClassForbidden:
		return http.StatusForbidden
	case kernel.ClassNotFound:
		return http.StatusNotFound
	case kernel.ClassMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case kernel.ClassTimeout:
		return http.StatusRequestTimeout
	case kernel.ClassConflict:
		return http.StatusConflict
	case kernel.ClassGone:
		return http.StatusGone
	case kernel.ClassPrecondition:
		return http.StatusPreconditionFailed
	case kernel.ClassTooLarge:
		return http.StatusRequestEntityTooLarge
	case kernel.ClassUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case kernel.ClassUnprocessable:
		return http.StatusUnprocessableEntity
	case kernel.ClassRateLimited:
		return http.StatusTooManyRequests
	case kernel.ClassUnavailable:
		return http.StatusServiceUnavailable
	case kernel.ClassRangeNotSatisfiable:
		return http.StatusRequestedRangeNotSatisfiable
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
		default:
			ke = &kernel.Error{Code: kernel.CodeInternal, Message: "internal error"}
		}
	}
	st := statusOf(ke.Code)
	return Problem{
		Type:   "https://bothy.dev/problems/" + ke.Code.String(),
		Title:  http.StatusText(st),
		Status: st,
		Code:   ke.Code.String(),
		Detail: ke.Message,
		Field:  ke.Field,
	}, ke
}

func writeProblem(w http.ResponseWriter, err error, correlationID string) int {
	p, ke := problemFor(err)
	p.CorrelationID = correlationID
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	// A wait the error advises, rounded up to whole seconds; a client told to try later
	// without one waits a second.
	if after := kernel.RetryAfterOf(err); after > 0 || ke.Code.Class() == kernel.ClassUnavailable || ke.Code.Class() == kernel.ClassRateLimited {
		h.Set("Retry-After", strconv.Itoa(max(1, int((after+time.Second-1)/time.Second))))
	}
	w.WriteHeader(p.Status)
	b, _ := json.Marshal(p)
	if ep := (*extendedProblem)(nil); errors.As(err, &ep) && len(ep.members) > 0 {
		m, _ := json.Marshal(ep.members) // its keys in order
		b = append(append(b[:len(b)-1], ','), m[1:]...)
	}
	_, _ = w.Write(b)
	return p.Status
}

// extendedProblem is an error whose problem document carries members of its own beside the
// standard ones (RFC 9457's extension members), such as the seqs a refused cursor goes on
// from. A route builds it from what its use case returned; the members never reuse a standard
// member's name.
type extendedProblem struct {
	error
	members map[string]any
}

func (e *extendedProblem) Unwrap() error { return e.error }
