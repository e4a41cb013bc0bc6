-- A run waiting for the client, written down by the node that ran it (JSON, opaque to the
-- store): set with the `awaiting` status it waits in, cleared by the next status. A run that has
-- one outlives its node (a restart, a crash) and goes on wherever its answer arrives.
ALTER TABLE runs ADD COLUMN checkpoint TEXT;
