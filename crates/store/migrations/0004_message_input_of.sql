-- The run whose start a message was the input of. A finished run's input (A2A's task history)
-- is read from its session's messages rather than kept in memory or stored twice.
ALTER TABLE messages ADD COLUMN input_of TEXT;
