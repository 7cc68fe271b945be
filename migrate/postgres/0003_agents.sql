-- Agents: the same table and column as migrate/sqlite/0003_agents.sql (a test holds it), ids and
-- times COLLATE "C" as in 0001. An agent is a principal of kind 'agent': identity owns its row in
-- principals and its API tokens; this table holds what only agents have. channels.operator_id
-- names the one agent that operates a channel (NULL for none); it points to agents, so that
-- nothing but an agent can operate a channel.

CREATE TABLE agents (
    principal_id TEXT COLLATE "C" PRIMARY KEY REFERENCES principals (id),
    description  TEXT NOT NULL DEFAULT '',
    created_by   TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    created_at   TEXT COLLATE "C" NOT NULL
);

ALTER TABLE channels ADD COLUMN operator_id TEXT COLLATE "C" REFERENCES agents (principal_id);
