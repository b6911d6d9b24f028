-- Finished jobs' run times by kind, counted at or under each bound of $1
-- (rising), with their sum and count: a histogram of every job so far.
WITH durations AS (
  SELECT kind, extract(epoch FROM finished_at - started_at)::float8 AS seconds
  FROM jobs
  WHERE status IN ('succeeded', 'failed') AND started_at IS NOT NULL AND finished_at IS NOT NULL
)
SELECT kind,
       array_agg(n ORDER BY upper) AS at_or_under,
       min(total) AS count,
       min(seconds_sum) AS sum
FROM (
  SELECT d.kind, b.upper, count(*) FILTER (WHERE d.seconds <= b.upper) AS n,
         count(*) AS total, coalesce(sum(d.seconds), 0) AS seconds_sum
  FROM durations d CROSS JOIN unnest($1::float8[]) AS b(upper)
  GROUP BY d.kind, b.upper
) per_bound
GROUP BY kind
