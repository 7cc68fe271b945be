package gatewaybench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"bothy.dev/bothy/bench/internal/fixture"
)

func TestStampRoundTrips(t *testing.T) {
	due := time.Unix(1_780_000_000, 123456789)
	body := stampedContent(nil, due, 42)
	var content string
	if err := json.Unmarshal(body, &content); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(content, fixture.Content) {
		t.Fatalf("content %q does not end with the fixture's body", content)
	}
	payload, _ := json.Marshal(map[string]any{"id": "m1", "content": content, "mentions": []string{}})
	for name, data := range map[string][]byte{
		"as the server writes it": payload,
		"with spaces (decoded)":   []byte(`{"id": "m1", "content": ` + string(body) + `}`),
	} {
		n, i, ok := readStamp(data)
		if !ok || n != due.UnixNano() || i != 42 {
			t.Errorf("%s: readStamp = %d, %d, %v", name, n, i, ok)
		}
	}
	for _, bad := range []string{`{"content":"hello"}`, `{"content":"t=12 i=x "}`, `{"content":"t= i=1 "}`, `{"content":"t=5 i=1"}`, `not json`} {
		if _, _, ok := readStamp([]byte(bad)); ok {
			t.Errorf("readStamp(%s) took it for a stamp", bad)
		}
	}
}

func TestLedgerCountsEachMessageOnce(t *testing.T) {
	start := time.Unix(100, 0)
	l := newLedger(4, 2)
	for _, i := range []int{0, 1, 2, 3} {
		l.record(start.UnixNano(), i, start.Add(time.Second), start.Add(time.Duration(i+1)*time.Second))
	}
	if err := l.check(); err != nil {
		t.Fatal(err)
	}
	if len(l.lat) != 2 || l.lat[0] != 3*time.Second || l.lat[1] != 4*time.Second {
		t.Fatalf("measured latencies %v, want those of messages 2 and 3", l.lat)
	}
	if len(l.fromLog) != 2 || l.fromLog[0] != 2*time.Second {
		t.Fatalf("latencies from the log %v, want 2 s and 3 s", l.fromLog)
	}
	if r := l.rate(start); r != 1 { // 4 messages in the 4 s from the first due to the last receipt
		t.Fatalf("rate %v, want 1", r)
	}

	l.record(start.UnixNano(), 2, time.Time{}, start)
	if err := l.check(); err == nil || !strings.Contains(err.Error(), "1 twice") {
		t.Fatalf("a duplicate gives %v", err)
	}
	short := newLedger(3, 0)
	short.record(start.UnixNano(), 1, time.Time{}, start)
	if err := short.check(); err == nil || !strings.Contains(err.Error(), "missing 0 2") {
		t.Fatalf("missing messages give %v", err)
	}
	short = newLedger(1, 0)
	short.record(start.UnixNano(), 0, time.Time{}, start)
	short.record(start.UnixNano(), 7, time.Time{}, start)
	if err := short.check(); err == nil || !strings.Contains(err.Error(), "1 unknown") {
		t.Fatalf("a message of another run gives %v", err)
	}
}

func TestPlanSchedulesTheWarmupApart(t *testing.T) {
	p, err := NewPlan(500, time.Second, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p.Interval != 2*time.Millisecond || p.Total != 5500 || p.MeasureFrom != 500 {
		t.Fatalf("plan %+v", p)
	}
	if p, _ := NewPlan(3, 500*time.Millisecond, time.Second); p.MeasureFrom != 2 || p.Total != 4 {
		t.Fatalf("a warm-up that is not a whole number of intervals: %+v", p)
	}
	for _, bad := range [][3]float64{{0, 1, 1}, {1, 1, 0}, {1e12, 0, 1}, {1, 1, 0.5}} {
		if _, err := NewPlan(bad[0], time.Duration(bad[1]*float64(time.Second)), time.Duration(bad[2]*float64(time.Second))); err == nil {
			t.Errorf("NewPlan(%v) accepted", bad)
		}
	}
}

func TestCursorBeforeLeavesExactlyN(t *testing.T) {
	seqs := []int64{3, 5, 8, 13, 21}
	c, want, err := cursorBefore(seqs, 3)
	if err != nil || c != 5 || len(want) != 3 || want[0] != 8 || want[2] != 21 {
		t.Fatalf("cursorBefore = %d, %v, %v", c, want, err)
	}
	if _, _, err := cursorBefore(seqs, 5); err == nil {
		t.Fatal("a replay of every event needs a cursor before the first")
	}
}

// TestOfferPostsEveryMessageOnTime runs the open-loop poster against a fake message create
// that checks the stamps, and checks that it posts each message once, round-robin.
func TestOfferPostsEveryMessageOnTime(t *testing.T) {
	var (
		mu      sync.Mutex
		seen    = map[int]string{}
		threads = map[string]int{}
		authors = map[string]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Content     string `json:"content"`
			ClientMsgID string `json:"client_msg_id"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		due, i, ok := parseStamp([]byte(in.Content))
		if !ok || time.Since(time.Unix(0, due)) < 0 {
			http.Error(w, "no stamp, or one from the future", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, dup := seen[i]; dup {
			w.WriteHeader(http.StatusOK)
			return
		}
		seen[i] = in.ClientMsgID
		threads[strings.Split(r.URL.Path, "/")[4]]++
		authors[r.Header.Get("Authorization")]++
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	p, err := newPoster(srv.Client(), srv.URL, []string{"a", "b"}, []string{"t1", "t2", "t3"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := NewPlan(1000, 50*time.Millisecond, 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	off, err := offer(context.Background(), p, plan, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != plan.Total || threads["a"] != plan.Total/2 || authors["Bearer t1"] < plan.Total/3 {
		t.Fatalf("%d messages of %d, by thread %v, by author %v", len(seen), plan.Total, threads, authors)
	}
	if off.Create.N != plan.Total-plan.MeasureFrom || off.Start.IsZero() {
		t.Fatalf("offered %+v", off)
	}
	ids := map[string]bool{}
	for _, id := range seen {
		if ids[id] || !bytes.HasPrefix([]byte(id), p.run) {
			t.Fatalf("client_msg_id %q repeated or not of this run", id)
		}
		ids[id] = true
	}
}

func TestOfferStopsAtTheFirstRefusal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"code":"forbidden"}`, http.StatusForbidden)
	}))
	defer srv.Close()
	p, _ := newPoster(srv.Client(), srv.URL, []string{"a"}, []string{"t"})
	plan, _ := NewPlan(1000, 0, 100*time.Millisecond)
	if _, err := offer(context.Background(), p, plan, 2); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("offer = %v, want the 403", err)
	}
}
