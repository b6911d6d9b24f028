-- Tasks that came due since the last round ($2; every due task on the
-- first round, $2 null): retries that waited out their backoff, announced
-- to the workers as a new task is, since nothing else wakes an idle queue
-- loop for them. Returns the time this round covered up to.
SELECT now() AS until,
  (SELECT count(pg_notify('apalis::job::insert', json_build_object('job_type', t.job_type, 'id', t.id)::text))
   FROM apalis.jobs t
   WHERE t.job_type = $1 AND t.status = 'Pending'
     AND t.run_at <= now() AND ($2::timestamptz IS NULL OR t.run_at > $2)) AS woken
