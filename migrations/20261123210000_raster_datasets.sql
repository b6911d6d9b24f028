-- Raster datasets: a Cloud-Optimized GeoTIFF in the object store instead
-- of a table. Their rows keep a unique placeholder in schema `raster`
-- (no such schema exists; nothing reads a raster's "table"), no feature
-- count, and what the record shows of the raster.
ALTER TABLE datasets
    ADD COLUMN kind text NOT NULL DEFAULT 'vector' CHECK (kind IN ('vector', 'raster')),
    ADD COLUMN raster jsonb,
    ADD COLUMN raster_object text,
    ALTER COLUMN feature_count DROP NOT NULL,
    ADD CONSTRAINT datasets_raster_shape CHECK (
        (kind = 'vector' AND raster IS NULL AND raster_object IS NULL AND feature_count IS NOT NULL)
        OR (kind = 'raster' AND raster IS NOT NULL AND raster_object IS NOT NULL AND schema_name = 'raster')
    );
