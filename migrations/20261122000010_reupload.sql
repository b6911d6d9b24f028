-- What a job reports besides its status (a reupload preview).
ALTER TABLE jobs ADD COLUMN result jsonb;
