package storage

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/search"
	"bothy.dev/bothy/storage/commit"
	"bothy.dev/bothy/storage/engine"
)

// SearchStore reads the full-text index of messages (implements search.Index). The index is
// written by MessageStore and ChatStore in each message's own Unit of Work (migrate 0025):
// SQLite's is an FTS5 table keyed by the messages rowid, PostgreSQL's a table with a tsvector
// and a GIN index. See docs/architecture.md, "Search".
type SearchStore struct{ db *DB }

var _ search.Index = (*SearchStore)(nil)

// NewSearchStore returns the search index on db.
func NewSearchStore(db *DB) *SearchStore { return &SearchStore{db: db} }

// searchTag is the word of the SQLite index's tags column that stands for an id: kind (c for
// a channel, a for an author) and the id without dashes, one token for unicode61.
func searchTag(kind string, id kernel.ID) string {
	return kind + strings.ReplaceAll(string(id), "-", "")
}

// hasFileTag is the tag of a message with attachments.
const hasFileTag = "hasfile"

// firstOfThread is the thread's title when the message named by the last placeholder (its
// thread by the one before) is the first of a thread that has a title of its own, else ”.
const firstOfThread = `COALESCE((SELECT t.title FROM threads t WHERE t.id = ? AND t.is_main = 0
	AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.thread_id = t.id AND o.id < ?)), '')`

// indexMessage adds the message m, just inserted, to the search index: one statement.
func (db *DB) indexMessage(ctx context.Context, q querier, m messaging.Message) error {
	var err error
	switch db.dialect.Name() {
	case engine.SQLite:
		if searchInserts.Record(ctx, m.ID, struct{}{}) {
			return nil // written at the batch's commit, in its transaction (searchInserts)
		}
		_, err = q.ExecContext(ctx, sqliteIndexFromRow+` WHERE m.id = ? AND m.deleted_at IS NULL`, string(m.ID))
	case engine.Postgres:
		names := make([]string, 0, len(m.Attachments))
		for _, a := range m.Attachments {
			names = append(names, a.Name)
		}
		_, err = q.ExecContext(ctx, `INSERT INTO message_search (message_id, channel_id, author_id, has_file, body, files, title)
			VALUES (?, ?, ?, ?, ?, ?, `+firstOfThread+`)`,
			string(m.ID), string(m.ChannelID), string(m.AuthorID), len(m.Attachments) > 0,
			search.IndexText(m.Content), search.IndexText(strings.Join(names, " ")), string(m.ThreadID), string(m.ID))
	default:
		panic("storage: unknown dialect " + string(db.dialect.Name()))
	}
	return db.mapErr(err, "search index")
}

// SQLite's index is contentless (migration 0028): it keeps the words and no copy of the text,
// which is in messages already. Its row of a message is therefore always made from the message's
// row, as it is at that moment, whole: the content, the names of the attachments, the thread's
// title when the message is its first, and the tags of its channel, its author and has:file. An
// edit or a new title replaces the row (INSERT OR REPLACE), as a contentless table takes no
// UPDATE of some of its columns.

// sqliteIndexRow is the index row of messages m, as the columns rowid, body, files, title, tags.
const sqliteIndexRow = `m.rowid, m.content, ` + attachmentNames + `, ` + firstTitle + `,
		'c' || replace(m.channel_id, '-', '') || ' a' || replace(m.author_id, '-', '') ||
		CASE WHEN json_array_length(COALESCE(m.attachments, '[]')) > 0 THEN ' ` + hasFileTag + `' ELSE '' END`

// sqliteIndexFromRow writes the index rows of the messages m that its WHERE (to be appended)
// selects.
const sqliteIndexFromRow = `INSERT OR REPLACE INTO message_search (rowid, body, files, title, tags)
	SELECT ` + sqliteIndexRow + ` FROM messages m`

// attachmentNames are the names of the attachments of messages m, one space between each.
const attachmentNames = `COALESCE((SELECT group_concat(json_extract(a.value, '$.name'), ' ') FROM json_each(m.attachments) a), '')`

// firstTitle is the title of the thread of messages m when m is its first message, else ”.
const firstTitle = `COALESCE((SELECT t.title FROM threads t WHERE t.id = m.thread_id AND t.is_main = 0
		AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.thread_id = t.id AND o.id < m.id)), '')`

// searchInserts are the messages a batch inserts, added to SQLite's index at the batch's commit,
// in its transaction, after the units' savepoints: FTS5 writes what it holds in memory to a new
// segment of the index at every savepoint, so one row per savepoint made a segment per message
// and a merge of segments every few messages. At commit the batch's rows make one segment. The
// insert reads the message's row then, so an edit, a deletion or a thread's new title later in
// the same batch is what the index gets. A unit that fails records nothing.
var searchInserts = commit.NewAtCommitAll(func(_, b struct{}) struct{} { return b },
	func(exec func(q string, args ...any) error, ids []kernel.ID, _ map[kernel.ID]struct{}) error {
		// One statement for many rows: SQLite opens a savepoint of each statement that writes a
		// virtual table, and FTS5 flushes at each one.
		for len(ids) > 0 {
			n := min(len(ids), 300)
			args := make([]any, 0, n)
			for _, id := range ids[:n] {
				args = append(args, string(id))
			}
			if err := exec(sqliteIndexFromRow+` WHERE m.id IN (`+placeholders(n)+`) AND m.deleted_at IS NULL ORDER BY m.rowid`, args...); err != nil {
				return fmt.Errorf("search index: %w", err)
			}
			ids = ids[n:]
		}
		return nil
	})

// reindexBody writes the edited content of m into the search index.
func (db *DB) reindexBody(ctx context.Context, q querier, m messaging.Message) error {
	var err error
	switch db.dialect.Name() {
	case engine.SQLite:
		_, err = q.ExecContext(ctx, sqliteIndexFromRow+` WHERE m.id = ? AND m.deleted_at IS NULL`, string(m.ID))
	case engine.Postgres:
		_, err = q.ExecContext(ctx, `UPDATE message_search SET body = ? WHERE message_id = ?`, search.IndexText(m.Content), string(m.ID))
	default:
		panic("storage: unknown dialect " + string(db.dialect.Name()))
	}
	return db.mapErr(err, "search index")
}

// unindexMessage removes a deleted message from the search index.
func (db *DB) unindexMessage(ctx context.Context, q querier, id kernel.ID) error {
	var err error
	switch db.dialect.Name() {
	case engine.SQLite:
		_, err = q.ExecContext(ctx, `DELETE FROM message_search WHERE rowid = (SELECT rowid FROM messages WHERE id = ?)`, string(id))
	case engine.Postgres:
		_, err = q.ExecContext(ctx, `DELETE FROM message_search WHERE message_id = ?`, string(id))
	default:
		panic("storage: unknown dialect " + string(db.dialect.Name()))
	}
	return db.mapErr(err, "search index")
}

// indexTitle writes a thread's new title into the index row of its first message (none when
// that message is deleted, or the thread has none yet).
func (db *DB) indexTitle(ctx context.Context, q querier, threadID kernel.ID, title string) error {
	var err error
	switch db.dialect.Name() {
	case engine.SQLite:
		// The row is made again from the thread's row, which holds title already.
		_, err = q.ExecContext(ctx, sqliteIndexFromRow+` WHERE m.id = (SELECT id FROM messages WHERE thread_id = ? ORDER BY id LIMIT 1)
			AND m.deleted_at IS NULL`, string(threadID))
	case engine.Postgres:
		_, err = q.ExecContext(ctx, `UPDATE message_search SET title = ? WHERE message_id =
			(SELECT id FROM messages WHERE thread_id = ? ORDER BY id LIMIT 1)`, title, string(threadID))
	default:
		panic("storage: unknown dialect " + string(db.dialect.Name()))
	}
	return db.mapErr(err, "search index")
}

// Search implements search.Index. The channels, the author and has:file are part of the
// engine's index query, so every hit counted toward the limit is one the caller may read.
func (s *SearchStore) Search(ctx context.Context, sq search.IndexQuery) ([]search.Hit, error) {
	if sq.Limit <= 0 || (!sq.AllChannels && len(sq.Channels) == 0) {
		return []search.Hit{}, nil
	}
	var query string
	var args []any
	var err error
	switch s.db.dialect.Name() {
	case engine.SQLite:
		if sq, err = s.expandPrefixes(ctx, sq); err != nil {
			return nil, err
		}
		query, args, err = sqliteSearch(sq)
	case engine.Postgres:
		query, args, err = postgresSearch(sq)
	default:
		panic("storage: unknown dialect " + string(s.db.dialect.Name()))
	}
	if err != nil || query == "" {
		return []search.Hit{}, err
	}
	// Each query has its own text (its lists differ in length), so it does not go through the
	// read pool's cache of prepared statements.
	rows, err := s.db.readDB.QueryContext(ctx, s.db.dialect.Rebind(query), args...)
	if err != nil {
		return nil, s.db.mapErr(err, "search")
	}
	defer rows.Close()
	out := make([]search.Hit, 0, sq.Limit)
	for rows.Next() {
		var h search.Hit
		if err := rows.Scan(&h.Key, &h.MessageID, &h.ChannelID, &h.ThreadID, &h.Title); err != nil {
			return nil, s.db.mapErr(err, "search")
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, s.db.mapErr(err, "search")
	}
	if s.db.dialect.Name() == engine.SQLite {
		return out, s.hitTitles(ctx, out)
	}
	return out, nil
}

// hitTitles fills the titles of SQLite's hits, which its contentless index cannot give back:
// the thread's title on the hits that are the first message of their thread.
func (s *SearchStore) hitTitles(ctx context.Context, hits []search.Hit) error {
	if len(hits) == 0 {
		return nil
	}
	at := make(map[kernel.ID]int, len(hits))
	args := make([]any, 0, len(hits))
	for i, h := range hits {
		at[h.MessageID] = i
		args = append(args, string(h.MessageID))
	}
	rows, err := s.db.readDB.QueryContext(ctx, `SELECT m.id, `+firstTitle+` FROM messages m WHERE m.id IN (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return s.db.mapErr(err, "search")
	}
	defer rows.Close()
	for rows.Next() {
		var id kernel.ID
		var title string
		if err := rows.Scan(&id, &title); err != nil {
			return s.db.mapErr(err, "search")
		}
		if i, ok := at[id]; ok {
			hits[i].Title = title
		}
	}
	return s.db.mapErr(rows.Err(), "search")
}

// maxPrefixWords is how many words of the index a prefix is expanded to at most; a prefix
// that begins more stays a prefix query.
const maxPrefixWords = 64

// expandPrefixes turns each single word of sq matched as a prefix into the words of SQLite's
// index that it begins (message_search_vocab, a range of the index's terms), in Term.Expanded.
// FTS5 answers a prefix query without a prefix index by merging the doclists of all those
// words into one list in memory before it yields a row, so a common word searched as the
// last word of a query read its whole doclist; an OR of the words is stepped through newest
// first and stops at the limit.
func (s *SearchStore) expandPrefixes(ctx context.Context, sq search.IndexQuery) (search.IndexQuery, error) {
	terms := slices.Clone(sq.Terms)
	for i, t := range terms {
		if !t.Prefix || len(t.Words) != 1 {
			continue
		}
		rows, err := s.db.readDB.QueryContext(ctx, `SELECT term FROM message_search_vocab WHERE term >= ? AND term < ? LIMIT ?`,
			t.Words[0], t.Words[0]+"\U0010FFFF", maxPrefixWords+1)
		if err != nil {
			return sq, s.db.mapErr(err, "search vocabulary")
		}
		var words []string
		for rows.Next() {
			var w string
			if err := rows.Scan(&w); err != nil {
				rows.Close()
				return sq, s.db.mapErr(err, "search vocabulary")
			}
			words = append(words, w)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return sq, s.db.mapErr(err, "search vocabulary")
		}
		// None found stays a prefix query too: the index folds a few letters Go's Fold keeps
		// (storage/search_test.go holds the Latin ones equal), and it decides then.
		if len(words) > 0 && len(words) <= maxPrefixWords {
			terms[i].Expanded = words
		}
	}
	sq.Terms = terms
	return sq, nil
}

// maxChannelTags is how many channels an FTS5 query names as words before they go into its
// WHERE instead.
const maxChannelTags = 16

var errSearchCursor = kernel.Errorf(kernel.CodeCursorInvalid, "the cursor is not one this search handed out")

// ftsString is s as an FTS5 string: in double quotes, a quote inside doubled. The words of a
// query hold only letters, digits and marks; this holds even if one did not.
func ftsString(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// ftsTerm is a term as an FTS5 phrase: its words in one string, the last one as a prefix; a
// prefix expanded to the index's words is an OR of them.
func ftsTerm(t search.Term) string {
	if len(t.Expanded) > 0 {
		or := make([]string, len(t.Expanded))
		for i, w := range t.Expanded {
			or[i] = ftsString(w)
		}
		return "(" + strings.Join(or, " OR ") + ")"
	}
	p := ftsString(strings.Join(t.Words, " "))
	if t.Prefix {
		p += "*"
	}
	return p
}

// ftsTags is an OR of tags in the tags column.
func ftsTags(kind string, ids []kernel.ID) string {
	var b strings.Builder
	b.WriteString("tags : (")
	for i, id := range ids {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(searchTag(kind, id))
	}
	b.WriteString(")")
	return b.String()
}

// sqliteSearch is the FTS5 query of sq: one MATCH expression holds the words, the channels,
// the author and has:file.
func sqliteSearch(sq search.IndexQuery) (string, []any, error) {
	var pos, neg []string
	var words []string
	for _, t := range sq.Terms {
		if t.Exclude {
			neg = append(neg, "{body files title} : "+ftsTerm(t))
		} else {
			words = append(words, ftsTerm(t))
		}
	}
	if len(words) > 0 {
		pos = append(pos, "{body files title} : ("+strings.Join(words, " AND ")+")")
	}
	if !sq.AuthorID.IsZero() {
		pos = append(pos, "tags : "+searchTag("a", sq.AuthorID))
	}
	if sq.HasFile {
		pos = append(pos, "tags : "+hasFileTag)
	}
	// A few channels are words of the MATCH; more go into the WHERE of the same query, on the
	// messages row: FTS5 steps through an OR of a hundred doclists (one per channel, in each
	// segment) far slower than it reads the words' own doclist and leaves SQLite the channel of
	// each candidate (bench/README.md, "Files and search"). Both filter before the LIMIT.
	inWhere := sq.AllChannels || len(sq.Channels) > maxChannelTags
	if !inWhere || len(pos) == 0 && !sq.AllChannels {
		pos = append(pos, ftsTags("c", sq.Channels))
		inWhere = false
	}
	if len(pos) == 0 {
		return "", nil, nil
	}
	match := "(" + strings.Join(pos, ") AND (") + ")"
	for _, n := range neg {
		match += " NOT (" + n + ")"
	}
	var b strings.Builder
	args := []any{match}
	b.WriteString(`SELECT s.rowid, m.id, m.channel_id, m.thread_id, '' FROM message_search s JOIN messages m ON m.rowid = s.rowid
		WHERE message_search MATCH ?`)
	if inWhere && len(sq.Channels) > 0 {
		if sq.AllChannels {
			b.WriteString(` AND m.channel_id NOT IN (` + placeholders(len(sq.Channels)) + `)`)
		} else {
			b.WriteString(` AND m.channel_id IN (` + placeholders(len(sq.Channels)) + `)`)
		}
		for _, c := range sq.Channels {
			args = append(args, string(c))
		}
	}
	if sq.Key != "" {
		n, err := strconv.ParseInt(sq.Key, 10, 64)
		if err != nil {
			return "", nil, errSearchCursor
		}
		b.WriteString(` AND s.rowid < ?`)
		args = append(args, n)
	}
	timeBounds(&b, &args, sq)
	if sq.Sort == search.SortRelevance {
		b.WriteString(` ORDER BY s.rank, s.rowid DESC LIMIT ? OFFSET ?`)
		args = append(args, sq.Limit, sq.Offset)
	} else {
		b.WriteString(` ORDER BY s.rowid DESC LIMIT ?`)
		args = append(args, sq.Limit)
	}
	return b.String(), args, nil
}

// timeBounds adds sq's bounds on created_at (of messages m).
func timeBounds(b *strings.Builder, args *[]any, sq search.IndexQuery) {
	if !sq.Before.IsZero() {
		b.WriteString(` AND m.created_at < ?`)
		*args = append(*args, fmtTime(sq.Before))
	}
	if !sq.After.IsZero() {
		b.WriteString(` AND m.created_at > ?`)
		*args = append(*args, fmtTime(sq.After))
	}
}

// tsTerm is a term as a tsquery: each word a quoted lexeme, a phrase joined by <->, the last
// word of a prefix term with :*.
func tsTerm(t search.Term) string {
	parts := make([]string, len(t.Words))
	for i, w := range t.Words {
		parts[i] = "'" + strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(w) + "'"
	}
	if t.Prefix {
		parts[len(parts)-1] += ":*"
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " <-> ") + ")"
}

// postgresSearch is the query of sq on the tsvector, with the filters as columns of the same
// rows.
func postgresSearch(sq search.IndexQuery) (string, []any, error) {
	var parts []string
	for _, t := range sq.Terms {
		if t.Exclude {
			parts = append(parts, "!"+tsTerm(t))
		} else {
			parts = append(parts, tsTerm(t))
		}
	}
	var b strings.Builder
	var args []any
	b.WriteString(`SELECT s.message_id, s.message_id, s.channel_id, m.thread_id, s.title FROM message_search s
		JOIN messages m ON m.id = s.message_id WHERE true`)
	tsq := ""
	if len(parts) > 0 {
		tsq = strings.Join(parts, " & ")
		b.WriteString(` AND s.doc @@ to_tsquery('simple', ?)`)
		args = append(args, tsq)
	}
	if len(sq.Channels) > 0 {
		if sq.AllChannels {
			b.WriteString(` AND s.channel_id NOT IN (` + placeholders(len(sq.Channels)) + `)`)
		} else {
			b.WriteString(` AND s.channel_id IN (` + placeholders(len(sq.Channels)) + `)`)
		}
		for _, c := range sq.Channels {
			args = append(args, string(c))
		}
	}
	if !sq.AuthorID.IsZero() {
		b.WriteString(` AND s.author_id = ?`)
		args = append(args, string(sq.AuthorID))
	}
	if sq.HasFile {
		b.WriteString(` AND s.has_file`)
	}
	if sq.Key != "" {
		if _, err := kernel.ParseID(sq.Key); err != nil {
			return "", nil, errSearchCursor
		}
		b.WriteString(` AND s.message_id < ?`)
		args = append(args, sq.Key)
	}
	timeBounds(&b, &args, sq)
	if sq.Sort == search.SortRelevance && tsq != "" {
		b.WriteString(` ORDER BY ts_rank(s.doc, to_tsquery('simple', ?)) DESC, s.message_id DESC LIMIT ? OFFSET ?`)
		args = append(args, tsq, sq.Limit, sq.Offset)
	} else if sq.Sort == search.SortRelevance {
		b.WriteString(` ORDER BY s.message_id DESC LIMIT ? OFFSET ?`)
		args = append(args, sq.Limit, sq.Offset)
	} else {
		b.WriteString(` ORDER BY s.message_id DESC LIMIT ?`)
		args = append(args, sq.Limit)
	}
	return b.String(), args, nil
}

// ChannelNames implements search.Index: names in lower case.
func (s *SearchStore) ChannelNames(ctx context.Context) (map[string][]kernel.ID, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT id, name FROM channels`)
	if err != nil {
		return nil, s.db.mapErr(err, "channels")
	}
	defer rows.Close()
	out := map[string][]kernel.ID{}
	for rows.Next() {
		var id kernel.ID
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, s.db.mapErr(err, "channels")
		}
		k := strings.ToLower(name)
		out[k] = append(out[k], id)
	}
	return out, s.db.mapErr(rows.Err(), "channels")
}

// ChannelIDs implements search.Index.
func (s *SearchStore) ChannelIDs(ctx context.Context) ([]kernel.ID, error) {
	rows, err := s.db.q(ctx).QueryContext(ctx, `SELECT id FROM channels`)
	if err != nil {
		return nil, s.db.mapErr(err, "channels")
	}
	defer rows.Close()
	var out []kernel.ID
	for rows.Next() {
		var id kernel.ID
		if err := rows.Scan(&id); err != nil {
			return nil, s.db.mapErr(err, "channels")
		}
		out = append(out, id)
	}
	return out, s.db.mapErr(rows.Err(), "channels")
}
