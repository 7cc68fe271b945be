-- The log keeps the events of a message's content by reference (storage/eventlog.go): a
-- message.created or message.updated row holds its seq, type, subject (the message), actor and
-- time, with an empty payload and no scope, and the reader of the log reads the message as it is
-- now in their place. The content is stored once, in messages, instead of once more per event.
-- The rows logged before this version are emptied the same way.
UPDATE event_log SET payload = '', space_id = NULL, channel_id = NULL, thread_id = NULL, principal_id = NULL
WHERE type IN ('message.created', 'message.updated');

-- Redaction and the lookups by subject only ever look at the events that keep a payload.
DROP INDEX event_log_subject;
CREATE INDEX event_log_subject ON event_log (subject_id) WHERE payload <> '';
