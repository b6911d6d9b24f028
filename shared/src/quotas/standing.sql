-- A user's caps, usage, and the datasets unfinished jobs may still create
-- (ingest, URL download, connector, service import): as many as a job
-- reserved once it read its source (one before), less those it already
-- published, which `dataset_count` holds. $2: a job to leave out (the
-- one asking), or null.
SELECT u.quota_storage_bytes AS storage_cap,
       u.quota_dataset_count AS count_cap,
       usage.bytes_used,
       usage.dataset_count,
       (SELECT coalesce(sum(greatest(coalesce(j.planned_datasets, 1) - cardinality(j.dataset_ids), 0)), 0)::bigint
        FROM jobs j
        WHERE j.created_by = u.id AND j.status IN ('queued', 'running')
          AND j.kind IN ('ingest', 'url_download', 'connector', 'service_import')
          AND j.id IS DISTINCT FROM $2) AS pending_datasets
FROM users u, catalog_usage(u.id) AS usage
WHERE u.id = $1
