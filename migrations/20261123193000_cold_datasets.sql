-- Cold datasets: a table archived into the object store ('cold') or in
-- PostGIS ('hot'), the manifest that rebuilds it, and at most one archive
-- and one rehydrate job per dataset at a time, however many ask.
ALTER TABLE datasets
    ADD COLUMN storage text NOT NULL DEFAULT 'hot' CHECK (storage IN ('hot', 'cold')),
    ADD COLUMN archive jsonb;
CREATE UNIQUE INDEX jobs_one_move_per_dataset_idx ON jobs (kind, dataset_id)
    WHERE kind IN ('archive', 'rehydrate') AND status IN ('queued', 'running');
