-- When a dataset's data was last read, for ARCHIVE_AFTER_IDLE_DAYS. Kept
-- apart from `datasets` so recording a read announces no dataset change.
CREATE TABLE dataset_reads (
    dataset_id uuid PRIMARY KEY REFERENCES datasets (id) ON DELETE CASCADE,
    last_read_at timestamptz NOT NULL
);
