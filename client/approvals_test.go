package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// approvalServer answers the approval request with answer and GET of the approval with
// current; beforeAnswer runs before the request is answered.
func approvalServer(t *testing.T, answer, current string, beforeAnswer func()) (*Agent, *Invocation, *map[string]any) {
	t.Helper()
	body := map[string]any{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/runs/r1/approvals":
			if r.Header.Get("Invocation-Token") != "tok" {
				t.Errorf("Invocation-Token %q", r.Header.Get("Invocation-Token"))
			}
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &body)
			if beforeAnswer != nil {
				beforeAnswer()
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, answer)
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/approvals/ap1":
			_, _ = io.WriteString(w, current)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	a := NewAgent(srv.URL, "secret", WithHTTPClient(srv.Client()))
	a.running["r1"] = func(error) {}
	inv := &Invocation{a: a, RunID: "r1", ThreadID: "t1", token: "tok", expiresAt: time.Now().Add(time.Hour)}
	return a, inv, &body
}

const (
	pendingApproval  = `{"id":"ap1","run_id":"r1","state":"pending","decision":null,"scope":null,"by":null,"timed_out":false}`
	approvedApproval = `{"id":"ap1","run_id":"r1","state":"approved","decision":"approve","scope":"once","by":"p1","timed_out":false}`
)

func decidedEvent(data string) Event {
	return Event{Seq: 9, Type: "approval.decided", Data: json.RawMessage(data)}
}

func TestRequestApproval(t *testing.T) {
	t.Run("blocks until approval.decided for it reaches the agent", func(t *testing.T) {
		a, inv, body := approvalServer(t, pendingApproval, pendingApproval, nil)
		go func() {
			time.Sleep(50 * time.Millisecond)
			// Another run's decision is not this one's.
			a.peek(decidedEvent(`{"id":"ap9","run_id":"r9","state":"approved","decision":"approve"}`))
			a.peek(decidedEvent(`{"id":"ap1","run_id":"r1","state":"denied","decision":"deny","scope":"once","by":"p1","timed_out":false}`))
		}()
		d, err := inv.RequestApproval(context.Background(), ApprovalRequest{Title: "Deploy", Detail: "prod", Timeout: 90 * time.Second,
			ApproverIDs: []string{"p1"}})
		if err != nil || d.ID != "ap1" || d.Decision != "deny" || d.State != "denied" || d.By != "p1" || d.Approved() {
			t.Fatalf("decision %+v, %v", d, err)
		}
		if (*body)["title"] != "Deploy" || (*body)["detail"] != "prod" || (*body)["timeout_s"] != 90.0 {
			t.Fatalf("request body %v", *body)
		}
	})

	t.Run("a decision that overtakes the request's answer is kept for it", func(t *testing.T) {
		var a *Agent
		a, inv, _ := approvalServer(t, pendingApproval, pendingApproval, func() {
			a.peek(decidedEvent(approvedApproval))
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := inv.RequestApproval(ctx, ApprovalRequest{Title: "Deploy"})
		if err != nil || !d.Approved() || d.By != "p1" {
			t.Fatalf("decision %+v, %v", d, err)
		}
	})

	t.Run("an answer approved at once (for the run) does not wait", func(t *testing.T) {
		_, inv, _ := approvalServer(t, strings.Replace(approvedApproval, `"once"`, `"run"`, 1), pendingApproval, nil)
		d, err := inv.RequestApproval(context.Background(), ApprovalRequest{Title: "Deploy"})
		if err != nil || !d.Approved() || d.Scope != "run" {
			t.Fatalf("decision %+v, %v", d, err)
		}
	})

	t.Run("a decision the reader missed is read once after the answer", func(t *testing.T) {
		_, inv, _ := approvalServer(t, pendingApproval, approvedApproval, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if d, err := inv.RequestApproval(ctx, ApprovalRequest{Title: "Deploy"}); err != nil || !d.Approved() {
			t.Fatalf("decision %+v, %v", d, err)
		}
	})

	t.Run("the context's end stops the wait", func(t *testing.T) {
		_, inv, _ := approvalServer(t, pendingApproval, pendingApproval, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := inv.RequestApproval(ctx, ApprovalRequest{Title: "Deploy"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want the deadline", err)
		}
	})
}
