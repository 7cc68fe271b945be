package tests

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"bothy.dev/bothy/storage/storetest/pgdb"
)

// TestMoveFromSQLiteToPostgres moves an instance the way the README tells an operator to: stop
// bothy on SQLite, `bothy migrate copy` into a new, migrated PostgreSQL database, start bothy on
// PostgreSQL. Nothing changes for the users: passwords, sessions and tokens still work, and a
// client that remembered a cursor before the move reads exactly the events that followed it.
// It needs PostgreSQL, so without pgdb.EnvURL it is skipped.
func TestMoveFromSQLiteToPostgres(t *testing.T) {
	t.Parallel()
	pgdb.URL(t)

	in := mustStartWithOwner(t, sqliteEngine)
	bob, bobClient := in.mustCreateUser(t, uniqueName("bob"))
	sp := in.owner.mustCreateSpace(t, "Moving")
	ch := in.owner.mustCreateChannel(t, sp.ID, "boxes")
	in.owner.mustGrant(t, ch.ID, bob.ID, "post")
	th := in.owner.mustCreateThread(t, ch.ID, "Before the move", "packed")
	var tok apiToken
	in.owner.do(t, http.MethodPost, api("tokens"), map[string]any{"name": "mover"}).
		want(t, http.StatusCreated).decode(t, &tok)
	var posted []message
	for i := range 6 {
		posted = append(posted, bobClient.mustPost(t, th.Thread.ID, fmt.Sprintf("box %d", i)))
	}
	// An edit, a reaction and a deletion, so that the log holds more than creations.
	bobClient.do(t, http.MethodPatch, api("messages", posted[1].ID), map[string]any{"content": "box 1, relabelled"}).
		want(t, http.StatusOK)
	in.owner.do(t, http.MethodPut, api("messages", posted[2].ID, "reactions", "%F0%9F%93%A6"), nil).
		want(t, http.StatusNoContent)
	bobClient.do(t, http.MethodDelete, api("messages", posted[3].ID), nil).want(t, http.StatusNoContent)

	head := in.owner.mustHead(t)
	cursor := head / 2
	eventsBefore := mustAllRawEvents(t, in.owner, cursor)
	if int64(len(eventsBefore)) != head-cursor {
		t.Fatalf("%d events after the cursor %d, head %d", len(eventsBefore), cursor, head)
	}
	messagesBefore := in.owner.do(t, http.MethodGet, api("threads", th.Thread.ID, "messages"), nil).want(t, http.StatusOK)
	meBefore := bobClient.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK)

	if err := in.srv.stop(t); err != nil {
		t.Fatalf("bothy serve on SQLite exited with %v on SIGTERM, want exit 0", err)
	}
	dbFile := filepath.Join(in.srv.dataDir, "bothy.db")
	sumBefore := mustFileSum(t, dbFile)

	dbURL := mustPostgresDatabase(t)
	mustMigrateUp(t, dbURL)
	copyArgs := []string{"migrate", "copy", "--data-dir", in.srv.dataDir, "--to-url-ref", "env:" + dbURLEnv}

	t.Run("migrate copy copies the instance and prints the rows and the head seq", func(t *testing.T) {
		res := runBothy(t, envWithDatabase(dbURL), copyArgs...)
		if res.code != 0 {
			t.Fatalf("bothy migrate copy exited with %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
		}
		m := regexp.MustCompile(`^copied\t(\d+)\thead\t(\d+)\n$`).FindStringSubmatch(res.stdout)
		if m == nil {
			t.Fatalf("stdout %q, want copied<TAB>rows<TAB>head<TAB>seq", res.stdout)
		}
		if h, _ := strconv.ParseInt(m[2], 10, 64); h != head {
			t.Errorf("migrate copy reports head %d, the server's head_seq was %d", h, head)
		}
		if rows, _ := strconv.ParseInt(m[1], 10, 64); rows < head {
			t.Errorf("migrate copy reports %d rows, fewer than the %d events alone", rows, head)
		}
		if leaksURL(res.stdout + res.stderr) {
			t.Errorf("migrate copy printed the database URL:\n%s%s", res.stdout, res.stderr)
		}
	})
	t.Run("the SQLite database stays as it was", func(t *testing.T) {
		if sum := mustFileSum(t, dbFile); !bytes.Equal(sum, sumBefore) {
			t.Errorf("%s changed during migrate copy", dbFile)
		}
	})
	t.Run("a second copy into the same database is refused with 1", func(t *testing.T) {
		res := runBothy(t, envWithDatabase(dbURL), copyArgs...)
		if res.code != 1 || res.stdout != "" {
			t.Errorf("a second migrate copy exited with %d, stdout %q; want 1 and nothing on stdout\nstderr:\n%s", res.code, res.stdout, res.stderr)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	moved := &server{eng: postgresEngine, dataDir: in.srv.dataDir, dbURL: dbURL}
	moved.mustBoot(t, false)
	// The clients keep their tokens; only the address changed (port 0).
	in.owner.srv, bobClient.srv = moved, moved
	bot := as(moved, tok.Token)

	t.Run("a cursor from before the move reads exactly the events that followed it", func(t *testing.T) {
		after := mustAllRawEvents(t, in.owner, cursor)
		if len(after) != len(eventsBefore) {
			t.Errorf("%d events after the cursor %d, %d before the move", len(after), cursor, len(eventsBefore))
		}
		for i := range min(len(after), len(eventsBefore)) {
			if a, b := jsonText(after[i]), jsonText(eventsBefore[i]); a != b {
				t.Errorf("event %d after the cursor:\n before the move %s\n after the move  %s", i, b, a)
			}
		}
		if h := in.owner.mustHead(t); h != head {
			t.Errorf("head_seq %d after the move, %d before", h, head)
		}
	})
	t.Run("sessions and API tokens from before the move still work", func(t *testing.T) {
		if r := bobClient.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK); jsonText(r.body) != jsonText(meBefore.body) {
			t.Errorf("GET /me after the move %s, before %s", r.raw, meBefore.raw)
		}
		bot.do(t, http.MethodGet, api("me"), nil).want(t, http.StatusOK)
	})
	t.Run("the thread reads the same", func(t *testing.T) {
		r := in.owner.do(t, http.MethodGet, api("threads", th.Thread.ID, "messages"), nil).want(t, http.StatusOK)
		if jsonText(r.body) != jsonText(messagesBefore.body) {
			t.Errorf("the thread's messages after the move:\n%s\nbefore:\n%s", r.raw, messagesBefore.raw)
		}
	})
	t.Run("the owner and a person log in with the same passwords", func(t *testing.T) {
		mustLogin(t, moved, "owner", ownerPassword)
		mustLogin(t, moved, bob.Handle, bob.Handle+"-password-1")
	})
	t.Run("a new message continues the log at head+1", func(t *testing.T) {
		m := bobClient.mustPost(t, th.Thread.ID, "unpacked")
		evs, newHead := in.owner.mustAllEvents(t, head)
		// The thread's creator follows it: the notifier's notification.created may follow at once.
		if len(evs) == 2 && notifierEvent(evs[1].Type) && newHead == head+2 {
			evs, newHead = evs[:1], head+1
		}
		if len(evs) != 1 || evs[0].Seq != head+1 || newHead != head+1 || evs[0].Type != "message.created" || evs[0].Data["id"] != m.ID {
			t.Errorf("after the move: events %+v, head %d; want the message.created of %s at %d", evs, newHead, m.ID, head+1)
		}
	})
}

// mustAllRawEvents reads every event after the cursor as the JSON objects the server sends.
func mustAllRawEvents(tb testing.TB, c *client, after int64) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for range 10000 {
		var p struct {
			Events    []map[string]any `json:"events"`
			HeadSeq   int64            `json:"head_seq"`
			NextAfter int64            `json:"next_after"`
		}
		c.do(tb, http.MethodGet, fmt.Sprintf("/api/v1/events?after=%d&limit=1000", after), nil).
			want(tb, http.StatusOK).decode(tb, &p)
		out = append(out, p.Events...)
		if p.NextAfter >= p.HeadSeq || p.NextAfter <= after {
			return out
		}
		after = p.NextAfter
	}
	tb.Fatalf("the events after %d did not end within 10000 pages", after)
	return nil
}

func mustFileSum(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return sum[:]
}
