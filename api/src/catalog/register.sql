-- A table registered in place: its rows stay where they are, the catalog
-- row points at them ($14 is both the SRID and the source SRID).
INSERT INTO datasets (id, title, summary, schema_name, table_name, key_column, geometry_column, geometry_type,
                      srid, source_srid, extent_bbox, feature_count, column_info, visibility, is_registered,
                      source_format, created_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $14, $14, $9, $10, $11, $12, true, 'postgis', $13)
