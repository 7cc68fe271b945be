package storage

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/storage/commit"
)

// InboxStore is the repository of the inbox: read positions, and the unread and mention counts
// read from them (implements inbox.Store).
type InboxStore struct{ db *DB }

var _ inbox.Store = (*InboxStore)(nil)

// NewInboxStore returns the inbox's repository on db.
func NewInboxStore(db *DB) *InboxStore { return &InboxStore{db: db} }

// readAdvances are the read positions the units of a batch move, written once per principal and
// thread at the batch's commit. It is declared after threadCounts (chat.go, which sorts before
// this file, so its package variable is made first), so the batch's messages are counted in
// their threads' post_count before a position counts against it: a position taken at a message
// posted in the same batch is exact.
// The positions of a batch are written in statements of up to advancesPerStatement rows: the
// batch of a busy instance moves a position per author and thread it posted in.
var readAdvances = commit.NewAtCommitAll(mergeAdvance, func(exec func(q string, args ...any) error, keys []string, vals map[string]readAdvance) error {
	for len(keys) > 0 {
		n := min(len(keys), advancesPerStatement)
		args := make([]any, 0, n*advanceArgs)
		for _, k := range keys[:n] {
			args = append(args, vals[k].args()...)
		}
		if err := exec(advanceReadSQL(n), args...); err != nil {
			return fmt.Errorf("advance read position: %w", err)
		}
		keys = keys[n:]
	}
	return nil
})

// advancesPerStatement bounds the rows of one statement of readAdvances (advanceArgs
// parameters each, well under either engine's limit).
const advancesPerStatement = 64

// advanceRow is one row of advanceReadSQL, with advanceArgs parameters (readAdvance.args).
const (
	advanceRow  = `(?, ?, ?, ?, (SELECT post_count FROM threads WHERE id = ?) - (SELECT COUNT(*) FROM messages WHERE thread_id = ? AND id > ?), ?)`
	advanceArgs = 8
)

// advanceReadSQL sets a read position at a message with its read_count: the thread's post_count
// less the messages after the one read (usually none: one reads the newest), so one COUNT over
// the thread's few newest index entries at the write and none at the read; and mentions_read
// likewise, the person's mentions in the thread less those after the message (a row exists
// wherever the person was mentioned: without one there is nothing to count; with every mention
// read already, there is nothing to count either, the case of most posts). It only moves
// forward: an older message leaves a position as it is.
func advanceReadSQL(rows int) string {
	return `INSERT INTO read_states (principal_id, thread_id, channel_id, last_read_message_id, read_count, updated_at)
	VALUES ` + strings.Repeat(advanceRow+", ", rows-1) + advanceRow + advanceConflict
}

const advanceConflict = `
	ON CONFLICT (principal_id, thread_id) DO UPDATE SET last_read_message_id = excluded.last_read_message_id,
		read_count = excluded.read_count, updated_at = excluded.updated_at,
		mentions_read = CASE WHEN read_states.mentions_read = read_states.mention_count THEN read_states.mentions_read
			ELSE read_states.mention_count - (SELECT COUNT(*) FROM mentions n WHERE n.principal_id = excluded.principal_id
			AND n.thread_id = excluded.thread_id AND n.message_id > excluded.last_read_message_id) END
	WHERE excluded.last_read_message_id > read_states.last_read_message_id`

// readAdvance is one read position to move: principal's in thread of channel, to message, at
// (fixed-width text).
type readAdvance struct {
	principal, thread, channel, message kernel.ID
	at                                  string
}

func (a readAdvance) args() []any {
	return []any{string(a.principal), string(a.thread), string(a.channel), string(a.message),
		string(a.thread), string(a.thread), string(a.message), a.at}
}

// mergeAdvance keeps the newer of two positions of one principal in one thread.
func mergeAdvance(a, b readAdvance) readAdvance {
	if b.message > a.message {
		return b
	}
	return a
}

// ownAdvance is a read position an author moves to their own post, with the number of the
// batch's posts in the thread after it (threadCounts).
type ownAdvance struct {
	readAdvance
	after int64
}

// ownAdvanceRow is one row of writeOwnAdvances: as advanceRow, with the count of the messages
// after the one read known already (the batch posted them), so no count over messages.
const (
	ownAdvanceRow  = `(?, ?, ?, ?, (SELECT post_count FROM threads WHERE id = ?) - ?, ?)`
	ownAdvanceArgs = 7
)

// writeOwnAdvances writes the authors' positions of a batch's posts, after the threads' bumps,
// in statements of up to advancesPerStatement rows.
func writeOwnAdvances(exec func(q string, args ...any) error, own []ownAdvance) error {
	for len(own) > 0 {
		n := min(len(own), advancesPerStatement)
		args := make([]any, 0, n*ownAdvanceArgs)
		for _, a := range own[:n] {
			args = append(args, string(a.principal), string(a.thread), string(a.channel), string(a.message), string(a.thread), a.after, a.at)
		}
		q := `INSERT INTO read_states (principal_id, thread_id, channel_id, last_read_message_id, read_count, updated_at)
	VALUES ` + strings.Repeat(ownAdvanceRow+", ", n-1) + ownAdvanceRow + advanceConflict
		if err := exec(q, args...); err != nil {
			return fmt.Errorf("advance read position: %w", err)
		}
		own = own[n:]
	}
	return nil
}

// Advance implements inbox.Store. A position at a message the same unit posted (one's own
// post, the hot path) rides on the thread's bump, which knows the batch's posts in the thread;
// any other waits for the batch's commit in readAdvances and counts what lies after it.
func (s *InboxStore) Advance(ctx context.Context, principalID kernel.ID, st inbox.ReadState, at time.Time) error {
	a := readAdvance{principal: principalID, thread: st.ThreadID, channel: st.ChannelID, message: st.LastReadMessageID, at: fmtTime(at)}
	if b, ok := threadCounts.Recorded(ctx, st.ThreadID); ok && slices.Contains(b.posts, st.LastReadMessageID) {
		threadCounts.Record(ctx, st.ThreadID, threadBump{own: []readAdvance{a}})
		return nil
	}
	// Ids are fixed-width text, so the key sorts by principal, then thread.
	key := string(principalID) + " " + string(st.ThreadID)
	if readAdvances.Record(ctx, key, a) {
		return nil
	}
	// Outside a Unit of Work: a unit of its own, whose commit makes the write.
	return s.db.Do(ctx, func(ctx context.Context) error {
		if !readAdvances.Record(ctx, key, a) {
			return fmt.Errorf("storage: a read position outside a Unit of Work inside one")
		}
		return nil
	})
}

// MessageThread implements inbox.Store.
func (s *InboxStore) MessageThread(ctx context.Context, messageID kernel.ID) (kernel.ID, error) {
	var th kernel.ID
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT thread_id FROM messages WHERE id = ?`, string(messageID)).Scan(&th)
	return th, s.db.mapErr(err, "message")
}

// Position implements inbox.Store.
func (s *InboxStore) Position(ctx context.Context, principalID, threadID kernel.ID) (inbox.Position, bool, error) {
	var p inbox.Position
	var posts int64
	var last sql.NullString
	var read sql.NullInt64
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT t.channel_id, t.post_count, r.last_read_message_id, r.read_count
		FROM threads t LEFT JOIN read_states r ON r.principal_id = ? AND r.thread_id = t.id WHERE t.id = ?`,
		string(principalID), string(threadID)).Scan(&p.ChannelID, &posts, &last, &read)
	if err != nil {
		return p, false, s.db.mapErr(err, "thread")
	}
	p.ThreadID, p.LastReadMessageID = threadID, kernel.ID(last.String)
	p.UnreadCount = max(posts-read.Int64, 0)
	return p, last.Valid, nil
}

// unreadCounts are the columns of an unread entry after its channel (and thread) id, t a thread
// and r the principal's read position in it (LEFT JOIN): the unread count, the unread mentions and
// the newest message, all counters the writes keep on the two rows (migrate 0019), so an entry
// costs its channel, thread and position lookups and nothing more; unreadOnly keeps the threads
// with something unread, so the others cost no column reads.
const (
	unreadCounts = `t.post_count - COALESCE(r.read_count, 0), COALESCE(r.mention_count - r.mentions_read, 0), COALESCE(t.last_message_id, '')`
	unreadOnly   = ` AND t.post_count > COALESCE(r.read_count, 0)`
)

// unreadMainSQL reads the main threads of the channels a principal's grants show: a grant on the
// channel, or on its space for a channel that is not a DM, and for an owner every channel that is
// not a DM. Each branch starts from grants_principal and joins the channel, its main thread and
// the position by key, so the channels are looked up, not scanned (only an owner's branch reads
// every channel), and no set of ids is built first; a channel both branches show comes twice and
// UnreadCandidates keeps it once. Every ? is the principal.
func unreadMainSQL(owner bool) string {
	const cols = `SELECT c.id, ` + unreadCounts
	const main = ` JOIN threads t ON t.id = c.main_thread_id
	LEFT JOIN read_states r ON r.principal_id = ? AND r.thread_id = t.id`
	q := cols + ` FROM grants g JOIN channels c ON c.id = g.resource_id` + main + `
	WHERE g.principal_id = ? AND g.resource_kind = 'channel' AND c.archived_at IS NULL` + unreadOnly + `
	UNION ALL ` + cols + ` FROM grants g JOIN channels c ON c.space_id = g.resource_id` + main + `
	WHERE g.principal_id = ? AND g.resource_kind = 'space' AND c.kind <> 'dm' AND c.archived_at IS NULL` + unreadOnly
	if owner {
		q += `
	UNION ALL ` + cols + ` FROM channels c` + main + `
	WHERE c.kind <> 'dm' AND c.archived_at IS NULL` + unreadOnly
	}
	return q
}

// unreadThreadsSQL reads the other threads a principal follows (a subscription of level all or
// mentions) or was mentioned in and has not read that far, unless muted (level none). A thread
// read without following it is not listed: the read positions of a person's channels are most of
// their rows, and only their own columns (no join) tell the mentioned ones apart.
const unreadThreadsSQL = `SELECT c.id, t.id, ` + unreadCounts + ` FROM threads t JOIN channels c ON c.id = t.channel_id
	LEFT JOIN read_states r ON r.principal_id = ? AND r.thread_id = t.id
	LEFT JOIN thread_subscriptions s ON s.principal_id = ? AND s.thread_id = t.id
	WHERE t.id IN (SELECT x.thread_id FROM read_states x WHERE x.principal_id = ? AND x.mention_count > x.mentions_read
		UNION SELECT y.thread_id FROM thread_subscriptions y WHERE y.principal_id = ? AND y.level <> 'none')
	AND t.is_main = 0 AND c.archived_at IS NULL AND (s.level IS NULL OR s.level <> 'none')` + unreadOnly

// UnreadCandidates implements inbox.Store in two statements, whatever the number of channels.
func (s *InboxStore) UnreadCandidates(ctx context.Context, principalID kernel.ID, owner bool) ([]inbox.Entry, error) {
	p := string(principalID)
	out := []inbox.Entry{}
	var seen map[kernel.ID]bool // the channels listed, which two grants may show twice
	for i, q := range []string{unreadMainSQL(owner), unreadThreadsSQL} {
		threads := i == 1
		args := make([]any, strings.Count(q, "?"))
		for i := range args {
			args[i] = p
		}
		rows, err := s.db.q(ctx).QueryContext(ctx, q, args...)
		if err != nil {
			return nil, s.db.mapErr(err, "unread")
		}
		var c inbox.Entry
		var thread kernel.ID
		dst := []any{&c.ChannelID, &c.UnreadCount, &c.MentionCount, &c.LastMessageID}
		if threads {
			dst = []any{&c.ChannelID, &thread, &c.UnreadCount, &c.MentionCount, &c.LastMessageID}
		}
		for rows.Next() {
			c.ThreadID = nil
			if err := rows.Scan(dst...); err != nil {
				rows.Close()
				return nil, s.db.mapErr(err, "unread")
			}
			if threads {
				th := thread
				c.ThreadID = &th
			} else {
				if seen[c.ChannelID] {
					continue
				}
				if seen == nil {
					seen = map[kernel.ID]bool{}
				}
				seen[c.ChannelID] = true
			}
			out = append(out, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, s.db.mapErr(err, "unread")
		}
	}
	return out, nil
}

// Mentions implements inbox.Store on mentions_principal, newest first.
func (s *InboxStore) Mentions(ctx context.Context, principalID, before kernel.ID, limit int) ([]inbox.Mention, bool, error) {
	q := s.db.q(ctx)
	cond, args := ``, []any{string(principalID), string(principalID)}
	if !before.IsZero() {
		cond, args = ` AND n.message_id < ?`, append(args, string(before))
	}
	args = append(args, limit+1)
	rows, err := q.QueryContext(ctx, `SELECT m.id, m.thread_id, m.channel_id, m.space_id, m.author_id, m.content, m.client_msg_id, m.version,
		m.created_at, m.edited_at, m.deleted_at, m.run_id, m.trigger_state, m.components, m.triggers, m.attachments, c.kind, x.id, x.message_count, x.last_message_at,
		COALESCE(r.last_read_message_id, '') >= m.id
		FROM mentions n JOIN messages m ON m.id = n.message_id JOIN channels c ON c.id = m.channel_id
		LEFT JOIN threads x ON x.parent_message_id = m.id
		LEFT JOIN read_states r ON r.principal_id = ? AND r.thread_id = m.thread_id
		WHERE n.principal_id = ?`+cond+` AND m.deleted_at IS NULL AND c.archived_at IS NULL
		ORDER BY n.message_id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, false, s.db.mapErr(err, "mentions")
	}
	out := make([]inbox.Mention, 0, limit+1)
	for rows.Next() {
		var read bool
		m, err := scanMessage(scanWith{rows, &read})
		if err != nil {
			rows.Close()
			return nil, false, s.db.mapErr(err, "mentions")
		}
		out = append(out, inbox.Mention{Message: m, Read: read})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, s.db.mapErr(err, "mentions")
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	msgs := make([]messaging.Message, len(out))
	for i := range out {
		msgs[i] = out[i].Message
	}
	if err := (&MessageStore{db: s.db}).fillMentions(ctx, q, msgs); err != nil {
		return nil, false, err
	}
	for i := range out {
		out[i].Message = msgs[i]
	}
	return out, more, nil
}

// scanWith scans a row into what a scanner of the leading columns asks for, and the columns
// after them into extra.
type scanWith struct {
	rows  *sql.Rows
	extra *bool
}

func (s scanWith) Scan(dst ...any) error { return s.rows.Scan(append(dst, s.extra)...) }
