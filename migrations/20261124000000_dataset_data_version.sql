-- A counter every write to a dataset's data rolls (feature edits, new
-- columns, reuploads, replaces), so cached tiles keyed by it are never
-- stale. The publication counter is separate: it retires signed links.
ALTER TABLE datasets ADD COLUMN data_version bigint NOT NULL DEFAULT 1;
