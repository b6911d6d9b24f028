-- Finished jobs whose uploaded source is still in the object store, for
-- the workers' sweep that removes it once the retention has passed.
ALTER TABLE jobs ADD COLUMN upload_removed boolean NOT NULL DEFAULT false;
CREATE INDEX jobs_uploads_to_remove_idx ON jobs (finished_at) WHERE NOT upload_removed;
