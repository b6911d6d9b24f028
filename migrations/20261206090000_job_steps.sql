-- The steps a job went through, each with when it began, for its page:
-- `step` holds only the latest.
ALTER TABLE jobs ADD COLUMN steps jsonb NOT NULL DEFAULT '[]';
