-- A raster's file counts against its owner's quota, as the quota rule
-- always said: rasters stored before the worker recorded its size get it
-- from their description.
UPDATE datasets SET stored_bytes = (raster ->> 'size_bytes')::bigint
WHERE kind = 'raster' AND stored_bytes = 0;
