-- What an agent says about a failed run (its finish call's error.message): the thread's readers
-- see it next to the reason's code. NULL when the agent said nothing.

ALTER TABLE runs ADD COLUMN error_message TEXT;
