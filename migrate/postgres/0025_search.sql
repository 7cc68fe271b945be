-- The full-text index of messages (storage/search.go; docs/architecture.md, "Search"): one row
-- per message that is not deleted. Its columns:
--   channel_id, author_id, has_file  the filters the index answers, in the same query as the words;
--   body, files  the content and the names of the attachments, as the words storage splits them
--                into (search.IndexText: folded, one space between each), so that PostgreSQL's
--                parser finds the same words as a query, not a host name or an e-mail address;
--   title        the thread's title, on the first message of a thread only, as it is;
--   doc          the words of the three, in the simple configuration (no stemming, no stop
--                words), the title folded here with the same letters as search.Fold.
-- Newest first is message_id DESC (ids grow with time). storage writes it in the message's own
-- Unit of Work: insert, edit (body), delete (the row goes) and a thread's new title.

CREATE TABLE message_search (
    message_id TEXT COLLATE "C" PRIMARY KEY REFERENCES messages (id),
    channel_id TEXT COLLATE "C" NOT NULL,
    author_id  TEXT COLLATE "C" NOT NULL,
    has_file   BOOLEAN NOT NULL DEFAULT false,
    body       TEXT NOT NULL,
    files      TEXT NOT NULL DEFAULT '',
    title      TEXT NOT NULL DEFAULT '',
    doc        tsvector GENERATED ALWAYS AS (to_tsvector('simple', body || ' ' || files || ' ' ||
                   regexp_replace(translate(lower(title),
                       'ÀÁÂÃÄÅàáâãäåÇçÈÉÊËèéêëÌÍÎÏìíîïÑñÒÓÔÕÖØòóôõöøÙÚÛÜùúûüÝýÿĀāĂăĄąĆćĈĉĊċČčĎďĐđĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĦħĨĩĪīĬĭĮįİıĴĵĶķĹĺĻļĽľĿŀŁłŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŦŧŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽž',
                       'aaaaaaaaaaaacceeeeeeeeiiiiiiiinnoooooooooooouuuuuuuuyyyaaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiiijjkkllllllllllnnnnnnoooooorrrrrrssssssssttttttuuuuuuuuuuuuwwyyyzzzzzz'),
                   '[^[:alnum:]]+', ' ', 'g'))) STORED
);
CREATE INDEX message_search_doc ON message_search USING gin (doc);
-- An author's messages newest first, for from:@handle: the planner walks them and checks the
-- words of each, instead of reading every message with a common word.
CREATE INDEX message_search_author ON message_search (author_id, message_id);

-- The messages already there (no attachments existed before this version), their words split
-- as search.IndexText splits them.
INSERT INTO message_search (message_id, channel_id, author_id, body, title)
SELECT m.id, m.channel_id, m.author_id,
       btrim(regexp_replace(translate(lower(m.content),
           'ÀÁÂÃÄÅàáâãäåÇçÈÉÊËèéêëÌÍÎÏìíîïÑñÒÓÔÕÖØòóôõöøÙÚÛÜùúûüÝýÿĀāĂăĄąĆćĈĉĊċČčĎďĐđĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĦħĨĩĪīĬĭĮįİıĴĵĶķĹĺĻļĽľĿŀŁłŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŦŧŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽž',
           'aaaaaaaaaaaacceeeeeeeeiiiiiiiinnoooooooooooouuuuuuuuyyyaaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiiijjkkllllllllllnnnnnnoooooorrrrrrssssssssttttttuuuuuuuuuuuuwwyyyzzzzzz'),
       '[^[:alnum:]]+', ' ', 'g')),
       CASE WHEN t.is_main = 0 AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.thread_id = m.thread_id AND o.id < m.id)
            THEN t.title ELSE '' END
FROM messages m JOIN threads t ON t.id = m.thread_id
WHERE m.deleted_at IS NULL;
