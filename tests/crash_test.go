package tests

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// TestCrashLosesNoAcknowledgedWrite kills the server with SIGKILL while eight clients post as
// fast as they can, restarts it on the same data directory and checks that every message that
// was answered 2xx is there, that the log is gapless and that the database is intact (SQLite's
// integrity_check; on both engines the event_seq counter is the head of the log). It runs on
// each engine in turn and is not parallel: the other tests run after it, so the load has the
// machine to itself.
func TestCrashLosesNoAcknowledgedWrite(t *testing.T) {
	onEachEngine(t, false, func(t *testing.T, eng engine) {
		in := mustStartWithOwner(t, eng)
		sp := in.owner.mustCreateSpace(t, "Crash")
		ch := in.owner.mustCreateChannel(t, sp.ID, "load")
		th := in.owner.mustCreateThread(t, ch.ID, "Load", "before the load")

		const writers = 8
		var (
			mu    sync.Mutex
			acked = map[string]string{} // message id → content
			fails int
		)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// At most 20,000 messages each, and never past the deadline, killed or not.
				deadline := time.Now().Add(10 * time.Second)
				for i := 0; i < 20000 && time.Now().Before(deadline); i++ {
					select {
					case <-stop:
						return
					default:
					}
					content := fmt.Sprintf("writer %d message %d", w, i)
					r, err := in.owner.try(t, http.MethodPost, api("threads", th.Thread.ID, "messages"),
						map[string]any{"content": content, "client_msg_id": fmt.Sprintf("w%d-%d", w, i)})
					if err != nil {
						mu.Lock()
						fails++
						mu.Unlock()
						if !in.srv.running() {
							return
						}
						continue
					}
					if r.status == http.StatusCreated || r.status == http.StatusOK {
						var m message
						if err := json.Unmarshal(r.raw, &m); err != nil || m.ID == "" {
							t.Errorf("%s: no message in the answer (%v)", r, err)
							continue
						}
						mu.Lock()
						acked[m.ID] = content
						mu.Unlock()
					} else if r.status != http.StatusServiceUnavailable {
						t.Errorf("%s: want 201 or 503 under load", r)
					}
				}
			}()
		}
		// Kill mid-stream: after at least a second of load and 200 acknowledged messages, or at
		// 4 s whatever the count (a loaded CI machine is slower).
		start := time.Now()
		var before int
		for {
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			before = len(acked)
			mu.Unlock()
			if el := time.Since(start); (el >= time.Second && before >= 200) || el >= 4*time.Second {
				break
			}
		}
		in.srv.kill9(t)
		time.Sleep(300 * time.Millisecond)
		close(stop)
		wg.Wait()
		t.Logf("%d messages acknowledged before the kill, %d in all, %d requests failed", before, len(acked), fails)
		if before < 20 {
			t.Fatalf("only %d messages were acknowledged in %s before the kill: the load did not run", before, time.Since(start).Round(time.Millisecond))
		}

		in.srv.mustRestart(t)
		owner := mustLogin(t, in.srv, "owner", ownerPassword)

		t.Run("every acknowledged message is there after the restart", func(t *testing.T) {
			var all []message
			query := ""
			for range 1000 {
				var pg page[message]
				owner.do(t, http.MethodGet, api("threads", th.Thread.ID, "messages")+"?limit=200"+query, nil).
					want(t, http.StatusOK).decode(t, &pg)
				all = append(pg.Items, all...)
				if !pg.HasMore || len(pg.Items) == 0 {
					break
				}
				query = "&before=" + url.QueryEscape(pg.Items[0].ID)
			}
			have := map[string]string{}
			for _, m := range all {
				have[m.ID] = m.Content
			}
			missing := 0
			for id, content := range acked {
				if got, ok := have[id]; !ok || got != content {
					missing++
					if missing <= 5 {
						t.Errorf("acknowledged message %s (%q) is %q after the restart", id, content, got)
					}
				}
			}
			if missing > 0 {
				t.Errorf("%d of %d acknowledged messages are missing", missing, len(acked))
			}
			// A sample also reads back one by one.
			n := 0
			for id := range acked {
				if n++; n > 20 {
					break
				}
				owner.do(t, http.MethodGet, api("messages", id), nil).want(t, http.StatusOK)
			}
		})

		t.Run("the log counts 1 to head without a gap", func(t *testing.T) {
			events, head := owner.mustAllEvents(t, 0)
			if head < int64(len(acked)) {
				t.Errorf("head_seq %d is below the %d acknowledged messages", head, len(acked))
			}
			if int64(len(events)) != head {
				t.Errorf("%d events for head_seq %d", len(events), head)
			}
			for i, e := range events {
				if e.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d, want %d", i, e.Seq, i+1)
				}
			}
			created := map[string]bool{}
			for _, e := range events {
				if e.Type == "message.created" {
					if id, _ := e.Data["id"].(string); id != "" {
						created[id] = true
					}
				}
			}
			for id := range acked {
				if !created[id] {
					t.Errorf("acknowledged message %s has no message.created event", id)
					break
				}
			}
		})

		var finalHead int64
		t.Run("the server still takes writes after the restart", func(t *testing.T) {
			m := owner.mustPost(t, th.Thread.ID, "after the crash")
			evs, head := owner.mustAllEvents(t, owner.mustHead(t)-1)
			if len(evs) != 1 || evs[0].Type != "message.created" || evs[0].Data["id"] != m.ID {
				t.Errorf("the last event is %+v, want the message.created of %s", evs, m.ID)
			}
			finalHead = head
		})

		t.Run("the database is intact and its counter is the head of the log", func(t *testing.T) {
			if err := in.srv.stop(t); err != nil {
				t.Errorf("bothy serve exited with %v on SIGTERM", err)
			}
			var db *sql.DB
			switch eng {
			case sqliteEngine:
				var err error
				db, err = sql.Open("sqlite", "file:"+filepath.Join(in.srv.dataDir, "bothy.db")+"?mode=ro")
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
			case postgresEngine:
				db = in.srv.mustOpenPostgres(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if eng == sqliteEngine {
				var res string
				if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res); err != nil {
					t.Fatalf("integrity_check: %v", err)
				}
				if res != "ok" {
					t.Errorf("integrity_check: %s", res)
				}
			}
			var counter, maxSeq, rows int64
			if err := db.QueryRowContext(ctx, `SELECT value FROM sequence_counters WHERE name = 'event_seq'`).Scan(&counter); err != nil {
				t.Fatalf("read the event_seq counter: %v", err)
			}
			if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0), COUNT(*) FROM event_log`).Scan(&maxSeq, &rows); err != nil {
				t.Fatalf("read event_log: %v", err)
			}
			if counter != maxSeq || rows != maxSeq || (finalHead != 0 && maxSeq != finalHead) {
				t.Errorf("event_seq counter %d, max(seq) %d, %d rows in event_log, head_seq %d: want all equal",
					counter, maxSeq, rows, finalHead)
			}
		})
	})
}
