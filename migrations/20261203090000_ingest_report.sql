-- What a job that loads rows did to each of them (`docs/decisions.md`,
-- Ingest report and quarantine): the report lives as long as its job.
CREATE TABLE job_reports (
    job_id uuid PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    report jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Rows an ingest kept aside, one table per era (the version a load,
-- reupload or restore made), in a schema of their own that no sandbox
-- role reads; the table goes with its era.
CREATE SCHEMA IF NOT EXISTS quarantine;
ALTER TABLE dataset_eras
    ADD COLUMN quarantine_table text,
    ADD COLUMN quarantined_count bigint NOT NULL DEFAULT 0 CHECK (quarantined_count >= 0);

-- Quarantined rows count in their owner's storage, as kept versions do.
CREATE OR REPLACE FUNCTION catalog_usage(owner uuid, OUT bytes_used bigint, OUT dataset_count bigint)
LANGUAGE sql STABLE AS $$
    SELECT
        coalesce((SELECT sum(coalesce(pg_total_relation_size(to_regclass(format('%I.%I', d.schema_name, d.table_name))), 0)
                             + d.stored_bytes)
                  FROM datasets d WHERE d.created_by = owner AND NOT d.is_registered), 0)::bigint
        + coalesce((SELECT sum(coalesce(pg_total_relation_size(to_regclass(format('history.%I', e.table_name))), 0))
                    FROM dataset_eras e JOIN datasets d ON d.id = e.dataset_id
                    WHERE d.created_by = owner AND e.table_name IS NOT NULL), 0)::bigint
        + coalesce((SELECT sum(coalesce(pg_total_relation_size(to_regclass(format('quarantine.%I', e.quarantine_table))), 0))
                    FROM dataset_eras e JOIN datasets d ON d.id = e.dataset_id
                    WHERE d.created_by = owner AND e.quarantine_table IS NOT NULL), 0)::bigint
        + coalesce((SELECT sum(pg_column_size(c.before) + pg_column_size(c.after) + 64)
                    FROM feature_changes c JOIN datasets d ON d.id = c.dataset_id
                    WHERE d.created_by = owner), 0)::bigint
        + coalesce((SELECT sum(j.upload_bytes) FROM jobs j
                    WHERE j.created_by = owner AND j.status IN ('queued', 'running')), 0)::bigint,
        (SELECT count(*) FROM datasets d WHERE d.created_by = owner)
$$;

-- The rows the current era's load kept aside, as the dataset record says.
ALTER TABLE datasets
    ADD COLUMN quarantined_count bigint NOT NULL DEFAULT 0 CHECK (quarantined_count >= 0);
