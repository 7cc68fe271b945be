-- What a message did for each agent it concerned: one JSON array of {agent_id, state, run_id?}
-- entries in messages.triggers (NULL: it concerned no agent, or it was posted before this
-- column). trigger_state stays the summary; this keeps the refusal of every agent that was not
-- invoked, so that none is hidden behind another agent's run. It is written once, with the
-- message, and always read whole with it.

ALTER TABLE messages ADD COLUMN triggers TEXT;
