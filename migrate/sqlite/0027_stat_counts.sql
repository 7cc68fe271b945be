-- The overview's counts of messages and runs, kept with the writes (storage/stats.go): a total
-- per kind, and a count per kind and hour (the hour as the first 13 characters of the fixed-width
-- time, 2006-01-02T15). Counting them at read time cost a COUNT(*) over the table, and the
-- hourly chart an index on created_at of each, the biggest part of what that index was for.
CREATE TABLE stat_totals (
    name  TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
CREATE TABLE stat_hours (
    hour  TEXT NOT NULL,
    name  TEXT NOT NULL,
    value BIGINT NOT NULL,
    PRIMARY KEY (hour, name)
);

INSERT INTO stat_totals (name, value) SELECT 'messages', COUNT(*) FROM messages;
INSERT INTO stat_totals (name, value) SELECT 'runs', COUNT(*) FROM runs;
INSERT INTO stat_hours (hour, name, value)
SELECT substr(created_at, 1, 13), 'messages', COUNT(*) FROM messages GROUP BY substr(created_at, 1, 13);
INSERT INTO stat_hours (hour, name, value)
SELECT substr(created_at, 1, 13), 'runs', COUNT(*) FROM runs GROUP BY substr(created_at, 1, 13);

DROP INDEX messages_created;
