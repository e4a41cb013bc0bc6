-- The seq through which a run's events may have reached a client before they were stored
-- (deltas are shown ahead of their commit). A run cut by a crash ends with the seq after it,
-- so no seq a client saw is ever given again.
ALTER TABLE runs ADD COLUMN seq_reserved BIGINT NOT NULL DEFAULT 0;
