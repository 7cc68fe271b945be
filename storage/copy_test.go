package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/migrate"
	"bothy.dev/bothy/storage"
	"bothy.dev/bothy/storage/engine"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/sqlite"
	"bothy.dev/bothy/storage/storetest"
)

// copyEnd is one side of a copy: a database handle and its dialect.
type copyEnd struct {
	db      *sql.DB
	dialect storage.Dialect
	// open opens the store on this side (for reading it back like the server does).
	open func(tb testing.TB) *storage.DB
}

// mustSQLiteEnd returns a migrated SQLite database in a temp dir: its write handle, and the path.
func mustSQLiteEnd(tb testing.TB) (copyEnd, string) {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "bothy.db")
	w, r, err := sqlite.Open(ctx, sqlite.Options{Path: path})
	if err != nil {
		tb.Fatal(err)
	}
	r.Close()
	tb.Cleanup(func() { w.Close() })
	if _, err := migrate.Up(ctx, w, engine.SQLite, nil); err != nil {
		tb.Fatal(err)
	}
	open := func(tb testing.TB) *storage.DB {
		tb.Helper()
		w, r, err := sqlite.Open(ctx, sqlite.Options{Path: path})
		if err != nil {
			tb.Fatal(err)
		}
		db, err := storage.Open(ctx, sqlite.Dialect{}, w, r, storage.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		return db
	}
	return copyEnd{db: w, dialect: sqlite.Dialect{}, open: open}, path
}

// mustReadOnly opens the SQLite database at path the way `bothy migrate copy` reads its source.
func mustReadOnly(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sqlite.OpenReadOnly(context.Background(), path, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// fixtureEvents is the number of events mustFill logs: more than two batches of 500.
const fixtureEvents = 1203

// mustFill writes rows into every table of the schema through plain SQL on w (SQLite), with
// NULLs, text that is not ASCII and an event log longer than two batches, and sets the
// event_seq counter to its head, as the write path does.
func mustFill(tb testing.TB, w *sql.DB) {
	tb.Helper()
	const t0 = "2025-01-02T03:04:05.000000Z"
	stmts := []string{
		`UPDATE instance SET setup_code_hash = NULL, setup_completed_at = '` + t0 + `' WHERE id = 1`,
		`UPDATE sequence_counters SET value = 7 WHERE name = 'permission_version'`,
		`INSERT INTO principals (id, kind, handle, handle_key, display_name, status, is_owner, created_at, updated_at, disabled_at) VALUES
			('p1', 'person', 'ada', 'ada', 'Ada Lovelace', 'active', 1, '` + t0 + `', '` + t0 + `', NULL),
			('p2', 'agent', 'bot', 'bot', 'Bøt 🤖', 'disabled', 0, '` + t0 + `', '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO local_credentials VALUES ('p1', '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA', '` + t0 + `')`,
		`INSERT INTO auth_sessions VALUES ('s1', 'p1', 'th1', '` + t0 + `', '2099-01-01T00:00:00.000000Z', NULL)`,
		`INSERT INTO api_tokens VALUES ('k1', 'p2', 'bot token', 'kh1', '` + t0 + `', NULL, NULL)`,
		`INSERT INTO agents VALUES ('p2', 'answers "everything" — ünïcode', 'p1', '` + t0 + `')`,
		`INSERT INTO spaces VALUES ('sp1', 'Home', 'p1', '` + t0 + `', '` + t0 + `', NULL)`,
		`INSERT INTO channels VALUES ('c1', 'sp1', 'channel', 'general', 'it''s a topic', 't1', 'p1', '` + t0 + `', '` + t0 + `', NULL, 'p2')`,
		`INSERT INTO threads VALUES ('t1', 'c1', 'sp1', '', 1, 'p1', '` + t0 + `', '` + t0 + `', '` + t0 + `', 2, NULL, 2, 'm2'),
			('t2', 'c1', 'sp1', '', 0, 'p2', '` + t0 + `', '` + t0 + `', '` + t0 + `', 1, 'm1', 1, 'm3')`,
		`INSERT INTO grants VALUES ('g1', 'channel', 'c1', 'p2', 'post', 2, 'p1', '` + t0 + `')`,
		`INSERT INTO dms VALUES ('c1', 'p1,p2', '` + t0 + `')`,
		`INSERT INTO messages VALUES
			('m1', 't1', 'c1', 'sp1', 'p1', 'hello @bot — ünïcode, "quotes", ? and $1', 'cm1', 2, '` + t0 + `', '` + t0 + `', NULL, NULL, 'triggered', NULL,
				'[{"agent_id":"p2","state":"triggered","run_id":"r1"},{"agent_id":"p3","state":"agent_disabled — ü"}]',
				'[{"id":"f1","name":"ünï.png","content_type":"image/png","size":3,"width":1,"height":1}]'),
			('m2', 't1', 'c1', 'sp1', 'p2', '', NULL, 1, '` + t0 + `', NULL, '` + t0 + `', 'r1', NULL,
				'[{"components":[{"type":"button","id":"ok","label":"Ök","style":"primary","disabled":false}]}]', NULL, NULL),
			('m3', 't2', 'c1', 'sp1', 'p2', 'a reply under m1', NULL, 1, '` + t0 + `', NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		`INSERT INTO runs VALUES ('r1', 'p2', 't1', 'c1', 'sp1', 'm1', 'p1', 'failed', 'agent_disabled', 2,
			'{"status":"Reading — ü","steps":[{"id":"s1","kind":"tool_call","title":"t","status":"done","detail":"?"}]}',
			'` + t0 + `', '` + t0 + `', '` + t0 + `', '` + t0 + `', '` + t0 + `', '` + t0 + `', 6, 'the tool said no — ü',
			2, 1200, 300, 4500)`,
		`INSERT INTO run_output VALUES ('r1', 1, '$1'), ('r1', 2, ' ünï')`,
		`INSERT INTO message_revisions VALUES ('m1', 1, 'hello', '` + t0 + `')`,
		`INSERT INTO mentions VALUES ('m1', 'p2', 't1')`,
		`INSERT INTO reactions VALUES ('m1', 'p2', '👍', '` + t0 + `')`,
		`INSERT INTO message_pins VALUES ('m1', 'c1', 't1', 'p2', '` + t0 + `')`,
		`INSERT INTO interactions VALUES ('i1', 'm2', 't1', 'c1', 'ok', '["ü"]', 'p1', '` + t0 + `')`,
		`INSERT INTO approvals VALUES ('ap1', 'r1', 'p2', 't1', 'c1', 'sp1', 'Delete the branch', 'ü $1', 'approved', 'approve', 'run',
			'p1', '` + t0 + `', '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO approval_approvers VALUES ('ap1', 'p1', 0)`,
		`INSERT INTO files VALUES ('f1', 'p1', 'ünï.png', 'image/png', 3, '` + strings.Repeat("ab", 32) + `', 1, 1, 'm1', 't1', 'c1', 'sp1', 'dm', 0,
			'ready', '` + strings.Repeat("cd", 32) + `', 'image/jpeg', 1, 1, '` + t0 + `', '` + t0 + `'),
			('f2', 'p2', 'notes.txt', 'text/plain; charset=utf-8', 5000000000, '` + strings.Repeat("ef", 32) + `', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			'none', NULL, NULL, NULL, NULL, '` + t0 + `', NULL)`,
		`INSERT INTO uploads VALUES ('u1', 'p2', 'big.iso', '', 9000000000, 8388608, '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO upload_parts VALUES ('u1', 2, 8388608)`,
		`UPDATE stat_totals SET value = 1 WHERE name = 'messages'`,
		`INSERT INTO stat_hours VALUES ('2026-01-01T00', 'messages', 1)`,
		`INSERT INTO read_states VALUES ('p2', 't1', 'c1', 'm1', 1, '` + t0 + `', 1, 1)`,
		`INSERT INTO thread_subscriptions VALUES ('p1', 't2', 'all', '` + t0 + `')`,
		`INSERT INTO notification_levels VALUES ('p2', 'c1', 'none', '` + t0 + `')`,
		`INSERT INTO log_cursors VALUES ('notifier', 5, '` + t0 + `')`,
		`INSERT INTO idempotency_keys VALUES ('p1', 'key-1', 'fp', 201, '{"id":"m1"}', '` + t0 + `')`,
		`INSERT INTO gateway_presence VALUES ('n1', 'p1', 2, '` + t0 + `')`,
		`INSERT INTO agent_consumers VALUES ('p2', 7, '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO agent_commands VALUES ('p2', 'deploy-ü_1', 'ships — ü', '<env>', 0)`,
		`INSERT INTO agent_budgets VALUES ('p2', 'month', 100000, NULL, 'p1', '` + t0 + `')`,
		`INSERT INTO agent_usage VALUES ('p2', 'month', '2025-01', 1200, 300, 4500, '` + t0 + `'), ('p2', 'day', '2025-01-02', 1200, 300, 4500, NULL)`,
		`INSERT INTO signing_keys VALUES ('k1', 'invocation', 'EdDSA', 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=', '` + t0 + `', NULL)`,
		`INSERT INTO signing_keys VALUES ('k0', 'invocation', 'EdDSA', 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=', '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO push_subscriptions VALUES ('ps1', 'p1', 'https://push.example.com/send/ü?x=1', 'BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4', 'BTBZMqHH6r4Tts7J_aSIgg', 1, '` + t0 + `', NULL),
			('ps2', 'p1', 'https://push.example.com/send/2', 'BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4', 'BTBZMqHH6r4Tts7J_aSIgg', 0, '` + t0 + `', 'the push service answered 503')`,
		`INSERT INTO push_outbox VALUES ('po1', 'ps2', 'm1', 'c1', 't1', 'mention', 2, '` + t0 + `', '` + t0 + `')`,
		`INSERT INTO vapid_keys VALUES (1, 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=', '` + t0 + `')`,
		// A pending job, in goqite's text times (UTC, milliseconds), which PostgreSQL reads into
		// timestamptz; received 1: a job between two attempts moves as it is.
		`INSERT INTO goqite VALUES ('k:runs.queued_expiry:r1', '2025-01-02T03:04:05.000Z', '2025-01-02T03:04:06.000Z', 'bothy',
			CAST('{"name":"runs.queued_expiry","args":{"run_id":"r1"}}' AS BLOB), '2025-01-02T03:04:05.123Z', 1, 0)`,
	}
	for _, s := range stmts {
		if _, err := w.Exec(s); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
	tx, err := w.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	for seq := 1; seq <= fixtureEvents; seq++ {
		var subject any
		if seq%3 == 0 {
			subject = "m1"
		}
		if _, err := tx.Exec(`INSERT INTO event_log VALUES (?, 'message.created', 'sp1', 'c1', 't1', NULL, ?, 'p1', ?, ?)`,
			seq, subject, fmt.Sprintf(`{"n":%d,"text":"ü"}`, seq), t0); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := tx.Exec(`UPDATE sequence_counters SET value = ? WHERE name = 'event_seq'`, fixtureEvents); err != nil {
		tb.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// dump reads every row of every table as text, sorted, to compare two databases value by value.
func dump(tb testing.TB, db *sql.DB) map[string][]string {
	tb.Helper()
	out := map[string][]string{}
	for _, t := range storage.CopyTables {
		rows, err := db.Query("SELECT * FROM " + t)
		if err != nil {
			tb.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				tb.Fatal(err)
			}
			var b strings.Builder
			for i, v := range vals {
				if b2, ok := v.([]byte); ok {
					v = string(b2)
				}
				if tm, ok := v.(time.Time); ok { // goqite's timestamptz on PostgreSQL, in its SQLite text
					v = tm.UTC().Format("2006-01-02T15:04:05.000Z07:00")
				}
				fmt.Fprintf(&b, "%s=%v|", cols[i], v)
			}
			out[t] = append(out[t], b.String())
		}
		if err := rows.Err(); err != nil {
			tb.Fatal(err)
		}
		rows.Close()
		slices.Sort(out[t])
	}
	return out
}

// testCopy copies a filled SQLite source into target and checks everything a move promises.
func testCopy(t *testing.T, target copyEnd) {
	ctx := context.Background()
	src, path := mustSQLiteEnd(t)
	mustFill(t, src.db)
	ro := mustReadOnly(t, path)

	var progress []storage.CopyProgress
	rep, err := storage.Copy(ctx, ro, sqlite.Dialect{}, target.db, target.dialect, storage.CopyOptions{
		BatchRows: 500,
		Progress:  func(p storage.CopyProgress) { progress = append(progress, p) },
	})
	if err != nil {
		t.Fatalf("Copy: %v", err)
	}

	t.Run("copies every table, with rows in each", func(t *testing.T) {
		for _, tbl := range storage.CopyTables {
			if rep.Rows[tbl] == 0 {
				t.Errorf("table %s has no row in the fixture: add some to mustFill", tbl)
			}
		}
		if rep.Head != fixtureEvents || rep.Rows["event_log"] != fixtureEvents {
			t.Fatalf("report: head %d, %d events", rep.Head, rep.Rows["event_log"])
		}
	})
	t.Run("keeps every value, ids and seq included", func(t *testing.T) {
		want, got := dump(t, src.db), dump(t, target.db)
		for _, tbl := range storage.CopyTables {
			if !reflect.DeepEqual(want[tbl], got[tbl]) {
				t.Errorf("table %s differs:\nsource %q\ntarget %q", tbl, first(want[tbl], 3), first(got[tbl], 3))
			}
		}
	})
	t.Run("reports one line per table, in order", func(t *testing.T) {
		var done []string
		for _, p := range progress {
			if p.Done {
				done = append(done, p.Table)
				if p.Copied != rep.Rows[p.Table] || p.Rows != rep.Rows[p.Table] {
					t.Errorf("progress of %s: %d of %d, want %d", p.Table, p.Copied, p.Rows, rep.Rows[p.Table])
				}
			}
		}
		if !reflect.DeepEqual(done, storage.CopyTables) {
			t.Fatalf("tables reported done: %v", done)
		}
	})
	t.Run("a client's cursor from before the move reads the same events after it", func(t *testing.T) {
		before, after := src.open(t), target.open(t)
		if after.Head() != before.Head() {
			t.Fatalf("head after the move %d, before %d", after.Head(), before.Head())
		}
		for _, cursor := range []int64{0, 1, 499, 500, 1000, fixtureEvents - 1, fixtureEvents} {
			a, err := before.EventsAfter(ctx, cursor, 100)
			if err != nil {
				t.Fatal(err)
			}
			b, err := after.EventsAfter(ctx, cursor, 100)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("events after %d differ:\nbefore %+v\nafter  %+v", cursor, first(a, 2), first(b, 2))
			}
		}
	})
	t.Run("refuses to copy again into the now non-empty target, changing nothing", func(t *testing.T) {
		before := dump(t, target.db)
		_, err := storage.Copy(ctx, ro, sqlite.Dialect{}, target.db, target.dialect, storage.CopyOptions{})
		if !errors.Is(err, storage.ErrTargetNotEmpty) || !strings.Contains(err.Error(), "principals") {
			t.Fatalf("second Copy = %v, want ErrTargetNotEmpty naming principals", err)
		}
		if !reflect.DeepEqual(before, dump(t, target.db)) {
			t.Fatal("the refused copy changed the target")
		}
	})
}

func first[T any](s []T, n int) []T { return s[:min(n, len(s))] }

// mustPostgresEnd returns a fresh migrated PostgreSQL database (storetest's, dropped when the
// test ends). Without BOTHY_TEST_POSTGRES_URL the test is skipped.
func mustPostgresEnd(tb testing.TB) copyEnd {
	tb.Helper()
	where := storetest.Postgres.NewDatabase(tb)
	w, r, err := postgres.Open(context.Background(), postgres.Options{URL: where})
	if err != nil {
		tb.Fatal(err)
	}
	r.Close()
	tb.Cleanup(func() { w.Close() })
	open := func(tb testing.TB) *storage.DB { return storetest.Postgres.OpenAt(tb, where, storage.Options{}) }
	return copyEnd{db: w, dialect: postgres.Dialect{}, open: open}
}

func TestCopy(t *testing.T) {
	t.Run("to SQLite", func(t *testing.T) {
		target, _ := mustSQLiteEnd(t)
		testCopy(t, target)
	})
	t.Run("to PostgreSQL", func(t *testing.T) {
		testCopy(t, mustPostgresEnd(t))
	})
}

func TestCopyBatches(t *testing.T) {
	src, path := mustSQLiteEnd(t)
	mustFill(t, src.db)
	target, _ := mustSQLiteEnd(t)
	var lines []storage.CopyProgress
	_, err := storage.Copy(context.Background(), mustReadOnly(t, path), sqlite.Dialect{}, target.db, target.dialect, storage.CopyOptions{
		BatchRows: 7, // 1203 events: 171 full batches and one of 6
		Progress: func(p storage.CopyProgress) {
			if p.Table == "event_log" {
				lines = append(lines, p)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.CopyProgress{{Table: "event_log", Copied: 700, Rows: fixtureEvents}, {Table: "event_log", Copied: fixtureEvents, Rows: fixtureEvents, Done: true}}
	for i := range lines {
		lines[i].Elapsed = 0
	}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("progress of event_log: %+v, want a line after 100 batches and one at the end", lines)
	}
	if !reflect.DeepEqual(dump(t, src.db)["event_log"], dump(t, target.db)["event_log"]) {
		t.Fatal("the event log differs after a copy in small batches")
	}
}

func TestCopyRefusals(t *testing.T) {
	ctx := context.Background()
	filled := func(t *testing.T) (*sql.DB, copyEnd) {
		src, path := mustSQLiteEnd(t)
		mustFill(t, src.db)
		return mustReadOnly(t, path), src
	}

	t.Run("refuses a target that holds only an event", func(t *testing.T) {
		ro, _ := filled(t)
		target, _ := mustSQLiteEnd(t)
		if _, err := target.db.Exec(`INSERT INTO event_log VALUES (1, 'x', NULL, NULL, NULL, NULL, NULL, NULL, '{}', 'now')`); err != nil {
			t.Fatal(err)
		}
		_, err := storage.Copy(ctx, ro, sqlite.Dialect{}, target.db, target.dialect, storage.CopyOptions{})
		if !errors.Is(err, storage.ErrTargetNotEmpty) || !strings.Contains(err.Error(), "event_log") {
			t.Fatalf("Copy = %v, want ErrTargetNotEmpty naming event_log", err)
		}
	})
	t.Run("refuses a target whose event counter moved", func(t *testing.T) {
		ro, _ := filled(t)
		target, _ := mustSQLiteEnd(t)
		if _, err := target.db.Exec(`UPDATE sequence_counters SET value = 3 WHERE name = 'event_seq'`); err != nil {
			t.Fatal(err)
		}
		if _, err := storage.Copy(ctx, ro, sqlite.Dialect{}, target.db, target.dialect, storage.CopyOptions{}); !errors.Is(err, storage.ErrTargetNotEmpty) {
			t.Fatalf("Copy = %v, want ErrTargetNotEmpty", err)
		}
	})
	t.Run("refuses a target that is not migrated, changing nothing", func(t *testing.T) {
		ro, _ := filled(t)
		path := filepath.Join(t.TempDir(), "empty.db")
		w, r, err := sqlite.Open(ctx, sqlite.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		defer r.Close()
		_, err = storage.Copy(ctx, ro, sqlite.Dialect{}, w, sqlite.Dialect{}, storage.CopyOptions{})
		if !errors.Is(err, storage.ErrSchemaMismatch) || !strings.Contains(err.Error(), "instance") {
			t.Fatalf("Copy = %v, want ErrSchemaMismatch naming the first table", err)
		}
		var n int
		if err := w.QueryRow(`SELECT COUNT(*) FROM sqlite_master`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("the target has %d schema objects, %v", n, err)
		}
	})
	t.Run("refuses a source with a table it does not know", func(t *testing.T) {
		src, path := mustSQLiteEnd(t)
		if _, err := src.db.Exec(`CREATE TABLE later_feature (id TEXT PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		target, _ := mustSQLiteEnd(t)
		_, err := storage.Copy(ctx, mustReadOnly(t, path), sqlite.Dialect{}, target.db, target.dialect, storage.CopyOptions{})
		if !errors.Is(err, storage.ErrSchemaMismatch) || !strings.Contains(err.Error(), "later_feature") {
			t.Fatalf("Copy = %v, want ErrSchemaMismatch naming later_feature", err)
		}
	})
	t.Run("refuses a table whose columns differ", func(t *testing.T) {
		ro, _ := filled(t)
		target, _ := mustSQLiteEnd(t)
		if _, err := target.db.Exec(`ALTER TABLE reactions ADD COLUMN extra TEXT`); err != nil {
			t.Fatal(err)
		}
		_, err := storage.Copy(ctx, ro, sqlite.Dialect{}, target.db, target.dialect, storage.CopyOptions{})
		if !errors.Is(err, storage.ErrSchemaMismatch) || !strings.Contains(err.Error(), "reactions") {
			t.Fatalf("Copy = %v, want ErrSchemaMismatch naming reactions", err)
		}
		var n int
		if err := target.db.QueryRow(`SELECT COUNT(*) FROM principals`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("the refused copy left %d principals in the target (%v)", n, err)
		}
	})
	t.Run("rolls the target back when the source is written during the copy", func(t *testing.T) {
		ro, src := filled(t)
		target, _ := mustSQLiteEnd(t)
		wrote := false
		_, err := storage.Copy(ctx, ro, sqlite.Dialect{}, target.db, target.dialect, storage.CopyOptions{
			Progress: func(p storage.CopyProgress) {
				if p.Table == "messages" && p.Done && !wrote {
					wrote = true
					// A server still running on the file commits a login.
					if _, err := src.db.Exec(`INSERT INTO auth_sessions VALUES ('s2', 'p1', 'th2', 'now', 'later', NULL)`); err != nil {
						t.Error(err)
					}
				}
			},
		})
		if !errors.Is(err, storage.ErrSourceChanged) {
			t.Fatalf("Copy = %v, want ErrSourceChanged", err)
		}
		var n int
		if err := target.db.QueryRow(`SELECT COUNT(*) FROM event_log`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("the target kept %d events (%v)", n, err)
		}
	})
	t.Run("refuses a source whose counter is behind its log", func(t *testing.T) {
		ro, src := filled(t)
		if _, err := src.db.Exec(`UPDATE sequence_counters SET value = 5 WHERE name = 'event_seq'`); err != nil {
			t.Fatal(err)
		}
		target, _ := mustSQLiteEnd(t)
		_, err := storage.Copy(ctx, ro, sqlite.Dialect{}, target.db, target.dialect, storage.CopyOptions{})
		if !errors.Is(err, storage.ErrCopyMismatch) {
			t.Fatalf("Copy = %v, want ErrCopyMismatch", err)
		}
	})
}
