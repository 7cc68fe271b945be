-- SQLite's full-text index keeps the words only (storage/search.go): a contentless FTS5 table
-- (content='') that still takes the deletion of a row (contentless_delete=1), instead of one
-- that kept its own copy of every message's text beside messages. Its rows are made from the
-- messages' rows, as storage makes them: the content, the attachments' names, the thread's
-- title on a thread's first message, the tags of the channel, the author and has:file. FTS5
-- refuses column sizes off (columnsize=0) with contentless_delete: the table keeps them again.
DROP TABLE message_search_vocab;
DROP TABLE message_search;

CREATE VIRTUAL TABLE message_search USING fts5(
    body, files, title, tags,
    content = '',
    contentless_delete = 1,
    tokenize = "unicode61 remove_diacritics 2"
);

CREATE VIRTUAL TABLE message_search_vocab USING fts5vocab(message_search, 'row');

INSERT INTO message_search (rowid, body, files, title, tags)
SELECT m.rowid, m.content,
       COALESCE((SELECT group_concat(json_extract(a.value, '$.name'), ' ') FROM json_each(m.attachments) a), ''),
       COALESCE((SELECT t.title FROM threads t WHERE t.id = m.thread_id AND t.is_main = 0
           AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.thread_id = t.id AND o.id < m.id)), ''),
       'c' || replace(m.channel_id, '-', '') || ' a' || replace(m.author_id, '-', '') ||
       CASE WHEN json_array_length(COALESCE(m.attachments, '[]')) > 0 THEN ' hasfile' ELSE '' END
FROM messages m
WHERE m.deleted_at IS NULL
ORDER BY m.rowid;
