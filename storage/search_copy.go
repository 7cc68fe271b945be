package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/search"
	"bothy.dev/bothy/storage/engine"
)

// isSearchTable reports the tables of the search index (migrate 0025), which Copy does not copy
// as they are: SQLite's FTS5 table with its shadow tables, PostgreSQL's message_search.
func isSearchTable(name string) bool {
	return name == "message_search" || strings.HasPrefix(name, "message_search_")
}

// searchRow is one row of the search index in the terms both engines share.
type searchRow struct {
	messageID, channelID, authorID string
	hasFile                        bool
	body, files, title             string
}

// copySearchIndex reads every row of the source's search index and writes it into the target's,
// after the messages: the target finds what the source found, attachment names included.
func copySearchIndex(ctx context.Context, stx *sql.Tx, sd Dialect, dtx execQuerier, dd Dialect, o CopyOptions) error {
	start := time.Now()
	var query string
	switch sd.Name() {
	case engine.SQLite:
		// The index is contentless: its rows are made again from the messages it holds.
		query = `SELECT m.id, m.channel_id, m.author_id, json_array_length(COALESCE(m.attachments, '[]')) > 0, m.content,
			` + attachmentNames + `, ` + firstTitle + ` FROM messages m WHERE m.deleted_at IS NULL ORDER BY m.rowid`
	case engine.Postgres:
		query = `SELECT message_id, channel_id, author_id, has_file, body, files, title FROM message_search ORDER BY message_id`
	default:
		panic("storage: unknown dialect " + string(sd.Name()))
	}
	rows, err := stx.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("copy: source: read the search index: %w", err)
	}
	defer rows.Close()
	var batch []searchRow
	var copied int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := writeSearchRows(ctx, dtx, dd, batch); err != nil {
			return fmt.Errorf("copy: target: the search index: %w", err)
		}
		copied += int64(len(batch))
		batch = batch[:0]
		return nil
	}
	for rows.Next() {
		var r searchRow
		if err := rows.Scan(&r.messageID, &r.channelID, &r.authorID, &r.hasFile, &r.body, &r.files, &r.title); err != nil {
			return fmt.Errorf("copy: source: read the search index: %w", err)
		}
		batch = append(batch, r)
		if len(batch) >= o.BatchRows {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("copy: source: read the search index: %w", err)
	}
	if err := flush(); err != nil {
		return err
	}
	_ = start
	return nil
}

// writeSearchRows inserts rows into the target's index as that engine keeps it. PostgreSQL's
// words are split as search.IndexText splits them (a no-op for rows from PostgreSQL).
func writeSearchRows(ctx context.Context, dtx execQuerier, dd Dialect, rows []searchRow) error {
	var b strings.Builder
	var args []any
	switch dd.Name() {
	case engine.SQLite:
		// FTS5 takes one row per statement through a SELECT for its rowid.
		for _, r := range rows {
			tags := searchTag("c", kernel.ID(r.channelID)) + " " + searchTag("a", kernel.ID(r.authorID))
			if r.hasFile {
				tags += " " + hasFileTag
			}
			if _, err := dtx.ExecContext(ctx, `INSERT INTO message_search (rowid, body, files, title, tags)
				SELECT rowid, ?, ?, ?, ? FROM messages WHERE id = ?`, r.body, r.files, r.title, tags, r.messageID); err != nil {
				return err
			}
		}
		return nil
	case engine.Postgres:
		b.WriteString(`INSERT INTO message_search (message_id, channel_id, author_id, has_file, body, files, title) VALUES `)
		for i, r := range rows {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			args = append(args, r.messageID, r.channelID, r.authorID, r.hasFile, search.IndexText(r.body), search.IndexText(r.files), r.title)
		}
		_, err := dtx.ExecContext(ctx, dd.Rebind(b.String()), args...)
		return err
	default:
		panic("storage: unknown dialect " + string(dd.Name()))
	}
}
