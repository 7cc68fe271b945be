-- Slash commands, handoff depth and budgets of agents: the same tables and columns as
-- migrate/sqlite/0022_commands_budgets.sql (a test holds it), which says what they hold; ids and
-- times COLLATE "C" as in 0001.

CREATE TABLE agent_commands (
    agent_id    TEXT COLLATE "C" NOT NULL REFERENCES agents (principal_id),
    name        TEXT COLLATE "C" NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    args_hint   TEXT NOT NULL DEFAULT '',
    position    INTEGER NOT NULL,
    PRIMARY KEY (agent_id, name)
);
CREATE INDEX agent_commands_name ON agent_commands (name);

ALTER TABLE runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN output_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cost_micros BIGINT NOT NULL DEFAULT 0;

CREATE TABLE agent_budgets (
    agent_id        TEXT COLLATE "C" PRIMARY KEY REFERENCES agents (principal_id),
    period          TEXT NOT NULL CHECK (period IN ('day', 'month')),
    max_tokens      BIGINT,
    max_cost_micros BIGINT,
    updated_by      TEXT COLLATE "C" NOT NULL REFERENCES principals (id),
    updated_at      TEXT COLLATE "C" NOT NULL
);

CREATE TABLE agent_usage (
    agent_id      TEXT COLLATE "C" NOT NULL REFERENCES agents (principal_id),
    period        TEXT NOT NULL CHECK (period IN ('day', 'month')),
    period_start  TEXT COLLATE "C" NOT NULL,
    input_tokens  BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cost_micros   BIGINT NOT NULL DEFAULT 0,
    warned_at     TEXT COLLATE "C",
    PRIMARY KEY (agent_id, period, period_start)
);
