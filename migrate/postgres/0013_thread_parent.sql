-- A thread under a message of a channel's main thread: the same column and index as
-- migrate/sqlite/0013_thread_parent.sql (a test holds it), which says what they hold and why
-- the column has no foreign key.

ALTER TABLE threads ADD COLUMN parent_message_id TEXT COLLATE "C";

CREATE UNIQUE INDEX threads_parent_message ON threads (parent_message_id);
