-- The log keeps the events of a message's content by reference (storage/eventlog.go): a
-- message.created or message.updated row holds its seq, type, subject (the message), actor and
-- time, with an empty payload and no scope, and the reader of the log reads the message as it is
-- now in their place. The content is stored once, in messages, instead of once more per event.
-- The rows logged before this version are emptied the same way, as the table is made again with
-- seq as its rowid (INTEGER PRIMARY KEY): a BIGINT key was a second b-tree beside the rowid's.
CREATE TABLE event_log_by_reference (
    seq          INTEGER PRIMARY KEY,
    type         TEXT NOT NULL,
    space_id     TEXT,
    channel_id   TEXT,
    thread_id    TEXT,
    principal_id TEXT,
    subject_id   TEXT,
    actor_id     TEXT,
    payload      TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
INSERT INTO event_log_by_reference (seq, type, space_id, channel_id, thread_id, principal_id, subject_id, actor_id, payload, created_at)
SELECT seq, type,
       CASE WHEN type IN ('message.created', 'message.updated') THEN NULL ELSE space_id END,
       CASE WHEN type IN ('message.created', 'message.updated') THEN NULL ELSE channel_id END,
       CASE WHEN type IN ('message.created', 'message.updated') THEN NULL ELSE thread_id END,
       CASE WHEN type IN ('message.created', 'message.updated') THEN NULL ELSE principal_id END,
       subject_id, actor_id,
       CASE WHEN type IN ('message.created', 'message.updated') THEN '' ELSE payload END,
       created_at
FROM event_log ORDER BY seq;
DROP TABLE event_log;
ALTER TABLE event_log_by_reference RENAME TO event_log;

-- Redaction and the lookups by subject only ever look at the events that keep a payload.
CREATE INDEX event_log_subject ON event_log (subject_id) WHERE payload <> '';
