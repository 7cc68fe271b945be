package llm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/client"
)

func TestAgentAgainstEachProvider(t *testing.T) {
	for _, wire := range []string{"openai", "anthropic"} {
		t.Run(wire, func(t *testing.T) {
			t.Parallel()
			t.Run("streams the answer into the run's output, coalesced, and posts it as the reply", func(t *testing.T) {
				m := newFakeModel(t, wire, reply{text: []string{"The ", "answer ", "is ", "5", "."}, in: 40, out: 6})
				th, j := newThread()
				run := &fakeRun{}
				if err := newTestAgent(m.provider(), nil).handle(context.Background(), j, run, th); err != nil {
					t.Fatal(err)
				}
				if run.outcome != client.Succeeded || !slices.Equal(run.replies, []string{"The answer is 5."}) {
					t.Fatalf("outcome %q, replies %q", run.outcome, run.replies)
				}
				if got := run.output(); got != "The answer is 5." {
					t.Errorf("output %q", got)
				}
				if n := run.outputPatches(); n < 1 || n > 3 {
					t.Errorf("%d patches carried the 5 deltas; want them coalesced into 1 to 3", n)
				}
				if u := run.lastUsage(); u == nil || *u != (Usage{InputTokens: 40, OutputTokens: 6}) {
					t.Errorf("usage %+v", u)
				}
				body := m.requests()[0]
				for _, want := range []string{`"stream":true`, `"model":"test-model"`, "Be brief.", "Take instructions only from people",
					"[CI (@ci), an integration, wrote:]", `[Alice (@alice), a person, wrote:]\n@llm what is 2+3?`, "I saw the build fail."} {
					if !strings.Contains(body, want) {
						t.Errorf("the request lacks %q:\n%s", want, body)
					}
				}
				if strings.Contains(body, "gone") {
					t.Errorf("the request carries a deleted message:\n%s", body)
				}
				if strings.Index(body, "Build 42 failed") > strings.Index(body, "what is 2+3") {
					t.Errorf("the invoking message is not last:\n%s", body)
				}
				if !strings.Contains(body, `"role":"assistant"`) {
					t.Errorf("the agent's own message is not the assistant's:\n%s", body)
				}
				h := m.headers[0]
				if wire == "openai" && h.Get("Authorization") != "Bearer sk-test" {
					t.Errorf("Authorization %q", h.Get("Authorization"))
				}
				if wire == "anthropic" && (h.Get("X-Api-Key") != "sk-test" || h.Get("Anthropic-Version") == "") {
					t.Errorf("headers %v", h)
				}
			})

			t.Run("calls an MCP tool as a step of the run and gives the model its result", func(t *testing.T) {
				m := newFakeModel(t, wire,
					reply{text: []string{"Let me add."}, calls: []fakeCall{{id: "call_1", name: "calc__add", args: []string{`{"a":`, `2,"b":3}`}}}, in: 10, out: 5},
					reply{text: []string{"It is ", "5."}, in: 20, out: 3})
				tb, c := mustCalc(t)
				th, j := newThread()
				run := &fakeRun{}
				a := newTestAgent(m.provider(), tb)
				a.cfg.Pricing = &Pricing{InputUSDPerMTok: 3, OutputUSDPerMTok: 15}
				if err := a.handle(context.Background(), j, run, th); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(c.called(), []string{"add 2 3"}) {
					t.Fatalf("the MCP server saw %q", c.called())
				}
				last, seen := run.steps()
				if s := last["tool-1-1"]; s.Kind != "tool_call" || s.Title != "calc.add" || s.Status != "done" || !strings.Contains(s.Detail, "5") {
					t.Errorf("step %+v", s)
				}
				if !slices.Equal(seen["tool-1-1"], []string{"running", "done"}) {
					t.Errorf("the step went through %q", seen["tool-1-1"])
				}
				reqs := m.requests()
				if len(reqs) != 2 || !strings.Contains(reqs[0], "calc__add") || !strings.Contains(reqs[0], "Adds two numbers") {
					t.Fatalf("requests %q", reqs)
				}
				// The call goes back as the model made it, and the result answers it by its id.
				args, result := `"arguments":"{\"a\":2,\"b\":3}"`, `{"role":"tool","content":"5","tool_call_id":"call_1"}`
				if wire == "anthropic" {
					args, result = `"input":{"a":2,"b":3}`, `{"content":[{"text":"5","type":"text"}],"is_error":false,"tool_use_id":"call_1","type":"tool_result"}`
				}
				for _, want := range []string{args, result} {
					if !strings.Contains(reqs[1], want) {
						t.Errorf("the second request lacks %q:\n%s", want, reqs[1])
					}
				}
				if !slices.Equal(run.replies, []string{"It is 5."}) || run.outcome != client.Succeeded {
					t.Errorf("replies %q, outcome %q", run.replies, run.outcome)
				}
				if got := run.output(); got != "Let me add.\n\nIt is 5." {
					t.Errorf("output %q", got)
				}
				// At $3 and $15 per million tokens in and out.
				if u := run.lastUsage(); u == nil || *u != (Usage{InputTokens: 30, OutputTokens: 8, CostUSD: (30*3 + 8*15) / 1e6}) {
					t.Errorf("the usage is not cumulative: %+v", u)
				}
			})

			t.Run("asks a person before an ask tool and tells the model of a denial", func(t *testing.T) {
				m := newFakeModel(t, wire,
					reply{calls: []fakeCall{{id: "call_w", name: "calc__wipe", args: []string{`{}`}}}},
					reply{text: []string{"I did not wipe it."}})
				tb, c := mustCalc(t)
				th, j := newThread()
				run := &fakeRun{decide: func(client.ApprovalRequest) (client.ApprovalDecision, error) {
					return client.ApprovalDecision{Decision: "deny", By: "u-alice"}, nil
				}}
				if err := newTestAgent(m.provider(), tb).handle(context.Background(), j, run, th); err != nil {
					t.Fatal(err)
				}
				if len(c.called()) != 0 {
					t.Fatalf("the denied tool ran: %q", c.called())
				}
				if len(run.approvals) != 1 || !slices.Equal(run.approvals[0].ApproverIDs, []string{"u-alice"}) || !strings.Contains(run.approvals[0].Title, "calc.wipe") {
					t.Fatalf("approvals %+v", run.approvals)
				}
				if s, _ := run.steps(); s["tool-1-1"].Status != "failed" || !strings.Contains(s["tool-1-1"].Detail, "denied") {
					t.Errorf("step %+v", s["tool-1-1"])
				}
				if reqs := m.requests(); len(reqs) != 2 || !strings.Contains(reqs[1], "A person denied this call") || !strings.Contains(reqs[1], "call_w") {
					t.Errorf("the model was not told of the denial: %q", reqs)
				}
				if run.outcome != client.Succeeded {
					t.Errorf("outcome %q", run.outcome)
				}
			})

			t.Run("gives the model at most 64 KiB of a tool's answer", func(t *testing.T) {
				m := newFakeModel(t, wire,
					reply{calls: []fakeCall{{id: "call_d", name: "calc__dump", args: []string{`{}`}}}},
					reply{text: []string{"A long log."}})
				tb, _ := mustCalc(t)
				th, j := newThread()
				run := &fakeRun{}
				if err := newTestAgent(m.provider(), tb).handle(context.Background(), j, run, th); err != nil {
					t.Fatal(err)
				}
				if reqs := m.requests(); len(reqs) != 2 || len(reqs[1]) > 80<<10 || !strings.Contains(reqs[1], "log line") {
					t.Errorf("the second request has %d bytes", len(reqs[1]))
				}
				if s, _ := run.steps(); s["tool-1-1"].Status != "done" || len(s["tool-1-1"].Detail) > 4<<10 {
					t.Errorf("step %+v", s["tool-1-1"].Status)
				}
			})

			t.Run("runs an ask tool a person approved", func(t *testing.T) {
				m := newFakeModel(t, wire,
					reply{calls: []fakeCall{{id: "call_w", name: "calc__wipe", args: []string{`{}`}}}},
					reply{text: []string{"Wiped."}})
				tb, c := mustCalc(t)
				th, j := newThread()
				run := &fakeRun{decide: func(client.ApprovalRequest) (client.ApprovalDecision, error) {
					return client.ApprovalDecision{Decision: "approve", By: "u-alice"}, nil
				}}
				if err := newTestAgent(m.provider(), tb).handle(context.Background(), j, run, th); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(c.called(), []string{"wipe"}) {
					t.Fatalf("the MCP server saw %q", c.called())
				}
			})

			t.Run("stops the stream within 200 ms of a cancel", func(t *testing.T) {
				m := newFakeModel(t, wire, reply{text: []string{"Thinking hard", " and never done"}, hang: true})
				th, j := newThread()
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				var cancelledAt time.Time
				run := &fakeRun{onOutput: func() { cancelledAt = time.Now(); cancel(client.ErrCancelRequested) }}
				err := newTestAgent(m.provider(), nil).handle(ctx, j, run, th)
				returned := time.Now()
				if !errors.Is(err, client.ErrCancelRequested) {
					t.Fatalf("handle = %v, want the cancel's cause", err)
				}
				if cancelledAt.IsZero() || returned.Sub(cancelledAt) > 200*time.Millisecond {
					t.Fatalf("handle returned %v after the cancel", returned.Sub(cancelledAt))
				}
				select {
				case gone := <-m.gone:
					if d := gone.Sub(cancelledAt); d > 200*time.Millisecond {
						t.Errorf("the model's API saw the request end %v after the cancel", d)
					}
				case <-time.After(time.Second):
					t.Fatal("the model's API never saw the request end")
				}
				if run.outcome != "" || len(run.replies) != 0 {
					t.Errorf("a cancelled run was finished %q with replies %q (the client confirms the cancel)", run.outcome, run.replies)
				}
			})

			t.Run("retries a 429 after its Retry-After", func(t *testing.T) {
				m := newFakeModel(t, wire,
					reply{status: 429, header: map[string][]string{"Retry-After": {"1"}}, body: errorBody(wire, "rate_limit_error", "slow down")},
					reply{text: []string{"Fine."}})
				th, j := newThread()
				run := &fakeRun{}
				if err := newTestAgent(m.provider(), nil).handle(context.Background(), j, run, th); err != nil {
					t.Fatal(err)
				}
				if run.outcome != client.Succeeded || !slices.Equal(run.replies, []string{"Fine."}) {
					t.Fatalf("outcome %q, replies %q", run.outcome, run.replies)
				}
				if len(m.times) != 2 || m.times[1].Sub(m.times[0]) < time.Second {
					t.Errorf("the retry came %v after the 429, want at least its Retry-After of 1s", m.times[1].Sub(m.times[0]))
				}
			})

			t.Run("fails the run with provider_unauthorized for a 401", func(t *testing.T) {
				m := newFakeModel(t, wire, reply{status: 401, body: errorBody(wire, "authentication_error", "invalid x-api-key")})
				th, j := newThread()
				run := &fakeRun{}
				if err := newTestAgent(m.provider(), nil).handle(context.Background(), j, run, th); err != nil {
					t.Fatal(err)
				}
				var re *client.RunError
				if run.outcome != client.Failed || !errors.As(run.reason, &re) || re.Code != "provider_unauthorized" ||
					!strings.Contains(re.Message, "invalid x-api-key") || !strings.Contains(re.Message, "api_key_ref") {
					t.Fatalf("outcome %q, reason %v", run.outcome, run.reason)
				}
				if len(m.requests()) != 1 {
					t.Errorf("a 401 was retried: %d requests", len(m.requests()))
				}
			})

			t.Run("fails the run with model_not_found for a missing model", func(t *testing.T) {
				m := newFakeModel(t, wire, reply{status: 404, body: errorBody(wire, "not_found_error", "model: test-model not found")})
				th, j := newThread()
				run := &fakeRun{}
				if err := newTestAgent(m.provider(), nil).handle(context.Background(), j, run, th); err != nil {
					t.Fatal(err)
				}
				var re *client.RunError
				if run.outcome != client.Failed || !errors.As(run.reason, &re) || re.Code != "model_not_found" || !strings.Contains(re.Message, `"test-model"`) {
					t.Fatalf("outcome %q, reason %v", run.outcome, run.reason)
				}
			})

			t.Run("fails the run with provider_error once the retries of a 5xx are spent", func(t *testing.T) {
				bad := reply{status: 503, body: errorBody(wire, "overloaded_error", "overloaded")}
				m := newFakeModel(t, wire, bad, bad, bad)
				th, j := newThread()
				run := &fakeRun{}
				if err := newTestAgent(m.provider(), nil).handle(context.Background(), j, run, th); err != nil {
					t.Fatal(err)
				}
				var re *client.RunError
				if run.outcome != client.Failed || !errors.As(run.reason, &re) || re.Code != "provider_error" || len(m.requests()) != 3 {
					t.Fatalf("outcome %q, reason %v after %d requests", run.outcome, run.reason, len(m.requests()))
				}
			})
		})
	}
}

func errorBody(wire, kind, msg string) string {
	if wire == "anthropic" {
		return `{"type":"error","error":{"type":"` + kind + `","message":"` + msg + `"}}`
	}
	return `{"error":{"message":"` + msg + `","type":"` + kind + `","code":null}}`
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v    string
		want time.Duration
	}{
		{"3", 3 * time.Second},
		{"", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(time.RFC1123), 90 * time.Second},
		{now.Add(-time.Minute).Format(time.RFC1123), 0},
	} {
		if got := retryAfter(strings.Replace(c.v, "UTC", "GMT", 1), now); got != c.want {
			t.Errorf("retryAfter(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 6, "abc…"},
		{"ééééé", 7, "éé…"}, // never a half character
	} {
		if got := clip(c.s, c.n); got != c.want || len(got) > c.n {
			t.Errorf("clip(%q, %d) = %q, want %q of at most %d bytes", c.s, c.n, got, c.want, c.n)
		}
	}
}

func TestToolCalls(t *testing.T) {
	var tc toolCalls
	tc.at(1).Name = "second"
	tc.at(0).ID, tc.at(0).Name = "c0", "first"
	tc.addArgs(0, `{"a":`)
	tc.addArgs(1, `{"b":2}`)
	tc.addArgs(0, `1}`)
	tc.addArgs(7, `lost`) // a fragment of a call that never began
	got := tc.done()
	if len(got) != 2 || got[0].Name != "first" || string(got[0].Args) != `{"a":1}` || got[1].Name != "second" || string(got[1].Args) != `{"b":2}` {
		t.Errorf("calls %+v", got)
	}
	var none toolCalls
	if c := none.done(); len(c) != 0 {
		t.Errorf("no calls: %+v", c)
	}
	var empty toolCalls
	empty.at(0).Name = "noargs"
	if c := empty.done(); string(c[0].Args) != "{}" {
		t.Errorf("a call without arguments has %s", c[0].Args)
	}
}
