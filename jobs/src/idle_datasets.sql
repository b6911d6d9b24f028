-- Published ($3), hot ($2) datasets of the service's own tables whose
-- data nobody read (or changed, if never read) for $1 seconds, and that no
-- archive or rehydrate job is moving.
SELECT d.id
FROM datasets d
LEFT JOIN dataset_reads r ON r.dataset_id = d.id
WHERE d.storage = $2 AND d.status = $3 AND NOT d.is_registered
  AND coalesce(r.last_read_at, d.updated_at) < now() - make_interval(secs => $1)
  AND NOT EXISTS (
    SELECT 1 FROM jobs j
    WHERE j.dataset_id = d.id AND j.kind IN ('archive', 'rehydrate') AND j.status IN ('queued', 'running'))
ORDER BY coalesce(r.last_read_at, d.updated_at)
LIMIT 20
