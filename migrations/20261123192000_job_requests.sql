-- Requests that queued a job, by their owner's key: an `Idempotency-Key`
-- header, or a connector push's resource and version. The same key again
-- answers the same job instead of queueing another.
CREATE TABLE job_requests (
    owner uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key text NOT NULL,
    job_id uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, key)
);
CREATE INDEX job_requests_job_idx ON job_requests (job_id);
