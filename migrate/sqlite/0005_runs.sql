-- Runs (see docs/runs.md): what an agent does with one invocation. A run is made queued, in the Unit of
-- Work of the message that invoked the agent, and ends succeeded, failed or cancelled; status
-- holds its state (the six of app/runs), reason why it failed or was cancelled, document the
-- latest run document (JSON of runs.Document) and version that document's version. One run per
-- agent per message: UNIQUE (trigger_message_id, agent_id).
--
-- messages.run_id links an agent's answer to its run; messages.trigger_state says what a message
-- that concerned an agent triggered ("triggered", or why not). trigger_state has no CHECK: its
-- codes may grow, and SQLite cannot change a constraint without rebuilding the table. run_id
-- has no foreign key: runs.trigger_message_id points to messages and a second key back would
-- make a cycle that no table order can insert (storage.Copy inserts table by table under
-- immediate foreign keys). The run's cause is the link that must hold; the answer's run_id is
-- written by runs in the Unit of Work that loaded the run, and runs are never deleted.

CREATE TABLE runs (
    id                  TEXT PRIMARY KEY,
    agent_id            TEXT NOT NULL REFERENCES principals (id),
    thread_id           TEXT NOT NULL REFERENCES threads (id),
    channel_id          TEXT NOT NULL REFERENCES channels (id),
    space_id            TEXT NOT NULL REFERENCES spaces (id),
    trigger_message_id  TEXT REFERENCES messages (id),
    invoked_by          TEXT NOT NULL REFERENCES principals (id),
    status              TEXT NOT NULL CHECK (status IN ('queued', 'running', 'waiting_input', 'succeeded', 'failed', 'cancelled')),
    reason              TEXT,
    version             INTEGER NOT NULL DEFAULT 0,
    document            TEXT NOT NULL,
    cancel_requested_at TEXT,
    created_at          TEXT NOT NULL,
    started_at          TEXT,
    ended_at            TEXT,
    last_activity_at    TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    UNIQUE (trigger_message_id, agent_id)
);
CREATE INDEX runs_thread ON runs (thread_id, id);
CREATE INDEX runs_agent_status ON runs (agent_id, status);

ALTER TABLE messages ADD COLUMN run_id TEXT;
ALTER TABLE messages ADD COLUMN trigger_state TEXT;
