-- The durable cursor of each agent's consumer (see docs/gateway.md, Agents: consumers): the seq up to which the agent
-- has acknowledged (ack {seq}, or POST /api/v1/agents/me/ack) what the gateway or the REST poll
-- delivered to it. Delivery starts after it, so an event the agent did not acknowledge comes
-- again after a reconnect or a crash: at least once.

CREATE TABLE agent_consumers (
    agent_id   TEXT PRIMARY KEY REFERENCES principals (id),
    acked_seq  BIGINT NOT NULL CHECK (acked_seq >= 0),
    updated_at TEXT NOT NULL
);
