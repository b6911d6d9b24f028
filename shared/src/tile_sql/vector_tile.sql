-- One vector tile of a dataset: $1, $2, $3 the tile's z, x and y, $4 the
-- layer name. Features are picked by the index on the tile's buffered
-- area in the storage CRS, then clipped to the tile in Web Mercator.
-- Below the dataset's complete zoom, {thinning} keeps the features drawn
-- from this zoom on, by their own partial index, and lines and polygons
-- are simplified to half a pixel (as they are when that leaves nothing:
-- an archipelago of islands each under a pixel).
SELECT ST_AsMVT(tile.*, $4, {extent}, '__mvt_geom', '__mvt_id') FROM (
  SELECT t.{key}::bigint AS __mvt_id,
         {mvt_geometry} AS __mvt_geom
         {attributes}
  FROM {table} t
  WHERE t.{geom} && {area}{thinning}
  {order}LIMIT {max_features}
) tile
WHERE tile.__mvt_geom IS NOT NULL
