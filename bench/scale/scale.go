// Package scale measures bothy with many messages in its database: it seeds them straight into
// serve's SQLite file (the server stopped) as the write path leaves them, the messages, their
// message.created events, the threads' counters, the overview's counts and the full-text index,
// and times the reads a client makes most, the same way on the empty instance and the full one.
package scale

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"bothy.dev/bothy/app/kernel"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
)

// Layout is what Seed writes: Messages messages round-robin over the target's threads, authored
// by its people in turn, created over Span up to now.
type Layout struct {
	Messages int
	Span     time.Duration
}

// SeedReport is what Seed wrote, counted back from the database.
type SeedReport struct {
	Messages int64 // rows of messages
	Events   int64 // head seq of the log
	Took     time.Duration
}

// words is the vocabulary the seeded contents draw on, so that the full-text index holds many
// words with doclists of many lengths rather than a few words each in every message.
var words = func() []string {
	base := []string{"deploy", "canary", "gateway", "latency", "review", "release", "budget", "incident", "backup",
		"metrics", "search", "thread", "channel", "agent", "runner", "queue", "index", "vacuum", "proxy", "upload"}
	var out []string
	for i := range 4000 {
		out = append(out, base[i%len(base)]+strconv.Itoa(i/len(base)))
	}
	return out
}()

// content is the i-th seeded message: about 70 bytes, words of the vocabulary.
func content(i int) string {
	s := fmt.Sprintf("the %s of %s looks fine; %s next, then %s and %s #%d",
		words[i%len(words)], words[(i*7)%len(words)], words[(i*13)%len(words)], words[(i*31)%len(words)], words[(i*97)%len(words)], i)
	if len(s) > 70 {
		s = s[:70]
	}
	return s
}

// Seed writes l into the SQLite database db of a stopped serve whose instance Prepare made
// (t's threads and people), in transactions of 100,000 messages, then rebuilds the counters and
// the full-text index from what it wrote.
func Seed(ctx context.Context, db *sql.DB, t httpbench.Target, l Layout) (SeedReport, error) {
	began := time.Now()
	type thread struct{ id, channel, space string }
	var threads []thread
	for _, id := range t.Threads {
		th := thread{id: id}
		if err := db.QueryRowContext(ctx, `SELECT channel_id, space_id FROM threads WHERE id = ?`, id).Scan(&th.channel, &th.space); err != nil {
			return SeedReport{}, fmt.Errorf("thread %s: %w", id, err)
		}
		threads = append(threads, th)
	}
	var authors []string
	rows, err := db.QueryContext(ctx, `SELECT id FROM principals WHERE kind = 'person' ORDER BY id`)
	if err != nil {
		return SeedReport{}, err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return SeedReport{}, err
		}
		authors = append(authors, id)
	}
	rows.Close()
	if len(threads) == 0 || len(authors) == 0 {
		return SeedReport{}, errors.New("scale: the instance has no thread or no person")
	}
	var seq int64
	if err := db.QueryRowContext(ctx, `SELECT value FROM sequence_counters WHERE name = 'event_seq'`).Scan(&seq); err != nil {
		return SeedReport{}, err
	}
	if _, err := db.ExecContext(ctx, `DROP TABLE IF EXISTS scale_seed`); err != nil {
		return SeedReport{}, err
	}
	start := time.Now().Add(-l.Span)
	step := l.Span / time.Duration(max(1, l.Messages))
	last := make([]string, len(threads))
	lastAt := make([]string, len(threads))
	counts := make([]int64, len(threads))
	hours := map[string]int64{}
	const perTx, perInsert = 100000, 250
	var msgArgs, evArgs []any
	for done := 0; done < l.Messages; {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return SeedReport{}, err
		}
		end := min(l.Messages, done+perTx)
		for done < end {
			n := min(perInsert, end-done)
			msgArgs, evArgs = msgArgs[:0], evArgs[:0]
			for j := range n {
				i := done + j
				k := i % len(threads)
				th := threads[k]
				at := start.Add(time.Duration(i) * step)
				stamp := at.UTC().Format("2006-01-02T15:04:05.000000Z")
				id := string(kernel.NewID())
				author := authors[i%len(authors)]
				seq++
				msgArgs = append(msgArgs, id, th.id, th.channel, th.space, author, content(i), stamp)
				evArgs = append(evArgs, seq, id, author, stamp)
				last[k], lastAt[k] = id, stamp
				counts[k]++
				hours[stamp[:13]]++
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, created_at) VALUES `+
				rowsOf(n, 7), msgArgs...); err != nil {
				tx.Rollback()
				return SeedReport{}, fmt.Errorf("insert messages: %w", err)
			}
			// The log keeps message.created by reference: subject, actor and time, no payload, no scope.
			if _, err := tx.ExecContext(ctx, `INSERT INTO event_log (seq, type, subject_id, actor_id, payload, created_at) VALUES `+
				strings.TrimSuffix(strings.Repeat("(?, 'message.created', ?, ?, '', ?), ", n), ", "), evArgs...); err != nil {
				tx.Rollback()
				return SeedReport{}, fmt.Errorf("insert events: %w", err)
			}
			done += n
		}
		if err := tx.Commit(); err != nil {
			return SeedReport{}, err
		}
		// serve's connections checkpoint on their own terms (wal_autocheckpoint off): without
		// this the WAL would hold the whole seed.
		if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return SeedReport{}, err
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return SeedReport{}, err
	}
	defer tx.Rollback()
	for k, th := range threads {
		if counts[k] == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE threads SET post_count = post_count + ?, message_count = message_count + ?,
			last_message_at = ?, last_message_id = ? WHERE id = ?`, counts[k], counts[k], lastAt[k], last[k], th.id); err != nil {
			return SeedReport{}, err
		}
	}
	for hour, n := range hours {
		if _, err := tx.ExecContext(ctx, `INSERT INTO stat_hours (hour, name, value) VALUES (?, 'messages', ?)
			ON CONFLICT (hour, name) DO UPDATE SET value = stat_hours.value + excluded.value`, hour, n); err != nil {
			return SeedReport{}, err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE stat_totals SET value = value + ? WHERE name = 'messages'`, l.Messages); err != nil {
		return SeedReport{}, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE sequence_counters SET value = ? WHERE name = 'event_seq'`, seq); err != nil {
		return SeedReport{}, err
	}
	// The log's consumers (the notifier) have followed the seeded events as they would have
	// the posts: none is left to replay them all after the start.
	if _, err := tx.ExecContext(ctx, `INSERT INTO log_cursors (name, seq, updated_at) VALUES ('notifier', ?, ?)
		ON CONFLICT (name) DO UPDATE SET seq = excluded.seq`, seq, time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")); err != nil {
		return SeedReport{}, err
	}
	// The full-text index of the seeded messages, as storage makes a row (storage/search.go).
	if _, err := tx.ExecContext(ctx, `INSERT INTO message_search (rowid, body, files, title, tags)
		SELECT m.rowid, m.content, '', '', 'c' || replace(m.channel_id, '-', '') || ' a' || replace(m.author_id, '-', '')
		FROM messages m WHERE m.created_at >= ? ORDER BY m.rowid`, start.UTC().Format("2006-01-02T15:04:05.000000Z")); err != nil {
		return SeedReport{}, fmt.Errorf("search index: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return SeedReport{}, err
	}
	// One insert of millions of rows leaves FTS5 with a stack of segments whose merges every
	// later write would go on with (automerge), for a long while, inside its commit: an index
	// grown by posts over months has done them along the way. The seed does them now.
	if _, err := db.ExecContext(ctx, `INSERT INTO message_search (message_search) VALUES ('optimize')`); err != nil {
		return SeedReport{}, fmt.Errorf("search index: optimize: %w", err)
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return SeedReport{}, err
	}
	rep := SeedReport{Took: time.Since(began)}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages`).Scan(&rep.Messages); err != nil {
		return rep, err
	}
	if err := db.QueryRowContext(ctx, `SELECT MAX(seq) FROM event_log`).Scan(&rep.Events); err != nil {
		return rep, err
	}
	var total int64
	if err := db.QueryRowContext(ctx, `SELECT value FROM stat_totals WHERE name = 'messages'`).Scan(&total); err != nil {
		return rep, err
	}
	if total != rep.Messages || rep.Events != seq {
		return rep, fmt.Errorf("scale: %d messages counted, %d rows; head %d, counter %d", total, rep.Messages, rep.Events, seq)
	}
	return rep, nil
}

func rowsOf(rows, cols int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}

// Reads are the latencies of the reads a client makes most, each GET one at a time.
type Reads struct {
	ThreadPage, CatchUp, Unread measure.Latencies
}

// MeasureReads times samples GETs of each read, after warmup of each: the newest page of 50
// messages of the first thread, the first person's /me/unread, and a catch-up page of the last
// 1,000 events (GET /api/v1/events from the head less 1,000).
func MeasureReads(ctx context.Context, c *http.Client, t httpbench.Target, warmup, samples int) (Reads, error) {
	var page struct {
		HeadSeq int64 `json:"head_seq"`
	}
	if err := httpbench.Get(ctx, c, t.Base, t.Tokens[0], "/api/v1/events?after=0&limit=1", &page); err != nil {
		return Reads{}, err
	}
	var r Reads
	var err error
	if r.ThreadPage, err = timeGets(ctx, c, t, "/api/v1/threads/"+t.Threads[0]+"/messages?limit=50", warmup, samples); err != nil {
		return r, err
	}
	if r.Unread, err = timeGets(ctx, c, t, "/api/v1/me/unread", warmup, samples); err != nil {
		return r, err
	}
	catchUp := "/api/v1/events?after=" + strconv.FormatInt(max(0, page.HeadSeq-1000), 10) + "&limit=1000"
	r.CatchUp, err = timeGets(ctx, c, t, catchUp, warmup, samples)
	return r, err
}

func timeGets(ctx context.Context, c *http.Client, t httpbench.Target, path string, warmup, samples int) (measure.Latencies, error) {
	for range warmup {
		if _, err := httpbench.GetBody(ctx, c, t.Base, t.Tokens[0], path); err != nil {
			return measure.Latencies{}, fmt.Errorf("GET %s: %w", path, err)
		}
	}
	ds := make([]time.Duration, 0, samples)
	for range samples {
		began := time.Now()
		if _, err := httpbench.GetBody(ctx, c, t.Base, t.Tokens[0], path); err != nil {
			return measure.Latencies{}, fmt.Errorf("GET %s: %w", path, err)
		}
		ds = append(ds, time.Since(began))
	}
	return measure.Summarise(ds), nil
}
