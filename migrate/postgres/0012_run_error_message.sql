-- What an agent says about a failed run: the same column as
-- migrate/sqlite/0012_run_error_message.sql (a test holds it), which says what it holds.

ALTER TABLE runs ADD COLUMN error_message TEXT;
