-- Unread counters: the same columns and backfill as migrate/sqlite/0019_unread_counters.sql (a
-- test holds it), which says what they hold.

ALTER TABLE threads ADD COLUMN last_message_id TEXT COLLATE "C";
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
