package storage

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/dms"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/storage/commit"
)

// ChatStore is the repository of chat: spaces, channels, threads (implements chat.Store).
type ChatStore struct{ db *DB }

var (
	_ chat.Store      = (*ChatStore)(nil)
	_ chat.Principals = (*ChatStore)(nil)
)

// NewChatStore returns chat's repository on db.
func NewChatStore(db *DB) *ChatStore { return &ChatStore{db: db} }

func (s *ChatStore) CreateSpace(ctx context.Context, sp chat.Space) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO spaces (id, name, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		string(sp.ID), sp.Name, string(sp.CreatedBy), fmtTime(sp.CreatedAt), fmtTime(sp.UpdatedAt))
	return s.db.mapErr(err, "space")
}

const spaceCols = `id, name, created_by, created_at, updated_at`

func scanSpace(sc interface{ Scan(...any) error }) (chat.Space, error) {
	var sp chat.Space
	var created, updated string
	err := sc.Scan(&sp.ID, &sp.Name, &sp.CreatedBy, &created, &updated)
	sp.CreatedAt, sp.UpdatedAt = parseTime(created), parseTime(updated)
	return sp, err
}

func (s *ChatStore) Space(ctx context.Context, id kernel.ID) (chat.Space, error) {
	// The space of the DM channels is no space anyone reads: it is never loaded nor listed.
	if id == dms.SpaceID {
		return chat.Space{}, kernel.ErrNotFound
	}
	sp, err := scanSpace(s.db.q(ctx).QueryRowContext(ctx, `SELECT `+spaceCols+` FROM spaces WHERE id = ? AND archived_at IS NULL`, string(id)))
	return sp, s.db.mapErr(err, "space")
}

func (s *ChatStore) Spaces(ctx context.Context) ([]chat.Space, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT `+spaceCols+` FROM spaces WHERE archived_at IS NULL AND id <> ? ORDER BY id`, string(dms.SpaceID))
	if err != nil {
		return nil, s.db.mapErr(err, "spaces")
	}
	defer rows.Close()
	var out []chat.Space
	for rows.Next() {
		sp, err := scanSpace(rows)
		if err != nil {
			return nil, s.db.mapErr(err, "spaces")
		}
		out = append(out, sp)
	}
	return out, s.db.mapErr(rows.Err(), "spaces")
}

func (s *ChatStore) UpdateSpace(ctx context.Context, sp chat.Space) error {
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE spaces SET name = ?, updated_at = ? WHERE id = ?`,
		sp.Name, fmtTime(sp.UpdatedAt), string(sp.ID))
	return s.db.oneRowOrNotFound(res, err, "space")
}

func (s *ChatStore) CreateChannel(ctx context.Context, c chat.Channel) error {
	_, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO channels (id, space_id, kind, name, topic, main_thread_id, created_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		string(c.ID), string(c.SpaceID), c.Kind, c.Name, c.Topic, string(c.MainThreadID), string(c.CreatedBy),
		fmtTime(c.CreatedAt), fmtTime(c.UpdatedAt))
	return s.db.mapErr(err, "channel")
}

const channelCols = `id, space_id, kind, name, topic, main_thread_id, operator_id, created_by, created_at, updated_at`

func scanChannel(sc interface{ Scan(...any) error }) (chat.Channel, error) {
	var c chat.Channel
	var created, updated string
	var operator sql.NullString
	err := sc.Scan(&c.ID, &c.SpaceID, &c.Kind, &c.Name, &c.Topic, &c.MainThreadID, &operator, &c.CreatedBy, &created, &updated)
	c.CreatedAt, c.UpdatedAt = parseTime(created), parseTime(updated)
	if operator.Valid {
		id := kernel.ID(operator.String)
		c.OperatorID = &id
	}
	return c, err
}

func (s *ChatStore) Channel(ctx context.Context, id kernel.ID) (chat.Channel, error) {
	c, err := scanChannel(s.db.q(ctx).QueryRowContext(ctx, `SELECT `+channelCols+` FROM channels WHERE id = ? AND archived_at IS NULL`, string(id)))
	return c, s.db.mapErr(err, "channel")
}

func (s *ChatStore) Channels(ctx context.Context, spaceID kernel.ID) ([]chat.Channel, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT `+channelCols+` FROM channels WHERE space_id = ? AND archived_at IS NULL ORDER BY id`, string(spaceID))
	if err != nil {
		return nil, s.db.mapErr(err, "channels")
	}
	defer rows.Close()
	var out []chat.Channel
	for rows.Next() {
		c, err := scanChannel(rows)
		if err != nil {
			return nil, s.db.mapErr(err, "channels")
		}
		out = append(out, c)
	}
	return out, s.db.mapErr(rows.Err(), "channels")
}

func (s *ChatStore) UpdateChannel(ctx context.Context, c chat.Channel) error {
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE channels SET name = ?, topic = ?, updated_at = ? WHERE id = ?`,
		c.Name, c.Topic, fmtTime(c.UpdatedAt), string(c.ID))
	return s.db.oneRowOrNotFound(res, err, "channel")
}

func (s *ChatStore) SetOperator(ctx context.Context, c chat.Channel) error {
	var operator any
	if c.OperatorID != nil {
		operator = nullID(*c.OperatorID)
	}
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE channels SET operator_id = ?, updated_at = ? WHERE id = ?`,
		operator, fmtTime(c.UpdatedAt), string(c.ID))
	return s.db.oneRowOrNotFound(res, err, "channel")
}

// PrincipalRef implements chat.Principals; it reads identity's principals table.
func (s *ChatStore) PrincipalRef(ctx context.Context, id kernel.ID) (chat.PrincipalRef, error) {
	var kind, status string
	err := s.db.q(ctx).QueryRowContext(ctx, `SELECT kind, status FROM principals WHERE id = ?`, string(id)).Scan(&kind, &status)
	if err != nil {
		return chat.PrincipalRef{}, s.db.mapErr(err, "principal")
	}
	return chat.PrincipalRef{ID: id, Kind: kernel.PrincipalKind(kind), Active: status == "active"}, nil
}

const insertThread = `INSERT INTO threads (id, channel_id, space_id, title, is_main, created_by, created_at, updated_at,
	last_message_at, message_count, parent_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func threadArgs(t chat.Thread) []any {
	return []any{string(t.ID), string(t.ChannelID), string(t.SpaceID), t.Title, sqlBool(t.IsMain), string(t.CreatedBy),
		fmtTime(t.CreatedAt), fmtTime(t.UpdatedAt), fmtTimePtr(t.LastMessageAt), t.MessageCount, nullIDPtr(t.ParentMessageID)}
}

func (s *ChatStore) CreateThread(ctx context.Context, t chat.Thread) error {
	_, err := s.db.q(ctx).ExecContext(ctx, insertThread, threadArgs(t)...)
	return s.db.mapErr(err, "thread")
}

// CreateThreadUnder leans on the unique index threads_parent_message: on PostgreSQL (READ
// COMMITTED) the insert of a second writer waits for the first one's commit and then does
// nothing, and the read that follows sees the first one's thread; SQLite has one writer.
func (s *ChatStore) CreateThreadUnder(ctx context.Context, t chat.Thread) (bool, error) {
	if t.ParentMessageID == nil {
		return false, kernel.Errorf(kernel.CodeInternal, "a thread under a message needs the message")
	}
	res, err := s.db.q(ctx).ExecContext(ctx, insertThread+` ON CONFLICT (parent_message_id) DO NOTHING`, threadArgs(t)...)
	return s.db.changedRows(res, err, "thread")
}

func (s *ChatStore) ThreadByParent(ctx context.Context, messageID kernel.ID) (chat.Thread, error) {
	t, err := scanThread(s.db.q(ctx).QueryRowContext(ctx, threadSelect+` WHERE t.parent_message_id = ? AND c.archived_at IS NULL`, string(messageID)))
	return t, s.db.mapErr(err, "thread")
}

const threadSelect = `SELECT t.id, t.channel_id, t.space_id, t.title, t.is_main, t.created_by, t.created_at, t.updated_at,
	t.last_message_at, t.message_count, t.parent_message_id, c.kind FROM threads t JOIN channels c ON c.id = t.channel_id`

func scanThread(sc interface{ Scan(...any) error }) (chat.Thread, error) {
	var t chat.Thread
	var isMain int
	var created, updated string
	var last, parent sql.NullString
	err := sc.Scan(&t.ID, &t.ChannelID, &t.SpaceID, &t.Title, &isMain, &t.CreatedBy, &created, &updated,
		&last, &t.MessageCount, &parent, &t.ChannelKind)
	t.IsMain = isMain != 0
	t.CreatedAt, t.UpdatedAt, t.LastMessageAt = parseTime(created), parseTime(updated), parseNullTime(last)
	if parent.Valid {
		id := kernel.ID(parent.String)
		t.ParentMessageID = &id
	}
	return t, err
}

func (s *ChatStore) Thread(ctx context.Context, id kernel.ID) (chat.Thread, error) {
	// A thread of an archived channel is gone with its channel: nothing can be posted there.
	t, err := scanThread(s.db.q(ctx).QueryRowContext(ctx, threadSelect+` WHERE t.id = ? AND c.archived_at IS NULL`, string(id)))
	return t, s.db.mapErr(err, "thread")
}

func (s *ChatStore) UpdateThread(ctx context.Context, t chat.Thread) error {
	q := s.db.q(ctx)
	res, err := q.ExecContext(ctx, `UPDATE threads SET title = ?, updated_at = ? WHERE id = ?`,
		t.Title, fmtTime(t.UpdatedAt), string(t.ID))
	if err := s.db.oneRowOrNotFound(res, err, "thread"); err != nil {
		return err
	}
	return s.db.indexTitle(ctx, q, t.ID, t.Title) // the first message is found by its title
}

func (s *ChatStore) Threads(ctx context.Context, channelID kernel.ID, p chat.Page) ([]chat.Thread, bool, error) {
	q, args, desc := keysetQuery(threadSelect+` WHERE t.channel_id = ?`, "t.id", []any{string(channelID)}, p)
	rows, err := s.db.q(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, s.db.mapErr(err, "threads")
	}
	defer rows.Close()
	out := make([]chat.Thread, 0, p.Limit+1)
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, false, s.db.mapErr(err, "threads")
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.db.mapErr(err, "threads")
	}
	out, more := trimPage(out, p.Limit, desc)
	return out, more, nil
}

// threadCounts are the messages the units of a batch add to (or remove from) threads, written
// once per thread at the batch's commit. A busy thread's row is the hottest row there is: one
// UPDATE per message would cost a statement each (a round trip on PostgreSQL) and take its row
// lock in whatever order the units came; one per thread per batch, in id order, does not.
//
// The read positions of the authors of the batch's posts ride along (InboxStore.Advance): they
// are written right after the bumps, counted against the batch's posts in memory.
var threadCounts = commit.NewAtCommitAll(mergeBump, func(exec func(q string, args ...any) error, ids []kernel.ID, vals map[kernel.ID]threadBump) error {
	var own []ownAdvance
	for _, id := range ids {
		b := vals[id]
		if err := exec(bumpThreadSQL, b.n, b.n, b.posted, b.last, b.last, b.last, b.lastID, b.lastID, b.lastID, string(id)); err != nil {
			return fmt.Errorf("bump thread: %w", err)
		}
		own = b.ownAdvances(own)
	}
	return writeOwnAdvances(exec, own)
})

// bumpThreadSQL adds a batch's net count (never below zero) and the messages it posted (to
// post_count, which read positions count against and deletions leave alone), and moves
// last_message_at and last_message_id forward only (empty: the batch removed messages only).
const bumpThreadSQL = `UPDATE threads SET message_count = CASE WHEN message_count + ? < 0 THEN 0 ELSE message_count + ? END,
	post_count = post_count + ?,
	last_message_at = CASE WHEN ? <> '' AND (last_message_at IS NULL OR last_message_at < ?) THEN ? ELSE last_message_at END,
	last_message_id = CASE WHEN ? <> '' AND (last_message_id IS NULL OR last_message_id < ?) THEN ? ELSE last_message_id END WHERE id = ?`

// threadBump is what a batch adds to one thread: n messages net, posted of them new, the
// latest posted at last (fixed-width text) with the id lastID (both empty when the units only
// removed messages); posts are the ids of the messages posted, and own the read positions their
// authors move to them.
type threadBump struct {
	n      int64
	posted int64
	last   string
	lastID string
	posts  []kernel.ID
	own    []readAdvance
}

func mergeBump(a, b threadBump) threadBump {
	if b.last < a.last {
		b.last = a.last
	}
	if b.lastID < a.lastID {
		b.lastID = a.lastID
	}
	return threadBump{n: a.n + b.n, posted: a.posted + b.posted, last: b.last, lastID: b.lastID,
		posts: append(a.posts, b.posts...), own: append(a.own, b.own...)}
}

// ownAdvances appends the read positions the bump's authors move, one per author (at their
// newest post), each with the number of the bump's posts after it, which the thread's
// post_count counts already and the position must not.
func (b threadBump) ownAdvances(to []ownAdvance) []ownAdvance {
	start := len(to)
next:
	for _, a := range b.own {
		for i := start; i < len(to); i++ {
			if to[i].principal == a.principal {
				if a.message > to[i].message {
					to[i].readAdvance = a
				}
				continue next
			}
		}
		to = append(to, ownAdvance{readAdvance: a})
	}
	for i := start; i < len(to); i++ {
		for _, p := range b.posts {
			if p > to[i].message {
				to[i].after++
			}
		}
	}
	return to
}

func (s *ChatStore) BumpThread(ctx context.Context, id kernel.ID, delta int, messageID kernel.ID, at time.Time) error {
	var res sql.Result
	var err error
	last, lastID := "", ""
	if delta > 0 {
		last, lastID = fmtTime(at), string(messageID)
	}
	var posts []kernel.ID
	if delta > 0 {
		posts = []kernel.ID{messageID}
	}
	if threadCounts.Record(ctx, id, threadBump{n: int64(delta), posted: int64(max(delta, 0)), last: last, lastID: lastID, posts: posts}) {
		// Applied at the commit of the batch, with the batch's other messages. The caller has
		// loaded the thread in this unit, so it exists.
		return nil
	}
	if delta > 0 {
		res, err = s.db.q(ctx).ExecContext(ctx, `UPDATE threads SET message_count = message_count + ?, post_count = post_count + ?, last_message_at = ?,
			last_message_id = CASE WHEN ? <> '' AND (last_message_id IS NULL OR last_message_id < ?) THEN ? ELSE last_message_id END WHERE id = ?`,
			delta, delta, fmtTime(at), lastID, lastID, lastID, string(id))
	} else {
		res, err = s.db.q(ctx).ExecContext(ctx, `UPDATE threads SET message_count = CASE WHEN message_count + ? < 0 THEN 0 ELSE message_count + ? END WHERE id = ?`,
			delta, delta, string(id))
	}
	return s.db.oneRowOrNotFound(res, err, "thread")
}

// keysetQuery appends the keyset condition, order and limit of p to base (which ends in a WHERE
// clause) on the id column col. It asks for one row more than the page to learn whether more lie
// beyond; desc reports that rows come newest first and must be reversed (trimPage does).
func keysetQuery(base, col string, args []any, p chat.Page) (string, []any, bool) {
	switch {
	case !p.After.IsZero():
		return base + ` AND ` + col + ` > ? ORDER BY ` + col + ` LIMIT ?`, append(args, string(p.After), p.Limit+1), false
	case !p.Before.IsZero():
		return base + ` AND ` + col + ` < ? ORDER BY ` + col + ` DESC LIMIT ?`, append(args, string(p.Before), p.Limit+1), true
	default:
		return base + ` ORDER BY ` + col + ` DESC LIMIT ?`, append(args, p.Limit+1), true
	}
}

// trimPage cuts the extra row keysetQuery asked for and puts the page in ascending order.
func trimPage[T any](rows []T, limit int, desc bool) ([]T, bool) {
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	if desc {
		slices.Reverse(rows)
	}
	return rows, more
}

// oneRowOrNotFound maps an UPDATE or DELETE that touched no row to not_found.
func (db *DB) oneRowOrNotFound(res sql.Result, err error, what string) error {
	if err != nil {
		return db.mapErr(err, what)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return db.mapErr(err, what)
	}
	if n == 0 {
		return kernel.ErrNotFound
	}
	return nil
}

func sqlBool(b bool) int {
	if b {
		return 1
	}
	return 0
}
