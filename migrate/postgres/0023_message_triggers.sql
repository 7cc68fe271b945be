-- What a message did for each agent it concerned: the same column as
-- migrate/sqlite/0023_message_triggers.sql (a test holds it), which says what it holds and why.

ALTER TABLE messages ADD COLUMN triggers TEXT COLLATE "C";
