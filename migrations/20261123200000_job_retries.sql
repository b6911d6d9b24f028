-- A job whose provider failed for a while waits in the queue for its next
-- run: when that is, and why the last run did not succeed.
ALTER TABLE jobs ADD COLUMN next_attempt_at timestamptz, ADD COLUMN last_error text;
