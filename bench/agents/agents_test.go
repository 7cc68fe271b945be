package agentsbench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"bothy.dev/bothy/app/gateway"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/runs"
	gatewaybench "bothy.dev/bothy/bench/gateway"
)

// runUpdated is a run.updated frame as app/gateway's runUpdatedFrame writes it: a patch from
// base to version, or (base < 0) the document whole.
func runUpdated(t testing.TB, run string, base, version int) []byte {
	t.Helper()
	type data struct {
		RunID       string         `json:"run_id"`
		ThreadID    string         `json:"thread_id"`
		ChannelID   string         `json:"channel_id"`
		BaseVersion *int           `json:"base_version"`
		Version     int            `json:"version"`
		Patch       *runs.Patch    `json:"patch"`
		Document    *runs.Document `json:"document"`
	}
	d := data{RunID: run, ThreadID: "th", ChannelID: "ch", Version: version}
	status := `says "version": 99`
	if base >= 0 {
		d.BaseVersion, d.Patch = &base, &runs.Patch{Version: version, Status: &status, OutputAppend: `x "version":1 `}
	} else {
		d.Document = &runs.Document{Version: version, Status: status, Output: `{"version":1}`}
	}
	b, err := json.Marshal(struct {
		Op string `json:"op"`
		D  any    `json:"d"`
	}{"event", struct {
		Type string `json:"type"`
		Data data   `json:"data"`
	}{"run.updated", d}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRunUpdatedReadsTheFramesTheServerWrites(t *testing.T) {
	for _, tc := range []struct {
		name          string
		frame         []byte
		isRun         bool
		base, version int64
		err           string
	}{
		{"a coalesced patch", runUpdated(t, "r1", 3, 5), true, 3, 5, ""},
		{"a snapshot", runUpdated(t, "r1", -1, 7), true, -1, 7, ""},
		{"the first patch", runUpdated(t, "r1", 0, 1), true, 0, 1, ""},
		{"another ephemeral event", []byte(`{"op":"event","d":{"type":"presence.updated","data":{"principal_id":"q","status":"online"}}}`), false, 0, 0, ""},
		{"a logged event", gateway.EventFrame(kernel.LoggedEvent{Seq: 4, Type: "run.state_changed", Payload: []byte(`{"version":3}`), CreatedAt: time.Now()}), false, 0, 0, ""},
		{"no version", []byte(`{"op":"event","d":{"type":"run.updated","data":{"run_id":"r1","base_version":null}}}`), true, 0, 0, "without version"},
		{"a version not above its base", []byte(`{"op":"event","d":{"type":"run.updated","data":{"run_id":"r1","base_version":4,"version":4}}}`), true, 0, 0, "from base_version 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, isRun, err := parseRunUpdated(tc.frame)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseRunUpdated = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || isRun != tc.isRun {
				t.Fatalf("parseRunUpdated = %v, %v", isRun, err)
			}
			if isRun && (string(u.runID) != "r1" || u.base != tc.base || u.version != tc.version) {
				t.Fatalf("read run %s from %d to %d, want r1 from %d to %d", u.runID, u.base, u.version, tc.base, tc.version)
			}
		})
	}
}

func TestRunLedgerWantsEveryVersionOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames [][2]int64 // base (-1: snapshot), version
		err    string
	}{
		{"patches one by one and coalesced", [][2]int64{{0, 1}, {1, 4}, {4, 5}}, ""},
		{"a snapshot that jumps", [][2]int64{{0, 1}, {-1, 4}, {4, 5}}, ""},
		{"fails versions that never arrived", [][2]int64{{0, 1}, {2, 4}}, "versions 2 to 2 never arrived"},
		{"fails a version twice", [][2]int64{{0, 2}, {-1, 2}}, "version 2 after version 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l runLedger
			var err error
			for k, f := range tc.frames {
				if err = l.record(runUpdate{base: f[0], version: f[1]}, int64(100*(k+1))); err != nil {
					break
				}
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("record = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]int64{"patches one by one and coalesced": {0, 100, 200, 200, 200, 300}, "a snapshot that jumps": {0, 100, 200, 200, 200, 300}}[tc.name]
			if fmt.Sprint(l.firstAt) != fmt.Sprint(want) || l.have != 5 {
				t.Fatalf("first receipts %v at version %d, want %v at 5", l.firstAt, l.have, want)
			}
		})
	}
}

func TestJoinInvocationsCountsEachTriggerOnce(t *testing.T) {
	plan := gatewaybench.Plan{Interval: 10 * time.Millisecond, Total: 10, MeasureFrom: 4}
	start := time.Unix(1000, 0)
	p := &poster{every: 5, ids: []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}}
	off := offered{start: start, create: make([]time.Duration, 10)}
	inv := func(run string, i int) invocation {
		due := start.Add(time.Duration(i) * plan.Interval)
		return invocation{RunID: run, MessageID: p.ids[i], At: due.Add(3 * time.Millisecond), Logged: due.Add(time.Millisecond)}
	}
	for _, tc := range []struct {
		name string
		got  map[string][]invocation
		err  string
	}{
		{"measures the triggers due after the warm-up", map[string][]invocation{"m0": {inv("r0", 0)}, "m5": {inv("r5", 5)}}, ""},
		{"fails a lost invocation", map[string][]invocation{"m0": {inv("r0", 0)}}, "no invocation for 1"},
		{"fails an invocation twice", map[string][]invocation{"m0": {inv("r0", 0)}, "m5": {inv("r5", 5), inv("r5", 5)}}, "2 invocations"},
		{"fails an invocation of an ordinary message", map[string][]invocation{"m0": {inv("r0", 0)}, "m5": {inv("r5", 5)}, "m6": {inv("r6", 6)}}, "mentions no agent"},
		{"fails one run for two messages", map[string][]invocation{"m0": {inv("r0", 0)}, "m5": {inv("r0", 5)}}, "two messages"},
		{"fails an invocation of another message", map[string][]invocation{"m0": {inv("r0", 0)}, "m5": {inv("r5", 5)}, "x": {{RunID: "rx", MessageID: "x"}}}, "did not make"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lat, fromLog, _, err := joinInvocations(p, plan, off, tc.got)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("join = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(lat) != 1 || lat[0] != 3*time.Millisecond || fromLog[0] != 2*time.Millisecond {
				t.Fatalf("measured %v and from the log %v, want message 5's 3 ms and 2 ms", lat, fromLog)
			}
		})
	}
}

// fakeREST answers message creates with 201, a new id and the trigger_state state gives for the
// content; it counts the creates that mention the agent.
func fakeREST(t *testing.T, state func(content string) any) (string, *atomic.Int64) {
	t.Helper()
	var n, mentions atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Content string }
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/messages") || json.NewDecoder(r.Body).Decode(&in) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if strings.HasPrefix(in.Content, "@"+Handle+" ") {
			mentions.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("m%d", n.Add(1)), "trigger_state": state(in.Content)})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &mentions
}

func TestOfferMentionsTheAgentInOneOfEvery(t *testing.T) {
	triggered := func(content string) any {
		if strings.HasPrefix(content, "@"+Handle) {
			return "triggered"
		}
		return nil
	}
	plan := gatewaybench.Plan{Interval: time.Millisecond, Total: 20, MeasureFrom: 5}
	t.Run("posts every message and keeps its id", func(t *testing.T) {
		base, mentions := fakeREST(t, triggered)
		p, err := newPoster(http.DefaultClient, base, []string{"a", "b"}, []string{"tok"}, Handle, 5, plan.Total)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := offer(context.Background(), p, plan, 4); err != nil {
			t.Fatal(err)
		}
		if mentions.Load() != 4 {
			t.Fatalf("%d mentions of the agent, want 4 of 20", mentions.Load())
		}
		for i, id := range p.ids {
			if id == "" {
				t.Fatalf("no id kept for message %d", i)
			}
		}
	})
	t.Run("fails a mention the server did not take for a trigger", func(t *testing.T) {
		base, _ := fakeREST(t, func(string) any { return "no_invoke_right" })
		p, err := newPoster(http.DefaultClient, base, []string{"a"}, []string{"tok"}, Handle, 5, plan.Total)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := offer(context.Background(), p, plan, 4); err == nil || !strings.Contains(err.Error(), "no_invoke_right") {
			t.Fatalf("offer = %v, want the trigger_state refused", err)
		}
	})
}

// fakeGateway says hello, checks identify and plays script, then reads until the client closes,
// handing every frame the client sends to got.
func fakeGateway(t *testing.T, script func(ctx context.Context, ws *websocket.Conn) error, got func(string)) string {
	t.Helper()
	var handlers sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		if err := ws.Write(ctx, websocket.MessageText, []byte(`{"op":"hello","d":{"heartbeat_interval_ms":30000}}`)); err != nil {
			t.Error(err)
			return
		}
		if _, b, err := ws.Read(ctx); err != nil || !strings.HasPrefix(string(b), `{"op":"identify"`) {
			t.Errorf("identify: %s, %v", b, err)
			return
		}
		if err := script(ctx, ws); err != nil {
			t.Error(err)
			return
		}
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			got(string(b))
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(handlers.Wait)
	return srv.URL
}

func write(ctx context.Context, ws *websocket.Conn, frames ...[]byte) error {
	for _, f := range frames {
		if err := ws.Write(ctx, websocket.MessageText, f); err != nil {
			return err
		}
	}
	return nil
}

var (
	readyFrame    = []byte(`{"op":"ready","d":{"session_id":"s","principal":{"id":"a","kind":"agent","handle":"benchagent","is_owner":false},"head_seq":9,"acked_seq":9}}`)
	completeFrame = []byte(`{"op":"catchup.complete","d":{"head_seq":9}}`)
)

func logged(seq int64, typ, payload string) []byte {
	return gateway.EventFrame(kernel.LoggedEvent{Seq: seq, Type: typ, Payload: []byte(payload), CreatedAt: time.Now()})
}

func TestConsumerHandsOverEachInvocationAndAcks(t *testing.T) {
	old := ackInterval
	ackInterval = 5 * time.Millisecond
	t.Cleanup(func() { ackInterval = old })
	acks := make(chan string, 16)
	base := fakeGateway(t, func(ctx context.Context, ws *websocket.Conn) error {
		return write(ctx, ws, readyFrame, completeFrame,
			logged(10, "message.created", `{"id":"m1","content":"@benchagent hi"}`),
			logged(11, "agent.invocation", `{"run_id":"r1","agent_id":"a","thread_id":"th","message_id":"m1","invocation_token":"tok","expires_at":"2026-01-01T00:00:00Z"}`))
	}, func(f string) { acks <- f })
	got := make(chan invocation, 4)
	k, err := connectConsumer(context.Background(), base, "agent-token", func(inv invocation) error { got <- inv; return nil })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case inv := <-got:
		if inv.RunID != "r1" || inv.MessageID != "m1" || inv.Token != "tok" || inv.Seq != 11 || inv.At.IsZero() || inv.Logged.IsZero() {
			t.Fatalf("invocation %+v", inv)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no invocation within 5 s")
	}
	for deadline := time.After(5 * time.Second); ; {
		select {
		case a := <-acks:
			if a == `{"op":"ack","d":{"seq":11}}` {
				if err := k.stop(); err != nil {
					t.Fatal(err)
				}
				return
			}
		case <-deadline:
			t.Fatal("no ack of seq 11 within 5 s")
		}
	}
}

func TestWatcherFocusesAndRecordsEveryVersion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames [][]byte
		err    string
	}{
		{"records patches and a snapshot, other events aside", [][]byte{runUpdated(t, "r1", 0, 1), logged(12, "message.created", `{}`), runUpdated(t, "r1", 1, 3), runUpdated(t, "r1", -1, 4)}, ""},
		{"fails a run it did not start", [][]byte{runUpdated(t, "r9", 0, 1)}, "did not start"},
		{"fails a lost version", [][]byte{runUpdated(t, "r1", 0, 1), runUpdated(t, "r1", 2, 4)}, "never arrived"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			focused := make(chan string, 1)
			base := fakeGateway(t, func(ctx context.Context, ws *websocket.Conn) error {
				if err := write(ctx, ws, readyFrame, completeFrame); err != nil {
					return err
				}
				_, b, err := ws.Read(ctx)
				if err != nil {
					return err
				}
				focused <- string(b)
				return write(ctx, ws, tc.frames...)
			}, func(string) {})
			var idx atomic.Pointer[runIndex]
			idx.Store(&runIndex{"r1": 0})
			w, err := focusOne(context.Background(), base, "tok", []byte(`{"op":"focus","d":{"thread_id":"th"}}`), 1, &idx)
			if err != nil {
				t.Fatal(err)
			}
			if f := <-focused; f != `{"op":"focus","d":{"thread_id":"th"}}` {
				t.Fatalf("the client sent %s after catchup.complete, want focus", f)
			}
			var failed error
			for deadline := time.Now().Add(5 * time.Second); w.have[0].Load() < 4 && failed == nil; time.Sleep(time.Millisecond) {
				failed = w.r.Failed()
				if time.Now().After(deadline) {
					t.Fatalf("the client has version %d after 5 s", w.have[0].Load())
				}
			}
			w.c.Close()
			<-w.r.Done()
			if tc.err != "" {
				if failed == nil || !strings.Contains(failed.Error(), tc.err) {
					t.Fatalf("the client ended with %v, want an error with %q", failed, tc.err)
				}
				return
			}
			if w.r.Err() != nil || len(w.ledgers[0].firstAt) != 5 || w.frames.Load() != 3 {
				t.Fatalf("client error %v, receipts %v, %d frames", w.r.Err(), w.ledgers[0].firstAt, w.frames.Load())
			}
		})
	}
}
