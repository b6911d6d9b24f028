-- A draining worker's unfinished jobs, handed back to the queue at once
-- (other workers poll every second) instead of after its heartbeats stop:
-- the queue task pending again and unlocked, the job queued again, with
-- no attempt counted against it.
WITH released AS (
  UPDATE apalis.jobs
  SET status = 'Pending', lock_by = NULL, lock_at = NULL, done_at = NULL, run_at = now(),
      last_result = '{"Err": "Handed back by a draining worker."}'
  WHERE lock_by = $1 AND status IN ('Running', 'Queued')
  RETURNING id
)
UPDATE jobs
SET status = 'queued', step = NULL, updated_at = clock_timestamp()
WHERE queue_task_id IN (SELECT id FROM released) AND status = 'running'
RETURNING id
