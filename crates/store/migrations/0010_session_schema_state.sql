-- Where a session's conversation stands in its agent's communication schema (seed 004's state,
-- e.g. `idle`, or `done` once a one-shot agent has answered): written with the output of the
-- run that moved it, read by the next run to start from. NULL: the schema's initial state.
ALTER TABLE sessions ADD COLUMN schema_state TEXT;
