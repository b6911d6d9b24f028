-- A raster dataset's row: no table (a unique placeholder in schema
-- `raster`), no features; its extent in EPSG:4326, its description, and
-- the stored file's bytes, which count against its owner's quota.
INSERT INTO datasets (id, title, summary, schema_name, table_name, geometry_type, srid, source_srid,
                      extent_bbox, feature_count, visibility, source_format, source_filename, source_layer,
                      job_id, created_by, kind, raster, raster_object, stored_bytes)
VALUES ($1, $2, $3, 'raster', $1::text, NULL, coalesce($4, 0), $4,
        $5, NULL, $6, 'geotiff', $12, $7,
        $8, $9, $14, $10, $11, $13)
