-- SQLite's full-text index becomes contentless in this version (its own 0028); PostgreSQL's
-- index is a table of its own that this version leaves as it is.
SELECT 1;
