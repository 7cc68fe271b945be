package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
)

// A cursor behind retention answers 410 resync_required with head_seq and oldest_seq beside
// the standard members, and names the route's own parameter.
func TestResyncProblem(t *testing.T) {
	for _, field := range []string{"after", "cursor"} {
		rec := httptest.NewRecorder()
		writeProblem(rec, resyncProblem(catchup.NewResyncRequired("after", 120, 40), field), "cid-1")
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: the body %q is not JSON: %v", field, rec.Body, err)
		}
		if rec.Code != http.StatusGone || rec.Header().Get("Content-Type") != "application/problem+json" ||
			body["code"] != "resync_required" || body["head_seq"] != 120.0 || body["oldest_seq"] != 41.0 ||
			body["field"] != field || body["correlation_id"] != "cid-1" || body["status"] != 410.0 {
			t.Fatalf("%s: %d %s", field, rec.Code, rec.Body)
		}
	}
	// Any other error is left as it is, and its problem has no member of its own.
	other := kernel.Invalid("after", "no")
	if err := resyncProblem(other, "after"); !errors.Is(err, other) {
		t.Fatalf("resyncProblem rewrote %v into %v", other, err)
	}
	rec := httptest.NewRecorder()
	writeProblem(rec, other, "")
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["head_seq"] != nil || rec.Code != http.StatusBadRequest {
		t.Fatalf("%d %s (%v)", rec.Code, rec.Body, err)
	}
}
