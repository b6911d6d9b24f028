-- Per-user quotas (NULL: unlimited) and what counts against them: the
-- tables of a user's datasets in PostGIS, the bytes a dataset keeps in the
-- object store (archives and rasters), and uploads held for unfinished jobs.
ALTER TABLE users
    ADD COLUMN quota_storage_bytes bigint CHECK (quota_storage_bytes >= 0),
    ADD COLUMN quota_dataset_count bigint CHECK (quota_dataset_count >= 0);
ALTER TABLE datasets ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN upload_bytes bigint NOT NULL DEFAULT 0;

-- One definition of a user's usage, for the quota check and the account
-- view alike. Registered tables are the operator's, not the user's.
CREATE FUNCTION catalog_usage(owner uuid, OUT bytes_used bigint, OUT dataset_count bigint)
LANGUAGE sql STABLE AS $$
    SELECT
        coalesce((SELECT sum(coalesce(pg_total_relation_size(to_regclass(format('%I.%I', d.schema_name, d.table_name))), 0)
                             + d.stored_bytes)
                  FROM datasets d WHERE d.created_by = owner AND NOT d.is_registered), 0)::bigint
        + coalesce((SELECT sum(j.upload_bytes) FROM jobs j
                    WHERE j.created_by = owner AND j.status IN ('queued', 'running')), 0)::bigint,
        (SELECT count(*) FROM datasets d WHERE d.created_by = owner)
$$;
