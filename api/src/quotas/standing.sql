-- A user's caps, usage, and unfinished jobs that may still create a
-- dataset (ingest, URL download, connector, service import).
SELECT u.quota_storage_bytes AS storage_cap,
       u.quota_dataset_count AS count_cap,
       usage.bytes_used,
       usage.dataset_count,
       (SELECT count(*) FROM jobs j
        WHERE j.created_by = u.id AND j.status IN ('queued', 'running')
          AND j.kind IN ('ingest', 'url_download', 'connector', 'service_import')) AS pending_datasets
FROM users u, catalog_usage(u.id) AS usage
WHERE u.id = $1
