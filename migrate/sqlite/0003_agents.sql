-- Agents (see docs/runs.md). An agent is a principal of kind 'agent': identity owns its
-- row in principals (handle, display name, status) and its API tokens; this table holds what only
-- agents have. A channel may name one agent as its operator (invoked by every new thread there):
-- channels.operator_id, NULL for none. It points to agents, not to principals, so that nothing
-- but an agent can operate a channel.

CREATE TABLE agents (
    principal_id TEXT PRIMARY KEY REFERENCES principals (id),
    description  TEXT NOT NULL DEFAULT '',
    created_by   TEXT NOT NULL REFERENCES principals (id),
    created_at   TEXT NOT NULL
);

ALTER TABLE channels ADD COLUMN operator_id TEXT REFERENCES agents (principal_id);
