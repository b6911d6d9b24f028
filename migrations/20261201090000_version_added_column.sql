-- A column added to a dataset's table (`POST /api/layers/{id}/columns`)
-- makes a version too, which names the column: restoring an earlier
-- version of the same era leaves it out, so the version comes back with
-- exactly the columns it had.
ALTER TABLE dataset_versions ADD COLUMN added_column text;
