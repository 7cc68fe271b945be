package runs

import (
	"fmt"
	"strings"
	"testing"

	"bothy.dev/bothy/app/kernel"
)

var allStatuses = []Status{StatusQueued, StatusRunning, StatusWaitingInput, StatusSucceeded, StatusFailed, StatusCancelled}

// allTriggers holds one of each trigger; Fail and Abort stand with a typical reason.
var allTriggers = []Trigger{Start, WaitInput, Resume, Succeed, Fail(""), Cancel, CancelTimeout, Expire, Stall, Interrupt, Abort(ReasonAgentDisabled)}

func TestStatus(t *testing.T) {
	for _, s := range allStatuses {
		want := s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v", s, !want)
		}
		if !s.Valid() {
			t.Errorf("%s is not valid", s)
		}
	}
	for _, s := range []Status{"", "done", "Running", "canceled"} {
		if s.Valid() || s.Terminal() {
			t.Errorf("%q is valid or terminal", s)
		}
	}
}

// TestNext is the table of every (state, trigger) pair: the lifecycle of docs/runs.md as a function.
func TestNext(t *testing.T) {
	var (
		ok       = kernel.Code{}
		ended    = CodeRunEnded
		started  = CodeAlreadyStarted
		conflict = kernel.CodeConflict
	)
	type want struct {
		to     Status
		reason Reason
		code   kernel.Code
	}
	q, r, w := StatusQueued, StatusRunning, StatusWaitingInput
	s, f, c := StatusSucceeded, StatusFailed, StatusCancelled
	table := []struct {
		from    Status
		trigger Trigger
		want    want
	}{
		{q, Start, want{r, "", ok}},
		{r, Start, want{r, "", started}},
		{w, Start, want{w, "", started}},
		{s, Start, want{s, "", ended}},
		{f, Start, want{f, "", ended}},
		{c, Start, want{c, "", ended}},

		{q, WaitInput, want{q, "", conflict}},
		{r, WaitInput, want{w, "", ok}},
		{w, WaitInput, want{w, "", conflict}},
		{s, WaitInput, want{s, "", ended}},
		{f, WaitInput, want{f, "", ended}},
		{c, WaitInput, want{c, "", ended}},

		{q, Resume, want{q, "", conflict}},
		{r, Resume, want{r, "", conflict}},
		{w, Resume, want{r, "", ok}},
		{s, Resume, want{s, "", ended}},
		{f, Resume, want{f, "", ended}},
		{c, Resume, want{c, "", ended}},

		{q, Succeed, want{q, "", conflict}},
		{r, Succeed, want{s, "", ok}},
		{w, Succeed, want{s, "", ok}},
		{s, Succeed, want{s, "", ended}},
		{f, Succeed, want{f, "", ended}},
		{c, Succeed, want{c, "", ended}},

		{q, Fail(""), want{q, "", conflict}},
		{r, Fail(""), want{f, ReasonAgentError, ok}},
		{w, Fail(""), want{f, ReasonAgentError, ok}},
		{s, Fail(""), want{s, "", ended}},
		{f, Fail(""), want{f, "", ended}},
		{c, Fail(""), want{c, "", ended}},

		{q, Cancel, want{c, "", ok}},
		{r, Cancel, want{c, "", ok}},
		{w, Cancel, want{c, "", ok}},
		{s, Cancel, want{s, "", ended}},
		{f, Cancel, want{f, "", ended}},
		{c, Cancel, want{c, "", ended}},

		{q, CancelTimeout, want{c, ReasonCancelTimeout, ok}},
		{r, CancelTimeout, want{c, ReasonCancelTimeout, ok}},
		{w, CancelTimeout, want{c, ReasonCancelTimeout, ok}},
		{s, CancelTimeout, want{s, "", ended}},
		{f, CancelTimeout, want{f, "", ended}},
		{c, CancelTimeout, want{c, "", ended}},

		{q, Expire, want{f, ReasonAgentUnavailable, ok}},
		{r, Expire, want{r, "", conflict}},
		{w, Expire, want{w, "", conflict}},
		{s, Expire, want{s, "", ended}},
		{f, Expire, want{f, "", ended}},
		{c, Expire, want{c, "", ended}},

		{q, Stall, want{q, "", conflict}},
		{r, Stall, want{f, ReasonStale, ok}},
		{w, Stall, want{f, ReasonStale, ok}},
		{s, Stall, want{s, "", ended}},
		{f, Stall, want{f, "", ended}},
		{c, Stall, want{c, "", ended}},

		{q, Interrupt, want{q, "", conflict}},
		{r, Interrupt, want{f, ReasonInterrupted, ok}},
		{w, Interrupt, want{f, ReasonInterrupted, ok}},
		{s, Interrupt, want{s, "", ended}},
		{f, Interrupt, want{f, "", ended}},
		{c, Interrupt, want{c, "", ended}},

		{q, Abort(ReasonAgentDisabled), want{f, ReasonAgentDisabled, ok}},
		{r, Abort(ReasonAgentDisabled), want{f, ReasonAgentDisabled, ok}},
		{w, Abort(ReasonAgentDisabled), want{f, ReasonAgentDisabled, ok}},
		{s, Abort(ReasonAgentDisabled), want{s, "", ended}},
		{f, Abort(ReasonAgentDisabled), want{f, "", ended}},
		{c, Abort(ReasonAgentDisabled), want{c, "", ended}},
	}

	t.Run("the table covers every state with every trigger once", func(t *testing.T) {
		seen := map[string]int{}
		for _, row := range table {
			seen[fmt.Sprint(row.from, "/", row.trigger)]++
		}
		for _, from := range allStatuses {
			for _, tr := range allTriggers {
				if n := seen[fmt.Sprint(from, "/", tr)]; n != 1 {
					t.Errorf("%s on %s: %d rows", tr, from, n)
				}
			}
		}
	})

	for _, row := range table {
		name := fmt.Sprintf("%s on a %s run", row.trigger, row.from)
		if row.want.code == ok {
			name += fmt.Sprintf(" makes it %s", row.want.to)
		} else {
			name += " is refused with " + row.want.code.String()
		}
		t.Run(name, func(t *testing.T) {
			to, reason, err := Next(row.from, row.trigger)
			if row.want.code == ok && err != nil {
				t.Fatalf("err = %v", err)
			}
			if row.want.code != ok && kernel.CodeOf(err) != row.want.code {
				t.Fatalf("err = %v, want code %s", err, row.want.code)
			}
			if to != row.want.to || reason != row.want.reason {
				t.Fatalf("got %s (%q), want %s (%q)", to, reason, row.want.to, row.want.reason)
			}
		})
	}

	t.Run("a reason comes with failed and cancel_timeout only", func(t *testing.T) {
		for _, from := range allStatuses {
			for _, tr := range allTriggers {
				to, reason, err := Next(from, tr)
				if err != nil {
					continue
				}
				wantReason := to == StatusFailed || tr == CancelTimeout
				if (reason != "") != wantReason {
					t.Errorf("%s on %s: %s with reason %q", tr, from, to, reason)
				}
			}
		}
	})
}

func TestNextReasons(t *testing.T) {
	tests := []struct {
		name    string
		trigger Trigger
		want    Reason
		code    kernel.Code
	}{
		{"Fail keeps the agent's own reason", Fail("tool_crashed"), "tool_crashed", kernel.Code{}},
		{"Fail takes a reason of 64 bytes", Fail(Reason("a" + strings.Repeat("1", 63))), Reason("a" + strings.Repeat("1", 63)), kernel.Code{}},
		{"Fail refuses a reason of 65 bytes", Fail(Reason(strings.Repeat("a", 65))), "", kernel.CodeValidation},
		{"Fail refuses a reason with capitals", Fail("ToolCrashed"), "", kernel.CodeValidation},
		{"Fail refuses a reason with a space", Fail("tool crashed"), "", kernel.CodeValidation},
		{"Fail refuses a reason starting with a digit", Fail("1st"), "", kernel.CodeValidation},
		{"Fail refuses stale, which only the server gives", Fail(ReasonStale), "", kernel.CodeValidation},
		{"Fail refuses agent_unavailable", Fail(ReasonAgentUnavailable), "", kernel.CodeValidation},
		{"Fail refuses interrupted", Fail(ReasonInterrupted), "", kernel.CodeValidation},
		{"Fail refuses cancel_timeout", Fail(ReasonCancelTimeout), "", kernel.CodeValidation},
		{"Fail refuses agent_disabled", Fail(ReasonAgentDisabled), "", kernel.CodeValidation},
		{"Fail refuses permission_revoked", Fail(ReasonPermissionRevoked), "", kernel.CodeValidation},
		{"Fail takes agent_error spelt out", Fail(ReasonAgentError), ReasonAgentError, kernel.Code{}},
		{"Abort keeps permission_revoked", Abort(ReasonPermissionRevoked), ReasonPermissionRevoked, kernel.Code{}},
		{"Abort without a reason is a fault of the server", Abort(""), "", kernel.CodeInternal},
		{"Abort with a malformed reason is a fault of the server", Abort("Agent Disabled"), "", kernel.CodeInternal},
		{"the zero trigger is a fault of the server", Trigger{}, "", kernel.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to, reason, err := Next(StatusRunning, tt.trigger)
			if tt.code == (kernel.Code{}) {
				if err != nil || to != StatusFailed || reason != tt.want {
					t.Fatalf("got %s (%q), %v", to, reason, err)
				}
				return
			}
			if kernel.CodeOf(err) != tt.code || to != StatusRunning || reason != "" {
				t.Fatalf("got %s (%q), %v; want code %s", to, reason, err, tt.code)
			}
		})
	}
	t.Run("a run in an unknown state is a fault of the server", func(t *testing.T) {
		if _, _, err := Next("paused", Start); kernel.CodeOf(err) != kernel.CodeInternal {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("an ended run answers run_ended before looking at the reason", func(t *testing.T) {
		if _, _, err := Next(StatusSucceeded, Fail(ReasonStale)); kernel.CodeOf(err) != CodeRunEnded {
			t.Fatalf("err = %v", err)
		}
	})
}
