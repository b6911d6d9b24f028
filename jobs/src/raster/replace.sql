-- A raster dataset's record switched to its new file: the description,
-- extent, CRS and size of the new file; a new data version, so cached
-- tiles of the old file are never served again. The publication version
-- stays: signed links keep working.
UPDATE datasets
SET srid = coalesce($2, 0), source_srid = $2, extent_bbox = $3, raster = $4, raster_object = $5,
    source_filename = $6, stored_bytes = $7, data_version = data_version + 1, updated_at = now()
WHERE id = $1
