-- Tasks that came due in the last two seconds (retries that waited out
-- their backoff), announced to the workers as a new task is: nothing else
-- wakes an idle queue loop for them.
SELECT count(pg_notify('apalis::job::insert', json_build_object('job_type', t.job_type, 'id', t.id)::text))
FROM apalis.jobs t
WHERE t.job_type = $1 AND t.status = 'Pending'
  AND t.run_at <= now() AND t.run_at > now() - interval '2 seconds'
