-- When each agent's consumer last showed a sign of life (for runs' stall check): every save of
-- its cursor (an ack over REST or the gateway, the first poll or connection of an agent that
-- never consumed) writes seen_at, even when the cursor does not move, which updated_at does
-- not. runs.stall_check reads it to tell interrupted (no consumer within agent.stall_timeout)
-- from stale (a consumer, but no progress of the run). The table is shared by every node, so the
-- answer does not depend on which node holds the connection. Rows that exist take their
-- updated_at: the last sign of life known.

ALTER TABLE agent_consumers ADD COLUMN seen_at TEXT COLLATE "C" NOT NULL DEFAULT '';
UPDATE agent_consumers SET seen_at = updated_at;
