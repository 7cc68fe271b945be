-- Slash commands, handoff depth and budgets of agents (see docs/runs.md).
--
-- agent_commands is the set of slash commands an agent declares (it replaces the whole set at
-- once); position keeps the order it gave. agent_commands_name serves the trigger's read of the
-- agents that hold a command's name.
--
-- runs.depth counts the agent-to-agent handoffs that led to a run: 0 for a person's invocation,
-- the depth of run R plus one for a run an agent's answer in R invoked. runs.input_tokens,
-- output_tokens and cost_micros are the usage its agent reported, cumulative (cost in millionths
-- of a US dollar, so that both engines sum it exactly).
--
-- agent_budgets is an owner's cap on an agent per UTC day or month (NULL: no cap of that kind);
-- agent_usage is the counter of an agent per period (period 'day' or 'month', period_start
-- '2026-03-01' or '2026-03'), updated by each patch that reports usage, and warned_at when the
-- owners were warned at 80 % of the cap in that period.

CREATE TABLE agent_commands (
    agent_id    TEXT NOT NULL REFERENCES agents (principal_id),
    name        TEXT NOT NULL,
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
    agent_id        TEXT PRIMARY KEY REFERENCES agents (principal_id),
    period          TEXT NOT NULL CHECK (period IN ('day', 'month')),
    max_tokens      BIGINT,
    max_cost_micros BIGINT,
    updated_by      TEXT NOT NULL REFERENCES principals (id),
    updated_at      TEXT NOT NULL
);

CREATE TABLE agent_usage (
    agent_id      TEXT NOT NULL REFERENCES agents (principal_id),
    period        TEXT NOT NULL CHECK (period IN ('day', 'month')),
    period_start  TEXT NOT NULL,
    input_tokens  BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cost_micros   BIGINT NOT NULL DEFAULT 0,
    warned_at     TEXT,
    PRIMARY KEY (agent_id, period, period_start)
);
