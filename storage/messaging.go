package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// MessageStore is the repository of messaging: messages, revisions, mentions, reactions
// (implements messaging.Store). It also resolves @handles (messaging.Directory) until identity
// offers that read itself.
type MessageStore struct{ db *DB }

var (
	_ messaging.Store     = (*MessageStore)(nil)
	_ messaging.Directory = (*MessageStore)(nil)
	_ messaging.Redactor  = (*DB)(nil)
)

// NewMessageStore returns messaging's repository on db.
func NewMessageStore(db *DB) *MessageStore { return &MessageStore{db: db} }

func emptyAsNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *MessageStore) InsertMessage(ctx context.Context, m messaging.Message) (bool, error) {
	q := s.db.q(ctx)
	var trigger any
	if m.TriggerState != nil {
		trigger = *m.TriggerState
	}
	components, err := componentsColumn(m.Components)
	if err != nil {
		return false, err
	}
	triggers, err := jsonListColumn("triggers", m.Triggers) // NULL when it concerned no agent
	if err != nil {
		return false, err
	}
	attachments, err := attachmentsColumn(m.Attachments)
	if err != nil {
		return false, err
	}
	res, err := q.ExecContext(ctx, `INSERT INTO messages (id, thread_id, channel_id, space_id, author_id, content, client_msg_id, version, created_at,
		run_id, trigger_state, components, triggers, attachments) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (author_id, client_msg_id) DO NOTHING`,
		string(m.ID), string(m.ThreadID), string(m.ChannelID), string(m.SpaceID), string(m.AuthorID), m.Content,
		emptyAsNull(string(m.ClientMsgID)), m.Version, fmtTime(m.CreatedAt), nullIDPtr(m.RunID), trigger, components, triggers, attachments)
	if err != nil {
		return false, s.db.mapErr(err, "message")
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.db.mapErr(err, "message")
	}
	if n == 0 {
		return false, nil
	}
	s.db.countCreated(ctx, statMessages, m.CreatedAt)
	if err := s.db.indexMessage(ctx, q, m); err != nil {
		return false, err
	}
	return true, s.insertMentions(ctx, q, m, mentionRows(m), false)
}

// mentionRows are everyone m mentions: its explicit mentions and whom @here or @channel
// reached besides them, one row each.
func mentionRows(m messaging.Message) []kernel.ID {
	if len(m.BroadcastTo) == 0 {
		return m.Mentions
	}
	return append(append(make([]kernel.ID, 0, len(m.Mentions)+len(m.BroadcastTo)), m.Mentions...), m.BroadcastTo...)
}

// insertMentions records whom m mentions (mentions, its rows), with its thread, which lets a read
// position count a thread's mentions after it as one range of mentions_thread, and adds them to
// each person's tally in the thread. recount counts an edited message's tallies again instead
// of adding to them.
func (s *MessageStore) insertMentions(ctx context.Context, q querier, m messaging.Message, mentions []kernel.ID, recount bool) error {
	if len(mentions) == 0 {
		return nil
	}
	id, thread, channel, at := m.ID, m.ThreadID, m.ChannelID, fmtTime(m.CreatedAt)
	var sb strings.Builder
	sb.WriteString(`INSERT INTO mentions (message_id, principal_id, thread_id) VALUES `)
	args := make([]any, 0, 3*len(mentions))
	for i, p := range mentions {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?)")
		args = append(args, string(id), string(p), string(thread))
	}
	if _, err := q.ExecContext(ctx, sb.String(), args...); err != nil {
		return s.db.mapErr(err, "mentions")
	}
	// Each mentioned person's tally in the thread, on their read position (created with nothing
	// read when they have none): the unread read counts the mentions from it (migrate 0019).
	sb.Reset()
	sb.WriteString(`INSERT INTO read_states (principal_id, thread_id, channel_id, last_read_message_id, read_count, updated_at, mention_count) VALUES `)
	args = args[:0]
	for i, p := range mentions {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?, '', 0, ?, 1)")
		args = append(args, string(p), string(thread), string(channel), at)
	}
	if recount {
		sb.WriteString(` ON CONFLICT (principal_id, thread_id) DO UPDATE SET ` + recountMentions)
	} else {
		sb.WriteString(` ON CONFLICT (principal_id, thread_id) DO UPDATE SET mention_count = read_states.mention_count + 1`)
	}
	_, err := q.ExecContext(ctx, sb.String(), args...)
	return s.db.mapErr(err, "mentions")
}

// messageSelect reads a message with the thread under it, if any (threads_parent_message): its
// reply count and last reply are that thread's counters, so a reply writes no row of the parent.
const messageSelect = `SELECT m.id, m.thread_id, m.channel_id, m.space_id, m.author_id, m.content, m.client_msg_id, m.version,
	m.created_at, m.edited_at, m.deleted_at, m.run_id, m.trigger_state, m.components, m.triggers, m.attachments, c.kind, r.id, r.message_count, r.last_message_at
	FROM messages m JOIN channels c ON c.id = m.channel_id LEFT JOIN threads r ON r.parent_message_id = m.id`

func scanMessage(sc interface{ Scan(...any) error }) (messaging.Message, error) {
	var m messaging.Message
	var cmid, edited, deleted, runID, trigger, components, triggers, attachments, replies, lastReply sql.NullString
	var replyCount sql.NullInt64
	var created string
	err := sc.Scan(&m.ID, &m.ThreadID, &m.ChannelID, &m.SpaceID, &m.AuthorID, &m.Content, &cmid, &m.Version,
		&created, &edited, &deleted, &runID, &trigger, &components, &triggers, &attachments, &m.ChannelKind, &replies, &replyCount, &lastReply)
	if err == nil && components.Valid {
		if jerr := json.Unmarshal([]byte(components.String), &m.Components); jerr != nil {
			return m, fmt.Errorf("storage: message %s: components: %w", m.ID, jerr)
		}
	}
	if err == nil && attachments.Valid {
		if jerr := json.Unmarshal([]byte(attachments.String), &m.Attachments); jerr != nil {
			return m, fmt.Errorf("storage: message %s: attachments: %w", m.ID, jerr)
		}
	}
	if err == nil && triggers.Valid {
		if jerr := json.Unmarshal([]byte(triggers.String), &m.Triggers); jerr != nil {
			return m, fmt.Errorf("storage: message %s: triggers: %w", m.ID, jerr)
		}
	}
	m.ClientMsgID, m.CreatedAt, m.EditedAt, m.Deleted = messaging.ClientMsgID(cmid.String), parseTime(created), parseNullTime(edited), deleted.Valid
	if runID.Valid {
		id := kernel.ID(runID.String)
		m.RunID = &id
	}
	if trigger.Valid {
		m.TriggerState = &trigger.String
	}
	if replies.Valid {
		id, n := kernel.ID(replies.String), replyCount.Int64
		m.ReplyThreadID, m.ReplyCount, m.LastReplyAt = &id, &n, parseNullTime(lastReply)
	}
	m.Mentions = []kernel.ID{}
	return m, err
}

// oneMessage loads a message by a condition on m and fills its mentions.
func (s *MessageStore) oneMessage(ctx context.Context, where string, args ...any) (messaging.Message, error) {
	q := s.db.q(ctx)
	m, err := scanMessage(q.QueryRowContext(ctx, messageSelect+` WHERE `+where, args...))
	if err != nil {
		return m, s.db.mapErr(err, "message")
	}
	out := []messaging.Message{m}
	err = s.fillMentions(ctx, q, out)
	return out[0], err
}

func (s *MessageStore) MessageByClientID(ctx context.Context, author kernel.ID, clientMsgID string) (messaging.Message, error) {
	if clientMsgID == "" {
		return messaging.Message{}, kernel.ErrNotFound
	}
	return s.oneMessage(ctx, `m.author_id = ? AND m.client_msg_id = ?`, string(author), clientMsgID)
}

func (s *MessageStore) Message(ctx context.Context, id kernel.ID) (messaging.Message, error) {
	return s.oneMessage(ctx, `m.id = ?`, string(id))
}

func (s *MessageStore) Messages(ctx context.Context, threadID kernel.ID, p chat.Page) ([]messaging.Message, bool, error) {
	q := s.db.q(ctx)
	query, args, desc := keysetQuery(messageSelect+` WHERE m.thread_id = ?`, "m.id", []any{string(threadID)}, p)
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, s.db.mapErr(err, "messages")
	}
	out := make([]messaging.Message, 0, p.Limit+1)
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			rows.Close()
			return nil, false, s.db.mapErr(err, "messages")
		}
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, s.db.mapErr(err, "messages")
	}
	out, more := trimPage(out, p.Limit, desc)
	if err := s.fillMentions(ctx, q, out); err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// byIDs reads the messages of ids (repeats allowed) with their mentions, by id; an id of no
// message is not in the map.
func (s *MessageStore) byIDs(ctx context.Context, q querier, ids []kernel.ID) (map[kernel.ID]messaging.Message, error) {
	out := make(map[kernel.ID]messaging.Message, len(ids))
	const chunk = 500
	for len(ids) > 0 {
		n := min(len(ids), chunk)
		args := make([]any, 0, n)
		for _, id := range ids[:n] {
			if _, seen := out[id]; !seen {
				out[id] = messaging.Message{}
				args = append(args, string(id))
			}
		}
		ids = ids[n:]
		if len(args) == 0 {
			continue
		}
		rows, err := q.QueryContext(ctx, messageSelect+` WHERE m.id IN (`+placeholders(len(args))+`)`, args...)
		if err != nil {
			return nil, s.db.mapErr(err, "messages")
		}
		var found []messaging.Message
		for rows.Next() {
			m, err := scanMessage(rows)
			if err != nil {
				rows.Close()
				return nil, s.db.mapErr(err, "messages")
			}
			found = append(found, m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, s.db.mapErr(err, "messages")
		}
		if err := s.fillMentions(ctx, q, found); err != nil {
			return nil, err
		}
		for _, m := range found {
			out[m.ID] = m
		}
	}
	for id, m := range out {
		if m.ID == "" {
			delete(out, id)
		}
	}
	return out, nil
}

// fillMentions reads the mentions of the messages out in one query and adds them to each.
func (s *MessageStore) fillMentions(ctx context.Context, q querier, out []messaging.Message) error {
	if len(out) == 0 {
		return nil
	}
	at := make(map[kernel.ID]int, len(out))
	args := make([]any, 0, len(out))
	for i, m := range out {
		at[m.ID] = i
		args = append(args, string(m.ID))
	}
	rows, err := q.QueryContext(ctx, `SELECT n.message_id, n.principal_id, p.handle_key FROM mentions n JOIN principals p ON p.id = n.principal_id
		WHERE n.message_id IN (`+placeholders(len(args))+`) ORDER BY n.message_id, n.principal_id`, args...)
	if err != nil {
		return s.db.mapErr(err, "mentions")
	}
	defer rows.Close()
	found := make([][]messaging.MentionRow, len(out))
	for rows.Next() {
		var mid kernel.ID
		var r messaging.MentionRow
		if err := rows.Scan(&mid, &r.PrincipalID, &r.HandleKey); err != nil {
			return s.db.mapErr(err, "mentions")
		}
		if i, ok := at[mid]; ok {
			found[i] = append(found[i], r)
		}
	}
	if err := rows.Err(); err != nil {
		return s.db.mapErr(err, "mentions")
	}
	// The rows carry everyone a message mentions; its JSON form shows the explicit ones and
	// whether @here or @channel reached more.
	for i := range out {
		if len(found[i]) > 0 {
			out[i].Mentions, out[i].Broadcast = messaging.ReadMentions(out[i].Content, found[i])
		}
	}
	return nil
}

func (s *MessageStore) UpdateMessage(ctx context.Context, m messaging.Message, prev messaging.Revision) error {
	q := s.db.q(ctx)
	if _, err := q.ExecContext(ctx, `INSERT INTO message_revisions (message_id, version, content, created_at) VALUES (?, ?, ?, ?)`,
		string(prev.MessageID), prev.Version, prev.Content, fmtTime(prev.CreatedAt)); err != nil {
		return s.db.mapErr(err, "message revision")
	}
	components, err := componentsColumn(m.Components)
	if err != nil {
		return err
	}
	res, err := q.ExecContext(ctx, `UPDATE messages SET content = ?, version = ?, edited_at = ?, components = ? WHERE id = ?`,
		m.Content, m.Version, fmtTimePtr(m.EditedAt), components, string(m.ID))
	if err := s.db.oneRowOrNotFound(res, err, "message"); err != nil {
		return err
	}
	if err := s.db.reindexBody(ctx, q, m); err != nil {
		return err
	}
	// The edit may drop mentions: whom the message mentioned before is counted again too.
	var before []kernel.ID
	rows, err := q.QueryContext(ctx, `SELECT principal_id FROM mentions WHERE message_id = ?`, string(m.ID))
	if err != nil {
		return s.db.mapErr(err, "mentions")
	}
	for rows.Next() {
		var p kernel.ID
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return s.db.mapErr(err, "mentions")
		}
		before = append(before, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.db.mapErr(err, "mentions")
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM mentions WHERE message_id = ?`, string(m.ID)); err != nil {
		return s.db.mapErr(err, "mentions")
	}
	now := mentionRows(m)
	if err := s.insertMentions(ctx, q, m, now, true); err != nil {
		return err
	}
	for _, p := range before {
		if slices.Contains(now, p) {
			continue
		}
		if _, err := q.ExecContext(ctx, `UPDATE read_states SET `+recountMentions+` WHERE principal_id = ? AND thread_id = ?`,
			string(p), string(m.ThreadID)); err != nil {
			return s.db.mapErr(err, "mentions")
		}
	}
	return nil
}

// UpdateComponents writes a message's components and version alone (messaging.Store).
func (s *MessageStore) UpdateComponents(ctx context.Context, m messaging.Message) error {
	components, err := componentsColumn(m.Components)
	if err != nil {
		return err
	}
	res, err := s.db.q(ctx).ExecContext(ctx, `UPDATE messages SET components = ?, version = ? WHERE id = ?`,
		components, m.Version, string(m.ID))
	return s.db.oneRowOrNotFound(res, err, "message")
}

// componentsColumn is the messages.components of rows: their JSON, or NULL for none.
func componentsColumn(rows []messaging.ActionRow) (any, error) {
	return jsonListColumn("components", rows)
}

// jsonListColumn is a text column that holds list as JSON, or NULL for an empty list; column
// names it in the error.
func jsonListColumn[T any](column string, list []T) (any, error) {
	if len(list) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", column, err)
	}
	return string(b), nil
}

// recountMentions sets a read position's mention tally from the mentions themselves (read_states
// the row): after an edit, which may add or drop mentions of a message already counted.
const recountMentions = `mention_count = (SELECT COUNT(*) FROM mentions n WHERE n.principal_id = read_states.principal_id
	AND n.thread_id = read_states.thread_id),
	mentions_read = (SELECT COUNT(*) FROM mentions n WHERE n.principal_id = read_states.principal_id
	AND n.thread_id = read_states.thread_id AND n.message_id <= read_states.last_read_message_id)`

func (s *MessageStore) DeleteMessage(ctx context.Context, m messaging.Message, at time.Time) error {
	q := s.db.q(ctx)
	res, err := q.ExecContext(ctx, `UPDATE messages SET content = '', components = NULL, attachments = NULL, version = ?, deleted_at = ? WHERE id = ?`,
		m.Version, fmtTime(at), string(m.ID))
	if err := s.db.oneRowOrNotFound(res, err, "message"); err != nil {
		return err
	}
	if err := s.db.unindexMessage(ctx, q, m.ID); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM message_revisions WHERE message_id = ?`, string(m.ID)); err != nil {
		return s.db.mapErr(err, "message revisions")
	}
	_, err = q.ExecContext(ctx, `DELETE FROM mentions WHERE message_id = ?`, string(m.ID))
	return s.db.mapErr(err, "mentions")
}

func (s *MessageStore) Revisions(ctx context.Context, messageID kernel.ID) ([]messaging.Revision, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT message_id, version, content, created_at FROM message_revisions
		WHERE message_id = ? ORDER BY version`, string(messageID))
	if err != nil {
		return nil, s.db.mapErr(err, "message revisions")
	}
	defer rows.Close()
	out := []messaging.Revision{}
	for rows.Next() {
		var r messaging.Revision
		var created string
		if err := rows.Scan(&r.MessageID, &r.Version, &r.Content, &created); err != nil {
			return nil, s.db.mapErr(err, "message revisions")
		}
		r.CreatedAt = parseTime(created)
		out = append(out, r)
	}
	return out, s.db.mapErr(rows.Err(), "message revisions")
}

func (s *MessageStore) AddReaction(ctx context.Context, r messaging.Reaction) (bool, error) {
	res, err := s.db.q(ctx).ExecContext(ctx, `INSERT INTO reactions (message_id, principal_id, emoji, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (message_id, emoji, principal_id) DO NOTHING`,
		string(r.MessageID), string(r.PrincipalID), r.Emoji, fmtTime(r.CreatedAt))
	return s.db.changedRows(res, err, "reaction")
}

func (s *MessageStore) RemoveReaction(ctx context.Context, messageID, principalID kernel.ID, emoji string) (bool, error) {
	res, err := s.db.q(ctx).ExecContext(ctx, `DELETE FROM reactions WHERE message_id = ? AND emoji = ? AND principal_id = ?`,
		string(messageID), emoji, string(principalID))
	return s.db.changedRows(res, err, "reaction")
}

// changedRows reports whether a write touched a row.
func (db *DB) changedRows(res sql.Result, err error, what string) (bool, error) {
	if err != nil {
		return false, db.mapErr(err, what)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, db.mapErr(err, what)
	}
	return n > 0, nil
}

// ResolveHandles reads the active principals holding the handle keys (principals.handle_key,
// the lower-case handle).
func (s *MessageStore) ResolveHandles(ctx context.Context, keys []string) (map[string]kernel.ID, error) {
	out := make(map[string]kernel.ID, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT handle_key, id FROM principals WHERE handle_key IN (`+placeholders(len(keys))+`)
		AND status = 'active'`, args...)
	if err != nil {
		return nil, s.db.mapErr(err, "principals")
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var id kernel.ID
		if err := rows.Scan(&k, &id); err != nil {
			return nil, s.db.mapErr(err, "principals")
		}
		out[k] = id
	}
	return out, s.db.mapErr(rows.Err(), "principals")
}
