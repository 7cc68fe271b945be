-- Counters that let a person's unread state be read without a lookup per thread beyond its
-- own rows.
--
-- A thread keeps the id of its newest message (last_message_id), set by the batch that posts it
-- as last_message_at is: the unread entry of a thread names it without a search of
-- messages_thread.
--
-- A read position keeps the mentions of its person in its thread: mention_count, every mention
-- ever written there (the message's Unit of Work adds them, creating the row with no position
-- read when there is none), and mentions_read, those up to the read message, set where
-- read_count is set. The unread mentions of a thread are mention_count - mentions_read, from
-- the row the unread read has already, as its unread messages are post_count - read_count. A
-- row with an empty last_read_message_id has read nothing.

ALTER TABLE threads ADD COLUMN last_message_id TEXT;
UPDATE threads SET last_message_id = (SELECT MAX(m.id) FROM messages m WHERE m.thread_id = threads.id);

ALTER TABLE read_states ADD COLUMN mention_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE read_states ADD COLUMN mentions_read BIGINT NOT NULL DEFAULT 0;

INSERT INTO read_states (principal_id, thread_id, channel_id, last_read_message_id, read_count, updated_at)
SELECT n.principal_id, n.thread_id, t.channel_id, '', 0, MAX(t.updated_at)
FROM mentions n JOIN threads t ON t.id = n.thread_id
WHERE NOT EXISTS (SELECT 1 FROM read_states r WHERE r.principal_id = n.principal_id AND r.thread_id = n.thread_id)
GROUP BY n.principal_id, n.thread_id, t.channel_id;

UPDATE read_states SET
    mention_count = (SELECT COUNT(*) FROM mentions n WHERE n.principal_id = read_states.principal_id AND n.thread_id = read_states.thread_id),
    mentions_read = (SELECT COUNT(*) FROM mentions n WHERE n.principal_id = read_states.principal_id AND n.thread_id = read_states.thread_id
        AND n.message_id <= read_states.last_read_message_id);
