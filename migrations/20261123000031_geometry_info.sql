-- What ingest did to the geometries of a dataset: which curve types of the
-- source were stored as straight segments (every output serves only
-- linear geometries).
ALTER TABLE datasets ADD COLUMN geometry_info jsonb NOT NULL DEFAULT '{}';
