-- A dataset's time axis: the column `datetime` filters its items on (set
-- by PATCH or detected at ingest) and the first and last of its values,
-- the collection's temporal extent.
ALTER TABLE datasets
    ADD COLUMN temporal_column text,
    ADD COLUMN temporal_extent timestamptz[]
        CHECK (temporal_extent IS NULL OR cardinality(temporal_extent) = 2);
