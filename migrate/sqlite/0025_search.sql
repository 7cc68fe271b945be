-- The full-text index of messages (storage/search.go; docs/architecture.md, "Search"). One row
-- per message that is not deleted, its rowid the messages row's rowid, so that ORDER BY rowid
-- DESC is newest first and FTS5 answers it from the index itself. Its columns:
--   body   the content;
--   files  the names of the attachments;
--   title  the thread's title, on the first message of a thread only;
--   tags   one word per filter the index answers: c<channel id>, a<author id> (ids without
--          dashes) and hasfile, so that the channels a caller may read, the author and has:file
--          are conditions of the index query itself, never a filter after a page is cut.
-- storage writes it in the message's own Unit of Work: insert, edit (body), delete (the row goes)
-- and a thread's new title. Diacritics are folded (café finds cafe). The last word of a query,
-- from four letters on, is matched as a prefix, by the words of the index it begins
-- (message_search_vocab) as an OR of them: there is no prefix index, which would write every
-- word once more with each message.
-- columnsize = 0 leaves out the table of each row's column sizes, one write less per message;
-- only a search by relevance reads them, and computes them then.

CREATE VIRTUAL TABLE message_search USING fts5(
    body, files, title, tags,
    tokenize = "unicode61 remove_diacritics 2",
    columnsize = 0
);

-- The index's words, which a query's last word, a prefix, is expanded to (storage/search.go).
CREATE VIRTUAL TABLE message_search_vocab USING fts5vocab(message_search, 'row');

-- The messages already there (no attachments existed before this version).
INSERT INTO message_search (rowid, body, files, title, tags)
SELECT m.rowid, m.content, '',
       CASE WHEN t.is_main = 0 AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.thread_id = m.thread_id AND o.id < m.id)
            THEN t.title ELSE '' END,
       'c' || replace(m.channel_id, '-', '') || ' a' || replace(m.author_id, '-', '')
FROM messages m JOIN threads t ON t.id = m.thread_id
WHERE m.deleted_at IS NULL
ORDER BY m.rowid;
