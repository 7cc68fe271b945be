-- Runs: the same table and columns as migrate/sqlite/0005_runs.sql (a test holds it), ids, codes
-- and times COLLATE "C" as in 0001. That file says what each column holds, why
-- messages.trigger_state has no CHECK and why messages.run_id has no foreign key (runs points to
-- its trigger message; a key back would make a cycle that storage.Copy cannot insert).

CREATE TABLE runs (
    id                  TEXT COLLATE "C" PRIMARY KEY,
    agent_id            TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    thread_id           TEXT COLLATE "C" NOT NULL REFERENCES threads (id),
    channel_id          TEXT COLLATE "C" NOT NULL REFERENCES channels (id),
    space_id            TEXT COLLATE "C" NOT NULL REFERENCES spaces (id),
    trigger_message_id  TEXT COLLATE "C" REFERENCES messages (id),
    invoked_by          TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    status              TEXT COLLATE "C" NOT NULL CHECK (status IN ('queued', 'running', 'waiting_input', 'succeeded', 'failed', 'cancelled')),
    reason              TEXT COLLATE "C",
    version             INTEGER NOT NULL DEFAULT 0,
    document            TEXT NOT NULL,
    cancel_requested_at TEXT COLLATE "C",
    created_at          TEXT COLLATE "C" NOT NULL,
    started_at          TEXT COLLATE "C",
    ended_at            TEXT COLLATE "C",
    last_activity_at    TEXT COLLATE "C" NOT NULL,
    updated_at          TEXT COLLATE "C" NOT NULL,
    UNIQUE (trigger_message_id, agent_id)
);
CREATE INDEX runs_thread ON runs (thread_id, id);
CREATE INDEX runs_agent_status ON runs (agent_id, status);

ALTER TABLE messages ADD COLUMN run_id TEXT COLLATE "C";
ALTER TABLE messages ADD COLUMN trigger_state TEXT COLLATE "C";
