-- The last structural check of a dataset's table (GET /datasets/{id}/validate).
ALTER TABLE datasets ADD COLUMN validation jsonb;
