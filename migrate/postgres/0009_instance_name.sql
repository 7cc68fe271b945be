-- For the owner's console. The instance gets a name, which the console shows in its top bar
-- and page titles and GET /api/v1/instance answers; an instance made before keeps the default.
-- The overview counts messages and runs per hour over the last day: created_at indexes let both
-- engines answer that range from the index instead of reading the tables.

ALTER TABLE instance ADD COLUMN name TEXT NOT NULL DEFAULT 'bothy';

CREATE INDEX messages_created ON messages (created_at);
CREATE INDEX runs_created ON runs (created_at);
