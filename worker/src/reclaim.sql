-- The jobs of workers that stopped beating for $2 seconds (killed, their
-- host lost), back in the queue: the queue task pending again and
-- unlocked, its attempt counted (as the queue's own reclaim counts it),
-- the job queued again, and the workers told at once, as for a new task,
-- instead of at their next poll. A task locked less than $2 seconds ago
-- stays whatever its worker's beat says: a worker registers with its own
-- clock's second, and beats with the database's only after that.
WITH stale AS (
  SELECT t.id
  FROM apalis.jobs t
  JOIN apalis.workers w ON w.id = t.lock_by
  WHERE t.job_type = $1
    AND t.status IN ('Running', 'Queued')
    AND w.last_seen < now() - make_interval(secs => $2)
    AND t.lock_at < now() - make_interval(secs => $2)
  FOR UPDATE OF t SKIP LOCKED
),
released AS (
  UPDATE apalis.jobs t
  SET status = 'Pending', lock_by = NULL, lock_at = NULL, done_at = NULL, attempts = t.attempts + 1,
      last_result = '{"Err": "Re-enqueued: its worker stopped beating."}'
  FROM stale
  WHERE t.id = stale.id
  RETURNING t.id, t.job_type
),
queued AS (
  UPDATE jobs
  SET status = 'queued', step = NULL, updated_at = clock_timestamp()
  WHERE queue_task_id IN (SELECT id FROM released) AND status = 'running'
)
SELECT released.id
FROM released,
  pg_notify('apalis::job::insert', json_build_object('job_type', released.job_type, 'id', released.id)::text)
