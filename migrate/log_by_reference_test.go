package migrate

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"bothy.dev/bothy/storage/engine"
)

// 0026 empties the logged message.created and message.updated events, their payload and scope,
// keeping their seq, type, subject, actor and time; every other event stays whole, and on SQLite
// seq becomes the table's rowid.
func TestLogByReferenceMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		event := func(seq, typ, subject, payload string) string {
			return `INSERT INTO event_log (seq, type, space_id, channel_id, thread_id, subject_id, actor_id, payload, created_at)
				VALUES (` + seq + `, '` + typ + `', 's1', 'c1', 't1', '` + subject + `', 'p1', '` + payload + `', '` + fixtureAt + `')`
		}
		fixture := append(append([]string{}, chatFixture...),
			event("1", "message.created", "m1", `{"id":"m1","content":"hello"}`),
			event("2", "message.updated", "m1", `{"id":"m1","content":"hello again"}`),
			event("3", "reaction.added", "m1", `{"message_id":"m1","emoji":"👍"}`),
			`UPDATE sequence_counters SET value = 3 WHERE name = 'event_seq'`)
		_, r := across(t, eng, 26, fixture...)
		rows, err := r.QueryContext(ctx, `SELECT seq, type, space_id, channel_id, thread_id, subject_id, actor_id, payload, created_at FROM event_log ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		type row struct {
			seq                            int64
			typ                            string
			space, channel, thread         sql.NullString
			subject, actor, payload, stamp string
		}
		var got []row
		for rows.Next() {
			var x row
			if err := rows.Scan(&x.seq, &x.typ, &x.space, &x.channel, &x.thread, &x.subject, &x.actor, &x.payload, &x.stamp); err != nil {
				t.Fatal(err)
			}
			got = append(got, x)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("%d events after the migration, want 3", len(got))
		}
		for _, x := range got[:2] {
			if x.payload != "" || x.space.Valid || x.channel.Valid || x.thread.Valid || x.subject != "m1" || x.actor != "p1" || x.stamp != fixtureAt {
				t.Errorf("event %d (%s) = %+v, want an empty payload and scope with its subject, actor and time", x.seq, x.typ, x)
			}
		}
		if x := got[2]; x.payload != `{"message_id":"m1","emoji":"👍"}` || x.channel.String != "c1" || x.thread.String != "t1" {
			t.Errorf("event 3 = %+v, want it whole", x)
		}
		if eng == engine.SQLite {
			var rowid int64
			if err := r.QueryRowContext(ctx, `SELECT rowid FROM event_log WHERE seq = 3`).Scan(&rowid); err != nil || rowid != 3 {
				t.Errorf("rowid of seq 3 = %d (%v), want seq as the rowid", rowid, err)
			}
		}
	})
}

// 0027 counts the messages and runs there are, in total and by the hour they were created in.
func TestStatCountsMigration(t *testing.T) {
	ctx := context.Background()
	each(t, func(t *testing.T, eng engine.Name) {
		fixture := append(append([]string{}, chatFixture...),
			`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at)
				VALUES ('m2', 't1', 'c1', 's1', 'p1', 'later', '2026-03-01T11:59:59.000000Z')`,
			`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at)
				VALUES ('m3', 't1', 'c1', 's1', 'p1', 'later still', '2026-03-01T11:00:00.000000Z')`)
		_, r := across(t, eng, 27, fixture...)
		var total int64
		if err := r.QueryRowContext(ctx, `SELECT value FROM stat_totals WHERE name = 'messages'`).Scan(&total); err != nil || total != 3 {
			t.Errorf("messages total = %d (%v), want 3", total, err)
		}
		if err := r.QueryRowContext(ctx, `SELECT value FROM stat_totals WHERE name = 'runs'`).Scan(&total); err != nil || total != 0 {
			t.Errorf("runs total = %d (%v), want 0", total, err)
		}
		for hour, want := range map[string]int64{"2026-03-01T10": 1, "2026-03-01T11": 2} {
			var n int64
			if err := r.QueryRowContext(ctx, `SELECT value FROM stat_hours WHERE name = 'messages' AND hour = '`+hour+`'`).Scan(&n); err != nil || n != want {
				t.Errorf("messages of %s = %d (%v), want %d", hour, n, err, want)
			}
		}
	})
}

// 0028 makes SQLite's full-text index contentless and fills it from the messages: their words,
// their attachments' names, a thread's title on its first message, and the tags of channel,
// author and has:file; a deleted message stays out.
func TestSearchContentlessMigration(t *testing.T) {
	ctx := context.Background()
	fixture := append(append([]string{}, chatFixture...),
		`INSERT INTO threads (id, channel_id, space_id, title, created_by, created_at, updated_at)
			VALUES ('t2', 'c1', 's1', 'Quarterly planning', 'p1', '`+fixtureAt+`', '`+fixtureAt+`')`,
		`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at, attachments)
			VALUES ('m2', 't2', 'c1', 's1', 'p1', 'see the numbers', '`+fixtureAt+`',
			'[{"id":"f1","name":"budget.xlsx","content_type":"application/octet-stream","size":3}]')`,
		`INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at, deleted_at)
			VALUES ('m3', 't1', 'c1', 's1', 'p1', '', '`+fixtureAt+`', '`+fixtureAt+`')`)
	_, r := across(t, engine.SQLite, 28, fixture...)
	found := func(match string) []string {
		t.Helper()
		rows, err := r.QueryContext(ctx, `SELECT m.id FROM message_search s JOIN messages m ON m.rowid = s.rowid
			WHERE message_search MATCH ? ORDER BY m.id`, match)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	for match, want := range map[string]string{
		"hello":                     "m1",
		"numbers":                   "m2",
		"budget":                    "m2",
		"quarterly":                 "m2",
		"tags : hasfile":            "m2",
		"tags : cc1 AND tags : ap1": "m1 m2",
	} {
		if got := strings.Join(found(match), " "); got != want {
			t.Errorf("MATCH %q = %q, want %q", match, got, want)
		}
	}
	var body sql.NullString
	if err := r.QueryRowContext(ctx, `SELECT body FROM message_search WHERE rowid = (SELECT rowid FROM messages WHERE id = 'm1')`).Scan(&body); err != nil || body.Valid {
		t.Errorf("the index gives back %v (%v), want no copy of the text", body, err)
	}
}
